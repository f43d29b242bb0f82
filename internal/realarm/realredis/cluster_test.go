package realredis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// TestClusterWorld: pause-after-check-cluster on three real redis-server
// processes in cluster mode. The cluster forms in the simulator's layout,
// the clients' ClusterClients reach it only through their link proxies
// (every address dialled is one of the run's), the lock is taken, and
// nothing is left after a run, a failure after set-up or an interrupt.
func TestClusterWorld(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	j := short(t, "pause-after-check-cluster", "cluster-set-nx-cad", 1)
	var addrs, seen []string
	setupHook = func(w *world) error {
		addrs = w.listeners()
		seen = ours(t, addrs)
		for i, s := range w.servers {
			if err := w.clus.checkSlots(w.ctx, s.admin, w.clus.clusterOf(i)); err != nil {
				return err
			}
		}
		return nil
	}
	jd, err := j.RunAndJudge(context.Background(), tmp)
	setupHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Errorf("while running: %d redis-server processes of the run, want 3: %v", len(seen), seen)
	}
	acquired := 0
	for _, ev := range jd.Result.History {
		if ev.Op == event.OpAcquire && ev.Kind == event.KindOK {
			acquired++
		}
	}
	if acquired == 0 {
		t.Errorf("no acquisition through the cluster clients: %s", jd.Report("").Verdict)
	}
	// The listeners are the 3 nodes, their 6 gateways, the storage, then
	// the link proxies: a client dials link proxies only.
	links := map[string]bool{}
	for _, a := range jd.Info.Listeners[10:] {
		links[a] = true
	}
	for _, a := range jd.Info.Dials {
		if !links[a] || checkLoopback(a) != nil {
			t.Errorf("a client dialled %s, not one of the run's link proxies", a)
		}
	}
	if len(jd.Info.Dials) == 0 {
		t.Error("no dial seen")
	}
	if got := ours(t, addrs); len(got) > 0 {
		t.Errorf("left running: %v", got)
	}
	empty(t, tmp)

	for _, interrupt := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		setupHook = func(w *world) error {
			addrs = w.listeners()
			seen = ours(t, addrs)
			if interrupt {
				time.AfterFunc(300*time.Millisecond, cancel)
				return nil
			}
			return errors.New("injected failure")
		}
		_, err := j.RunAndJudge(ctx, tmp)
		setupHook = nil
		cancel()
		if err == nil {
			t.Fatalf("interrupt %v: the run did not fail", interrupt)
		}
		if len(seen) != 3 {
			t.Errorf("interrupt %v: %d redis-server processes while it ran, want 3: %v", interrupt, len(seen), seen)
		}
		if got := ours(t, addrs); len(got) > 0 {
			t.Errorf("interrupt %v: left running: %v", interrupt, got)
		}
		empty(t, tmp)
	}
}

// TestClusterFailover: one failover of failover-cluster crashes every
// shard's primary; each shard's replica is promoted (the event names the
// shard and its slots), the fault's effect names a promoted replica, and
// nothing is left after the run.
func TestClusterFailover(t *testing.T) {
	requireRedis(t)
	if testing.Short() {
		t.Skip("six real redis-server processes and a failover: seconds of real time (run without -short)")
	}
	tmp := t.TempDir()
	j, err := Build(run.Spec{Scenario: "failover-cluster", Lock: "cluster-set-nx-cad", Seed: 1}, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	j.Config.Faults = j.Config.Faults[:1]
	j.Config.Duration, j.Config.Liveness = 2*time.Second, time.Second
	jd, err := j.RunAndJudge(context.Background(), tmp)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"n0 -> n1 (cluster shard 0, slots 0-5460)":      false,
		"n2 -> n3 (cluster shard 1, slots 5461-10922)":  false,
		"n4 -> n5 (cluster shard 2, slots 10923-16383)": false,
	}
	crashes := 0
	for _, ev := range jd.Result.History {
		if ev.Kind == event.KindCrash && ev.Detail == "failover" {
			crashes++
		}
		if ev.Proc == sim.SentinelName && ev.Kind == event.KindFailover {
			for w := range want {
				if strings.HasPrefix(ev.Detail, w) {
					want[w] = true
				}
			}
		}
	}
	if crashes != 3 {
		t.Errorf("%d primaries crashed, want 3", crashes)
	}
	for w, ok := range want {
		if !ok {
			t.Errorf("no promotion %q in the history", w)
		}
	}
	if es := jd.Result.Effects; len(es) != 1 || !es[0].Started || es[0].Promoted == "" || jd.Result.Stats.Failovers != 3 {
		t.Errorf("failover effect %+v, stats %+v: want started, a promoted replica named, 3 failovers", es, jd.Result.Stats)
	}
	if got := ours(t, jd.Info.Listeners); len(got) > 0 {
		t.Errorf("left running: %v", got)
	}
	empty(t, tmp)
}

// TestClusterPromoteWaits: a failover whose shard has no replica to
// promote yet (its only other node is down) waits, as the simulator's
// agent waits for its next tick, and gives up without a harness error
// once the crashed primary is back.
func TestClusterPromoteWaits(t *testing.T) {
	w := &world{ctx: context.Background(), stop: make(chan struct{}), start: time.Now(),
		clus: &clusterSide{shards: 1, clusters: 1, size: 2, primary: []int{0}}, effects: make([]sim.FaultEffect, 1)}
	old, replica := &server{name: "n0", down: true}, &server{name: "n1", down: true}
	w.servers = []*server{old, replica}
	done := make(chan struct{})
	go func() { w.clusterPromote(0, 0, 0, nil); close(done) }()
	select {
	case <-done:
		t.Fatalf("returned with the primary still down: errors %v", w.errs)
	case <-time.After(50 * time.Millisecond):
	}
	old.mu.Lock()
	old.down = false
	old.mu.Unlock()
	<-done
	if len(w.errs) > 0 || w.stats.Failovers != 0 {
		t.Errorf("errors %v, failovers %d: want none", w.errs, w.stats.Failovers)
	}
}
