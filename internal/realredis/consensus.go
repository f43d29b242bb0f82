package realredis

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/realcoord"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// ConsensusTTL is the lease a design on a real coordination service runs
// with unless told otherwise: etcd leases are whole seconds (1 s at
// least), and a ZooKeeper session of 500 ms is within reach of the JVM's
// own hiccups on a busy 2-core machine.
const ConsensusTTL = time.Second

// MemberClockNote is what a real run reports for a clock fault on a real
// coordination service's member: not carried out. Measured: libfaketime
// 0.9.10 does reach Java 17's wall clock (java -Xlog:...:time under
// faketime '+2h' prints a time 2 h ahead), but jumping a running member's
// clock was not built; both services time sessions and leases on a
// monotonic clock (ZooKeeper: System.nanoTime; etcd: Go's monotonic
// reading), so a wall-clock step is expected to change nothing.
const MemberClockNote = "member clock faults not carried out on the real coordination service (sessions and leases run on monotonic clocks)"

// coord is a world's real coordination service (a design with Info.Real).
type coord struct {
	ens        *realcoord.Ensemble
	downs      map[int]int
	since      map[int]int64
	gone       []goneNode // nodes or keys the session watcher saw go (consensus_watch.go), at most maxGone
	goneCapped bool       // the watcher saw more than maxGone go
}

// consensusKind is the real service lock runs on ("" for a Redis design).
func consensusKind(info locks.Info) realcoord.Kind { return realcoord.Kind(info.Real) }

// setupCoord starts the lock's real coordination service and gives every
// client its members through links of its own (c0->zk1, ...). The
// ensemble's start-up (three JVMs: seconds) is before true time 0.
func (w *world) setupCoord(dir string) error {
	kind := consensusKind(w.job.Parts.Lock)
	// ZooKeeper's members reach each other through links of their own
	// (zk0->zk1, ...), so that a partition can cut them.
	peer := func(from, to, addr string) (string, error) {
		return w.links.addNamed(from+"->"+to+"@"+addr, from, to, addr)
	}
	ens, err := realcoord.StartWith(w.ctx, kind, filepath.Join(dir, string(kind)), w.job.Parts.Lock.TTL, peer)
	if err != nil {
		return err
	}
	w.coord = &coord{ens: ens, downs: map[int]int{}, since: map[int]int64{}}
	for _, p := range w.procs {
		ms := &locks.Members{}
		for _, m := range ens.Members {
			addr, err := w.links.add(p.name, m.Name, m.Addr())
			if err != nil {
				return err
			}
			ms.Addrs = append(ms.Addrs, addr)
		}
		dial := loopbackDialer(w.sawDial)
		ms.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &gatedConn{Conn: c, p: p}, nil
		}
		p.members = ms
	}
	return nil
}

// Members is the real coordination service as this client reaches it
// (scenarios.RunClient hands it to the lock as locks.Env.Members).
func (p *proc) Members() *locks.Members { return p.members }

// coordTargets are the indices of the members named in names.
func (w *world) coordTargets(names []string) []int {
	if w.coord == nil {
		return nil
	}
	var out []int
	for i, m := range w.coord.ens.Members {
		if slices.Contains(names, m.Name) {
			out = append(out, i)
		}
	}
	return out
}

// resolveLeader is f with its faults.Leader target resolved to the member
// that leads now, as the servers say (realcoord.Ensemble.Leader: srvr's
// Mode on ZooKeeper, the status endpoint's leader on etcd); false when f
// names the leader and none leads now (or there is no coordination
// service): the fault is then not injected.
func (w *world) resolveLeader(f faults.Fault) (faults.Fault, bool) {
	if !f.NamesLeader() {
		return f, true
	}
	name := ""
	if w.coord != nil {
		if l := w.coord.ens.Leader(); l >= 0 {
			name = w.coord.ens.Members[l].Name
		}
	}
	return f.WithLeader(name), name != ""
}

