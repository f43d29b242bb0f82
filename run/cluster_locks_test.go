package run

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/sim"
)

// judgeCluster runs one seed of scenario with lock, commands kept.
func judgeCluster(t *testing.T, scenario, lock string, seed uint64) *Judged {
	t.Helper()
	job, err := Spec{Scenario: scenario, Lock: lock, Seed: seed}.Build()
	if err != nil {
		t.Fatal(err)
	}
	job.Config.HistoryCommands = true
	j, err := job.Run(sim.TestBubble(t))
	if err != nil || j.Err != nil {
		t.Fatalf("%s × %s: %v %v", scenario, lock, err, j.Err)
	}
	return j
}

// evalNodes counts, per node, the EVALs whose first key is key.
func evalNodes(j *Judged, key string) map[string]int {
	out := map[string]int{}
	for _, ev := range j.Result.History {
		f := strings.Fields(ev.Cmd)
		if ev.Kind == "cmd" && len(f) > 5 && f[0] == "eval" && f[5] == key { // eval <script N bytes> numkeys key
			out[ev.Proc]++
		}
	}
	return out
}

// TestRedissonClusterLock: redisson-cluster is safe with no faults, its
// lock, renewal and unlock scripts all run on the primary of the key's
// slot (n0: lock:resource is in slot 3196, shard 0), the unlock naming the
// channel redisson_lock__channel:{lock:resource} of the same slot; it is
// unsafe when the holder is paused past the 30 s lease, as redisson-lock.
func TestRedissonClusterLock(t *testing.T) {
	j := judgeCluster(t, "no-faults", "redisson-cluster", 1)
	if v := j.Verdict(); v != checker.VerdictSafe {
		t.Fatalf("no-faults: %s: %v", v, j.Check.Reasons)
	}
	if want := fmt.Sprintf("n%d", sim.SlotShard(sim.KeySlot("lock:resource"), 3)); want != "n0" {
		t.Fatalf("lock:resource's shard primary is %s; the test expects n0", want)
	}
	nodes := evalNodes(j, "lock:resource")
	if len(nodes) != 1 || nodes["n0"] == 0 {
		t.Fatalf("the scripts ran on %v, want n0 only", nodes)
	}
	unlocks := 0
	for _, ev := range j.Result.History {
		if ev.Kind == "cmd" && strings.Contains(ev.Cmd, " 2 lock:resource redisson_lock__channel:{lock:resource} ") {
			unlocks++
		}
	}
	if unlocks == 0 {
		t.Fatal("no unlock script naming the lock's channel")
	}
	if v := judgeCluster(t, "pause-after-check-cluster", "redisson-cluster", 1).Verdict(); v != checker.VerdictUnsafe {
		t.Fatalf("pause-after-check-cluster seed 1: %s, want unsafe", v)
	}
}

// TestRedissonWaitClusterLock: redisson-wait-cluster in
// failover-wait-cluster (3 shards of a primary and 2 replicas) sends each
// script and its WAIT 2 1000 to the key's shard's primary, which has two
// replicas; seed 1 is safe. With 2 s of lag (failover-cluster) WAIT 1
// never sees its one replica in 1 s: no lock is ever granted (liveness).
func TestRedissonWaitClusterLock(t *testing.T) {
	j := judgeCluster(t, "failover-wait-cluster", "redisson-wait-cluster", 1)
	if v := j.Verdict(); v != checker.VerdictSafe {
		t.Fatalf("failover-wait-cluster seed 1: %s: %v", v, j.Check.Reasons)
	}
	waits := 0
	for _, ev := range j.Result.History {
		if ev.Kind == "cmd" && strings.HasPrefix(ev.Cmd, "wait 2 1000") {
			waits++
			if ev.Proc != "n0" && ev.Proc != "n1" && ev.Proc != "n2" {
				t.Errorf("%s on %s, outside the key's shard (n0..n2)", ev.Cmd, ev.Proc)
			}
		}
	}
	if waits == 0 {
		t.Fatal("no WAIT 2 1000 in the trace")
	}
	if v := judgeCluster(t, "failover-cluster", "redisson-wait-cluster", 1).Verdict(); v != checker.VerdictLiveness {
		t.Fatalf("failover-cluster seed 1: %s, want liveness", v)
	}
}

// TestRedlockThreeClusters: redlock-3-clusters runs in a world of three
// independent clusters (9 nodes without replicas): its lock scripts reach
// the key's shard primary in each, n0, n3 and n6, and no-faults is safe.
// With only cluster 0's key shard failing over before the key replicates
// (failover-one-cluster) the failovers bite and the lock stays safe: two
// clusters still hold the key.
func TestRedlockThreeClusters(t *testing.T) {
	j := judgeCluster(t, "no-faults", "redlock-3-clusters", 1)
	if c := j.Job.Config; c.Topology.Shards != 3 || c.Topology.Clusters != 3 || len(c.Nodes) != 9 {
		t.Fatalf("world %+v with %d nodes, want 3 clusters of 3 shards on 9 nodes", c.Topology, len(c.Nodes))
	}
	if v := j.Verdict(); v != checker.VerdictSafe {
		t.Fatalf("no-faults: %s: %v", v, j.Check.Reasons)
	}
	nodes := evalNodes(j, "lock:resource")
	if len(nodes) != 3 || nodes["n0"] == 0 || nodes["n3"] == 0 || nodes["n6"] == 0 {
		t.Fatalf("the scripts ran on %v, want n0, n3 and n6", nodes)
	}
	f := judgeCluster(t, "failover-one-cluster", "redlock-3-clusters", 1)
	if v := f.Verdict(); v != checker.VerdictSafe {
		t.Fatalf("failover-one-cluster seed 1: %s: %v", v, f.Check.Reasons)
	}
	if c := Count(Effects(f.History, f.Result, f.Job.Config)); c.Bit == 0 {
		t.Fatalf("failover-one-cluster seed 1: no failover bit (%s): the scenario tests nothing", c)
	}
}
