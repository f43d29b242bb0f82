package run

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/sim"
)

// TestClusterLock: cluster-set-nx-cad (set-nx-cad's commands through
// go-redis's ClusterClient on a simulated Redis Cluster of 3 shards) is
// safe with no faults and unsafe when its holder is paused past the TTL
// (pause-after-check-cluster, seed 1), as set-nx-cad is; its key goes to the primary
// of its slot's shard; the same seed gives the same trace twice.
func TestClusterLock(t *testing.T) {
	run := func(scenario string) *Judged {
		t.Helper()
		job, err := Spec{Scenario: scenario, Lock: "cluster-set-nx-cad", Seed: 1}.Build()
		if err != nil {
			t.Fatal(err)
		}
		if job.Config.Topology.Shards != 3 || len(job.Config.Nodes) != 3 {
			t.Fatalf("%s: want a cluster of 3 shards on 3 nodes, got %+v with %d nodes", scenario, job.Config.Topology, len(job.Config.Nodes))
		}
		job.Config.HistoryCommands = true
		j, err := job.Run(sim.TestBubble(t))
		if err != nil || j.Err != nil {
			t.Fatalf("%s: %v %v", scenario, err, j.Err)
		}
		return j
	}
	safe := run("no-faults")
	if v := safe.Verdict(); v != checker.VerdictSafe {
		t.Fatalf("no-faults: %s: %v", v, safe.Check.Reasons)
	}
	// The lock key's slot is on one shard: every SET NX reached its
	// primary (and no MOVED was needed).
	sets := 0
	for _, ev := range safe.Result.History {
		if ev.Kind != "cmd" {
			continue
		}
		if strings.HasPrefix(ev.Reply, "-MOVED") {
			t.Errorf("a MOVED reply in a cluster whose slot map never changed: %+v", ev)
		}
		if strings.HasPrefix(ev.Cmd, "set ") && strings.HasSuffix(ev.Cmd, " nx") {
			sets++
			key := strings.Fields(ev.Cmd)[1]
			if want := fmt.Sprintf("n%d", sim.SlotShard(sim.KeySlot(key), 3)); ev.Proc != want {
				t.Errorf("%s ran on %s, the key's slot is on %s", ev.Cmd, ev.Proc, want)
			}
		}
	}
	if sets == 0 {
		t.Fatalf("no SET NX in the trace")
	}
	a := run("pause-after-check-cluster")
	if v := a.Verdict(); v != checker.VerdictUnsafe {
		t.Fatalf("pause-after-check-cluster seed 1: %s, want unsafe: %v", v, a.Check.Reasons)
	}
	if b := run("pause-after-check-cluster"); b.Result.TraceSHA256 != a.Result.TraceSHA256 {
		t.Fatalf("pause-after-check-cluster seed 1 twice: traces %s and %s", a.Result.TraceSHA256, b.Result.TraceSHA256)
	}
}

// TestClusterFailoverStory: failover-cluster at seed 1 is unsafe, and its
// story names the lock key's slot and shard, the failover of that shard
// with its slots, and the promotion the second holder's key was made on.
func TestClusterFailoverStory(t *testing.T) {
	job, err := Spec{Scenario: "failover-cluster", Lock: "cluster-set-nx-cad", Seed: 1}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if job.Config.Topology.Shards != 3 || !job.Config.Topology.Replicated || len(job.Config.Nodes) != 6 {
		t.Fatalf("want 3 shards of a primary and a replica, got %+v with %d nodes", job.Config.Topology, len(job.Config.Nodes))
	}
	j, err := job.Run(sim.TestBubble(t))
	if err != nil || j.Err != nil {
		t.Fatalf("%v %v", err, j.Err)
	}
	if v := j.Verdict(); v != checker.VerdictUnsafe {
		t.Fatalf("failover-cluster seed 1: %s, want unsafe", v)
	}
	story := Explain(j)
	for _, want := range []string{
		fmt.Sprintf("the key lock:resource is in slot %d, on cluster shard 0 (slots 0-5460)", sim.KeySlot("lock:resource")),
		"(n1 -> n0 (cluster shard 0, slots 0-5460)) promoted a replica",
		"on n0 (key lock:resource), promoted by the failover at 21.5s (n1 -> n0 (cluster shard 0, slots 0-5460))",
	} {
		if !strings.Contains(story, want) {
			t.Errorf("story lacks %q:\n%s", want, story)
		}
	}
}
