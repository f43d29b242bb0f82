package sim

import (
	"strings"
	"testing"
	"time"

	evt "github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// TestClusterMinorityStopsWrites: a replicated cluster of 3 shards with its
// own failover (node timeout 500 ms). At 200 ms a partition cuts shard 0's
// primary n0 and client c0 off from everything else. c0 keeps writing to
// n0 every 100 ms: n0 accepts until the node timeout (it sees no majority
// of primaries only then), and answers -CLUSTERDOWN from the first check
// after it; CLUSTER INFO says cluster_state:fail. On the majority side the
// other primaries flag n0 FAIL after the node timeout and n1 wins the
// election 500..1000 ms later (the cluster's event, not Sentinel's), where
// c1 writes at 2.5 s. At the heal n0 turns into n1's replica.
func TestClusterMinorityStopsWrites(t *testing.T) {
	cfg := clusterConfig(6, 2)
	cfg.Duration = 3500 * time.Millisecond
	cfg.Topology = Topology{Replicated: true, Shards: 3, ReplLag: 10 * time.Millisecond, DownAfter: 500 * time.Millisecond, ClusterFailover: true}
	const start = 200 * time.Millisecond
	cfg.Faults = []faults.Fault{{Kind: faults.Partition, Start: start, Duration: 3 * time.Second,
		From: []string{"n0", "c0"}, To: []string{"n1", "n2", "n3", "n4", "n5", "c1"}}}
	key := ""
	for _, k := range clusterKeysSpread {
		if SlotShard(KeySlot(k), 3) == 0 {
			key = k
			break
		}
	}
	if key == "" {
		t.Fatal("no key of shard 0")
	}
	type write struct {
		at  time.Duration
		err string
	}
	var writes []write
	var info string
	cfg.Program = func(p *Proc) {
		ctx := p.Context()
		if p.ID() == 1 {
			sleepUntil(p, 2500*time.Millisecond)
			do(p, "set on n1", func() (string, error) { return p.Nodes()[1].Set(ctx, key, "c1", 0).Result() })
			return
		}
		for at := 100 * time.Millisecond; at <= 2000*time.Millisecond; at += 100 * time.Millisecond {
			sleepUntil(p, at)
			_, err := p.Nodes()[0].Set(ctx, key, "c0", 0).Result()
			w := write{at: at}
			if err != nil {
				w.err = err.Error()
			}
			writes = append(writes, w)
		}
		info, _ = p.Nodes()[0].ClusterInfo(ctx).Result()
	}
	res := runBite(t, cfg)
	timeout := cfg.Topology.DownAfter
	for _, w := range writes {
		switch {
		case w.at < start+timeout && w.err != "":
			t.Errorf("write at %v, before the node timeout: %s, want OK", w.at, w.err)
		case w.at >= start+timeout+200*time.Millisecond && !strings.HasPrefix(w.err, "CLUSTERDOWN"):
			t.Errorf("write at %v, past the node timeout: %q, want CLUSTERDOWN", w.at, w.err)
		}
	}
	if len(writes) != 20 {
		t.Fatalf("%d writes, want 20", len(writes))
	}
	if !strings.Contains(info, "cluster_state:fail") {
		t.Errorf("CLUSTER INFO on the minority primary: %q, want cluster_state:fail", info)
	}
	fo := engineEvents(res, clusterProc, evt.KindFailover)
	if len(fo) != 1 || fo[0].Detail != "n0 -> n1 (cluster shard 0, slots 0-5460)" {
		t.Fatalf("want the cluster's failover of shard 0, got %+v (sentinel's: %+v)", fo, engineEvents(res, SentinelName, evt.KindFailover))
	}
	if at := time.Duration(fo[0].T); at < start+timeout+500*time.Millisecond || at > start+timeout+1300*time.Millisecond {
		t.Errorf("promotion at %v: want the node timeout, FAIL and 500..1000 ms of election delay after %v", at, start)
	}
	if o := one(t, opsOf(t, res, "c1"), "set on n1"); o.Result != resOK {
		t.Errorf("c1's write on the promoted n1: %v", o)
	}
	if d := engineEvents(res, clusterProc, evt.KindDemote); len(d) != 1 || d[0].Detail != "n0 -> replica of n1 (cluster shard 0, slots 0-5460)" {
		t.Errorf("want n0 demoted at the heal, got %+v", d)
	}
}
