package realredis

import (
	"context"
	"github.com/locksim/locksim/faults"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// TestClustersWorld: failover-one-cluster's world of three independent
// clusters (redlock-3-clusters) on 18 real redis-server processes, cut to
// its first failover. Each cluster forms on its own six nodes, node for
// node as the simulator numbers them (n0..n5 cluster 0, n6..n11 cluster
// 1, n12..n17 cluster 2), no node knows another cluster's nodes, each
// client has one ClusterClient a cluster, the lock is taken, and the
// failover of g0 promotes n1 in cluster 0 only, its event naming the
// cluster, the shard and the slots as the simulator's does.
func TestClustersWorld(t *testing.T) {
	requireRedis(t)
	if testing.Short() {
		t.Skip("18 real redis-server processes and a failover: seconds of real time (run without -short)")
	}
	tmp := t.TempDir()
	j, err := Build(run.Spec{Scenario: "failover-one-cluster", Lock: "redlock-3-clusters", Seed: 1}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j.Config.Faults = j.Config.Faults[:1]
	j.Config.Faults[0].Start, j.Config.Faults[0].Duration = 500*time.Millisecond, 1500*time.Millisecond
	j.Config.Duration, j.Config.Liveness = 4*time.Second, time.Second
	var seen []string
	clients := 0
	t.Cleanup(func() { setupHook = nil }) // even when the run fails or the test stops early
	setupHook = func(w *world) error {
		seen = ours(t, w.listeners())
		for i, s := range w.servers {
			if err := w.clus.checkSlots(w.ctx, s.admin, w.clus.clusterOf(i)); err != nil {
				t.Errorf("%s: %v", s.name, err)
			}
			nodes, err := s.admin.ClusterNodes(w.ctx).Result()
			if got := strings.Count(strings.TrimSpace(nodes), "\n") + 1; err != nil || got != 6 {
				t.Errorf("%s: CLUSTER NODES names %d nodes (%v), want its own cluster's 6", s.name, got, err)
			}
		}
		clients = len(w.procs[0].Clusters())
		return nil
	}
	jd, err := j.RunAndJudge(context.Background(), tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 18 || clients != 3 {
		t.Errorf("%d redis-server processes while running, %d ClusterClients a client: want 18 and 3", len(seen), clients)
	}
	acquired, promoted := 0, []string{}
	for _, ev := range jd.Result.History {
		if ev.Op == event.OpAcquire && ev.Kind == event.KindOK {
			acquired++
		}
		if ev.Proc == sim.SentinelName && ev.Kind == event.KindFailover {
			promoted = append(promoted, ev.Detail)
		}
	}
	if acquired == 0 {
		t.Errorf("no acquisition over the three clusters: %s", jd.Report("").Verdict)
	}
	want := "n0 -> n1 (cluster 0 shard 0, slots 0-5460) by CLUSTER FAILOVER TAKEOVER"
	if len(promoted) != 1 || promoted[0] != want {
		t.Errorf("promotions %q, want exactly %q", promoted, want)
	}
	if got := ours(t, jd.Info.Listeners); len(got) > 0 {
		t.Errorf("left running: %v", got)
	}
	empty(t, tmp)
}

// TestNotePromoted: a failover of every shard names the promoted replica
// of the shard that held the lock key whatever order the promotions land
// in (the simulator names it: its agent promotes shard 0 first), the
// first such if several did, and counts every promotion; a promoted
// replica lacking a live key marks the failover and is the one named (a
// story never says a replica lacked the key that had it).
func TestNotePromoted(t *testing.T) {
	w := &world{effects: make([]sim.FaultEffect, 4)}
	w.notePromoted(0, "n4", false, false) // shard 1's, no key there, landed first
	w.notePromoted(0, "n1", true, false)  // the key's shard
	w.notePromoted(0, "n7", true, false)
	if e := w.effects[0]; e.Promoted != "n1" || e.PromotedLacking || w.stats.Failovers != 3 {
		t.Errorf("effect %+v, %d failovers: want n1 named, not lacking, 3 failovers", e, w.stats.Failovers)
	}
	w.notePromoted(1, "n3", false, false)
	w.notePromoted(1, "n5", true, true)
	if e := w.effects[1]; e.Promoted != "n5" || !e.PromotedLacking {
		t.Errorf("effect %+v: want the replica that lacked the key, n5, named and the failover marked lacking", e)
	}
	w.notePromoted(2, "n5", true, true)
	w.notePromoted(2, "n1", true, false) // a later keyed promotion that kept its key
	if e := w.effects[2]; e.Promoted != "n5" || !e.PromotedLacking {
		t.Errorf("effect %+v: want n5, which lacked the key, still named", e)
	}
	w.notePromoted(3, "n1", true, false) // two clusters' key shards: this one kept its key
	w.notePromoted(3, "n7", true, true)  // this one lost it
	if e := w.effects[3]; e.Promoted != "n7" || !e.PromotedLacking {
		t.Errorf("effect %+v: want n7, which lacked the key, named", e)
	}
}

// TestCausedBy: the cluster's own promotion is credited only to a cut
// that could have flagged the old primary FAIL and been followed by this
// election: one that lasted the node timeout, had lasted it when the
// promotion was seen, and had not ended longer ago than an election
// takes (here node timeout 1 s, shards of 3 nodes: 2 s for a FAIL heard
// late, 1 s + 1 s of rank, the 2 s auth timeout and the role poll).
func TestCausedBy(t *testing.T) {
	w := &world{clus: &clusterSide{size: 3}}
	w.cfg.Topology.DownAfter = time.Second
	s := time.Second
	for _, tc := range []struct {
		from, to, now time.Duration
		want          bool
	}{
		{0, 3 * s, 2 * s, true},                           // in force
		{0, noEnd, 2 * s, true},                           // until the heal
		{0, noEnd, s / 2, false},                          // not yet the node timeout
		{0, s / 2, s, false},                              // too short to flag FAIL
		{0, 2 * s, 7 * s, true},                           // ended 5 s ago: an election may still be under way
		{0, 2 * s, 9 * s, false},                          // ended 7 s ago: past any election it could start
		{10 * s, 12 * s, 11 * s, true},                    // a later cut in force
		{10 * s, 12 * s, 10500 * time.Millisecond, false}, // not yet the node timeout
	} {
		if got := w.causedBy(clusterCut{from: tc.from, to: tc.to}, tc.now); got != tc.want {
			t.Errorf("cut %v..%v, promotion at %v: caused %v, want %v", tc.from, tc.to, tc.now, got, tc.want)
		}
	}
}

// TestCauseOf: of the cuts that could have caused n0's promotion, the
// simulator's order (sim/cluster_failover_effects.go noteCause): a
// partition separating n0 from another shard's primary first, else a
// pause or crash of n0; a partition that cuts n0 off from clients only
// is no cause, however late it began.
func TestCauseOf(t *testing.T) {
	w := &world{clus: &clusterSide{size: 3}}
	w.cfg.Topology.DownAfter = time.Second
	s := time.Second
	others := []string{"n3", "n6"}
	pause := clusterCut{fault: 0, kind: faults.NodePause, a: []string{"n0"}, from: s, to: 11 * s}
	clients := clusterCut{fault: 1, kind: faults.Partition, a: []string{"c0"}, b: []string{"n0"}, from: 1100 * time.Millisecond, to: 11 * s}
	primaries := clusterCut{fault: 2, kind: faults.Partition, a: []string{"n3", "n4"}, b: []string{"n0", "c0"}, from: 500 * time.Millisecond, to: 11 * s}
	other := clusterCut{fault: 3, kind: faults.NodePause, a: []string{"n3"}, from: s, to: 11 * s}
	for _, tc := range []struct {
		name string
		cuts []clusterCut
		want int
	}{
		{"a pause, then a partition from clients", []clusterCut{pause, clients}, 0},
		{"a partition from a primary before a pause", []clusterCut{primaries, pause, clients}, 2},
		{"another node's pause", []clusterCut{other, clients}, -1},
	} {
		w.clusterCuts = tc.cuts
		if got := w.causeOf("n0", others, 3*s); got != tc.want {
			t.Errorf("%s: credited fault %d, want %d", tc.name, got, tc.want)
		}
	}
}
