package sim

import (
	"testing"
	"time"

	evt "github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// TestClusterGossipDemotesRestarted: in a replicated cluster failed over
// by the Sentinel stand-in (node timeout 300 ms), n0 crashes at 200 ms and
// n1 is promoted; n0 restarts at 1230 ms and turns into n1's replica on
// its first gossip exchange, 20-50 ms later (cluster_gossip.go), not at
// the agent's next 100 ms tick (1300 ms).
func TestClusterGossipDemotesRestarted(t *testing.T) {
	cfg := clusterConfig(6, 1)
	cfg.Topology = Topology{Replicated: true, Shards: 3, ReplLag: 10 * time.Millisecond, DownAfter: 300 * time.Millisecond}
	const restart = 1230 * time.Millisecond
	cfg.Faults = []faults.Fault{{Kind: faults.Crash, Start: 200 * time.Millisecond, Duration: restart - 200*time.Millisecond, Targets: []string{"n0"}}}
	cfg.Program = func(p *Proc) { sleepUntil(p, 1500*time.Millisecond) }
	res := runBite(t, cfg)
	if fo := engineEvents(res, SentinelName, evt.KindFailover); len(fo) != 1 {
		t.Fatalf("failovers %+v, want n1's promotion", fo)
	}
	d := engineEvents(res, clusterProc, evt.KindDemote)
	if len(d) != 1 || d[0].Detail != "n0 -> replica of n1 (cluster shard 0, slots 0-5460) (gossip)" {
		t.Fatalf("demotions by gossip %+v (by the agent: %+v), want n0's", d, engineEvents(res, SentinelName, evt.KindDemote))
	}
	if at := time.Duration(d[0].T); at < restart+gossipMin || at > restart+gossipMin+gossipSpan {
		t.Errorf("n0 demoted at %v, want 20-50 ms after its restart at %v", at, restart)
	}
}
