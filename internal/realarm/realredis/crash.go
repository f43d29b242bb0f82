package realredis

import (
	"errors"
	"fmt"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

// crash kills node n (SIGKILL); crashes of one node combine, as in the
// simulator.
func (w *world) crash(n int) { w.crashAs(n, string(w.cfg.Nodes[n].Persistence)) }

// crashAs is crash with the event's detail given (the simulator says
// "failover" for a failover's crash).
func (w *world) crashAs(n int, detail string) {
	w.mu.Lock()
	w.downs[n]++
	first := w.downs[n] == 1
	if first {
		w.stats.Crashes++
		w.downSince[n] = w.now()
		w.addLocked(sim.Event{T: w.downSince[n], Proc: w.servers[n].name, Kind: event.KindCrash, Detail: detail})
	}
	w.mu.Unlock()
	if first {
		w.servers[n].crash()
	}
}

func (w *world) crashEnded(n int) {
	w.mu.Lock()
	if w.downs[n] > 0 {
		w.downs[n]--
	}
	restart := w.downs[n] == 0 && w.servers[n].isDown()
	w.mu.Unlock()
	if !restart {
		return
	}
	if err := w.servers[n].start(w.ctx); err != nil {
		if errors.Is(err, errRunning) {
			return
		}
		if w.ctx.Err() == nil {
			w.harnessError(fmt.Errorf("restart %s: %w", w.servers[n].name, err))
		}
		return
	}
	w.mu.Lock()
	now := w.now()
	w.addLocked(sim.Event{T: now, Proc: w.servers[n].name, Kind: event.KindRestart,
		Detail: fmt.Sprintf("serving again %v after the kill", time.Duration(now-w.downSince[n]).Round(time.Millisecond))})
	w.mu.Unlock()
}

// failover carries out failover fault i and returns what its end does:
// in a cluster world each named shard's primary crashes
// (clusterFailover); otherwise the primary Sentinel names crashes, and
// Sentinel's promotion is awaited (watchSentinel).
func (w *world) failover(i int, f faults.Fault) func() {
	if w.coord != nil { // its Redis nodes are plain and idle (consensus.go)
		w.noteNodeFault(i, f, []int{0})
		w.crashAs(0, "failover")
		return func() { w.crashEnded(0) }
	}
	if w.clus != nil {
		return w.clusterFailover(i, f)
	}
	n, err := w.currentPrimary()
	if err != nil {
		w.harnessError(fmt.Errorf("fault %d: which node is the primary: %w", i+1, err))
		return nil
	}
	want := w.liveKeys(n) // effects.go: what the promoted replica must hold
	w.noteNodeFault(i, f, []int{n})
	w.mu.Lock()
	w.failing = append(w.failing, pendingFailover{fault: i, want: want})
	w.mu.Unlock()
	w.crashAs(n, "failover")
	return func() {
		w.crashEnded(n)
		w.failoverEnded(i) // effects.go: no promotion by now is none
	}
}