// coordPause SIGSTOPs the members named in targets (fault i) and
// returns what SIGCONTs them.
func (w *world) coordPause(i int, targets []string) (resume func()) {
	members := w.coordTargets(targets)
	for _, m := range members {
		if err := w.coord.ens.Pause(m); err != nil {
			w.harnessError(fmt.Errorf("fault %d: SIGSTOP %s: %w", i+1, w.coord.ens.Members[m].Name, err))
		}
	}
	return func() {
		for _, m := range members {
			_ = w.coord.ens.Resume(m)
		}
	}
}

// coordCrashes crashes the members named in targets and returns what
// restarts them. A world's Redis nodes, idle beside a real coordination
// service, take a failover fault as a crash of n0 (startFault).
func (w *world) coordCrashes(targets []string) (restart func()) {
	members := w.coordTargets(targets)
	for _, m := range members {
		w.coordCrash(m)
	}
	return func() {
		for _, m := range members {
			w.coordCrashEnded(m)
		}
	}
}

// coordClock notes that a clock fault on members was not carried out.
func (w *world) coordClock(targets []string) {
	if len(w.coordTargets(targets)) > 0 {
		w.mu.Lock()
		w.clockNote = MemberClockNote
		w.mu.Unlock()
	}
}

// coordCrash SIGKILLs member i (crashes of one member combine).
func (w *world) coordCrash(i int) {
	c := w.coord
	w.mu.Lock()
	c.downs[i]++
	first := c.downs[i] == 1
	if first {
		w.stats.Crashes++
		c.since[i] = w.now()
		w.addLocked(sim.Event{T: c.since[i], Proc: c.ens.Members[i].Name, Kind: event.KindCrash, Detail: string(c.ens.Kind) + " SIGKILL"})
	}
	w.mu.Unlock()
	if first {
		c.ens.Kill(i)
	}
}

// coordCrashEnded restarts member i when its last crash ends.
func (w *world) coordCrashEnded(i int) {
	c := w.coord
	w.mu.Lock()
	if c.downs[i] > 0 {
		c.downs[i]--
	}
	restart := c.downs[i] == 0 && c.ens.Down(i)
	w.mu.Unlock()
	if !restart {
		return
	}
	if err := c.ens.Restart(i); err != nil {
		if w.ctx.Err() == nil {
			w.harnessError(fmt.Errorf("restart %s: %w", c.ens.Members[i].Name, err))
		}
		return
	}
	now := w.now()
	modes := c.ens.Modes() // each member's mode then (not under w.mu: it asks the members)
	w.mu.Lock()
	w.addLocked(sim.Event{T: now, Proc: c.ens.Members[i].Name, Kind: event.KindRestart,
		Detail: fmt.Sprintf("serving again %v after the kill (%s)", time.Duration(now-c.since[i]).Round(time.Millisecond), modes)})
	w.mu.Unlock()
}

// coordHeal resumes paused members and restarts crashed ones.
func (w *world) coordHeal() {
	c := w.coord
	if c == nil {
		return
	}
	var down []int
	w.mu.Lock()
	for i, n := range c.downs {
		if n > 0 {
			c.downs[i] = 1
			down = append(down, i)
		}
	}
	w.mu.Unlock()
	slices.Sort(down)
	for i := range c.ens.Members {
		_ = c.ens.Resume(i)
	}
	for _, i := range down {
		w.coordCrashEnded(i)
	}
}

// coordListeners are the members' client addresses.
func (w *world) coordListeners() []string {
	if w.coord == nil {
		return nil
	}
	var out []string
	for _, m := range w.coord.ens.Members {
		out = append(out, m.Addr())
	}
	return out
}

// coordMemberNames are the members' names, as the scenarios name the
// simulated store's (zk0, zk1, zk2).
func coordMemberNames() []string {
	var out []string
	for i := 0; i < realcoord.Members; i++ {
		out = append(out, fmt.Sprintf("zk%d", i))
	}
	return out
}
