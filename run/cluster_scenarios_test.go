package run

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/sim"
)

// TestClusterOwnFailoverAndMigration: the two scenarios of the cluster's
// own behaviour at seed 1 with cluster-set-nx-cad.
//   - minority-primary-cluster is unsafe: c0 holds on shard 0's primary n0
//     cut off in a minority, the cluster's own election promotes n1, which
//     the key had not reached, and c1 acquires there; the story names the
//     key's slot and shard and the promotion.
//   - slot-migration-cluster is safe although every migration bit (the
//     lock key moved while c0 held it), and the key's commands met -ASK.
func TestClusterOwnFailoverAndMigration(t *testing.T) {
	run := func(scenario string) *Judged {
		t.Helper()
		job, err := Spec{Scenario: scenario, Lock: "cluster-set-nx-cad", Seed: 1}.Build()
		if err != nil {
			t.Fatal(err)
		}
		job.Config.HistoryCommands = true
		j, err := job.Run(sim.TestBubble(t))
		if err != nil || j.Err != nil {
			t.Fatalf("%s: %v %v", scenario, err, j.Err)
		}
		return j
	}
	mp := run("minority-primary-cluster")
	if !mp.Job.Config.Topology.ClusterFailover {
		t.Fatalf("minority-primary-cluster: the world does not use the cluster's own failover: %+v", mp.Job.Config.Topology)
	}
	if v := mp.Verdict(); v != checker.VerdictUnsafe {
		t.Fatalf("minority-primary-cluster seed 1: %s, want unsafe: %v", v, mp.Check.Reasons)
	}
	story := Explain(mp)
	for _, want := range []string{"slot 3196", "cluster shard 0 (slots 0-5460)", "n0 -> n1", "promoted"} {
		if !strings.Contains(story, want) {
			t.Errorf("minority-primary-cluster story lacks %q: %s", want, story)
		}
	}
	for _, ev := range mp.Result.History {
		if ev.Kind == "failover" && ev.Proc != "cluster" {
			t.Errorf("a failover not by the cluster's own election: %+v", ev)
		}
	}

	sm := run("slot-migration-cluster")
	if v := sm.Verdict(); v != checker.VerdictSafe {
		t.Fatalf("slot-migration-cluster seed 1: %s, want safe: %v", v, sm.Check.Reasons)
	}
	asks := 0
	for _, ev := range sm.Result.History {
		if ev.Kind == "cmd" && strings.HasPrefix(ev.Reply, "-ASK") && strings.Contains(ev.Cmd, "lock:resource") {
			asks++
		}
	}
	if asks == 0 {
		t.Errorf("slot-migration-cluster: no -ASK for the lock key")
	}
	for i, e := range Effects(sm.History, sm.Result, sm.Job.Config) {
		if !e.Bit {
			t.Errorf("migration %d did not bite: %s", i+1, e.Why)
		}
	}
}

// TestClusterReloadAtTheEnd: minority-primary-cluster seed 16 ends right
// after a slot map reload, while go-redis's reload goroutine sleeps out its
// 200 ms cooldown: the run must end cleanly (it panicked with a bubble
// deadlock before sim settled the closed clients' reloads).
func TestClusterReloadAtTheEnd(t *testing.T) {
	job, err := Spec{Scenario: "minority-primary-cluster", Lock: "cluster-set-nx-cad", Seed: 16}.Build()
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Run(sim.TestBubble(t))
	if err != nil || j.Err != nil {
		t.Fatalf("%v %v", err, j.Err)
	}
}
