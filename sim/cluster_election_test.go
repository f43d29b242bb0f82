package sim

import (
	"strings"
	"testing"
	"time"

	evt "github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// shard0Key is a key of clusterKeysSpread in shard 0 of 3.
func shard0Key(t *testing.T) string {
	t.Helper()
	for _, k := range clusterKeysSpread {
		if SlotShard(KeySlot(k), 3) == 0 {
			return k
		}
	}
	t.Fatal("no key of shard 0")
	return ""
}

// electionWorld is a replicated cluster of 3 shards failing over by
// itself (node timeout 100 ms) whose faults cut n0 and c0 off from the
// rest; c0 writes shard 0's key on n0 at each of writes.
func electionWorld(t *testing.T, fs []faults.Fault, writes ...time.Duration) Config {
	cfg := clusterConfig(6, 1)
	cfg.Duration = 3 * time.Second
	cfg.Topology = Topology{Replicated: true, Shards: 3, ReplLag: 10 * time.Millisecond, DownAfter: 100 * time.Millisecond, ClusterFailover: true}
	cfg.Faults = fs
	key := shard0Key(t)
	cfg.WatchKeys = []string{key}
	cfg.Program = func(p *Proc) {
		for i, at := range writes {
			sleepUntil(p, at)
			p.Nodes()[0].Set(p.Context(), key, string(rune('a'+i)), 0)
		}
	}
	return cfg
}

func cut(start, dur time.Duration) faults.Fault {
	return faults.Fault{Kind: faults.Partition, Start: start, Duration: dur,
		From: []string{"n0", "c0"}, To: []string{"n1", "n2", "n3", "n4", "n5"}}
}

// TestClusterElectionKeptAcrossFail: Redis's election schedule
// (clusterHandleSlaveFailover's failover_auth_time) outlives the FAIL
// flag. A first 400 ms cut of n0 gets it flagged FAIL and n1's election
// scheduled 500-999 ms later, but n0 is reached again (FAIL cleared)
// before it is due. A second cut 1.3 s later finds the election due and
// not expired (the election timeout is 2 s): n1 asks for votes at its
// next round after the new FAIL and is promoted inside the 400 ms cut,
// where a fresh 500 ms delay would end past it.
func TestClusterElectionKeptAcrossFail(t *testing.T) {
	const second = 1500 * time.Millisecond
	res := runBite(t, electionWorld(t, []faults.Fault{cut(200*time.Millisecond, 400*time.Millisecond), cut(second, 400*time.Millisecond)}))
	var fails []int64
	for _, ev := range engineEvents(res, clusterProc, evt.KindReconfigure) {
		if ev.Detail == "n0 flagged FAIL by 2 of 3 primaries (cluster shard 0, slots 0-5460)" {
			fails = append(fails, ev.T)
		}
	}
	fo := engineEvents(res, clusterProc, evt.KindFailover)
	if len(fails) != 2 || len(fo) != 1 {
		t.Fatalf("FAIL flags at %v and failovers %+v: want two flags and one failover", fails, fo)
	}
	if time.Duration(fails[0]) >= second || fo[0].T != fails[1]+int64(sentinelTick) {
		t.Errorf("FAIL at %v, promotion at %v: want the second FAIL to run the due election at the replica's next round", fails, time.Duration(fo[0].T))
	}
}

// TestClusterElectionFreshDelay: with the cuts 4.5 s apart, past the retry
// time (2 × the 2 s election timeout), the second FAIL schedules a fresh
// election 500-999 ms later, which a 400 ms cut does not last: no
// failover at all.
func TestClusterElectionFreshDelay(t *testing.T) {
	cfg := electionWorld(t, []faults.Fault{cut(200*time.Millisecond, 400*time.Millisecond), cut(4700*time.Millisecond, 400*time.Millisecond)})
	cfg.Duration = 6 * time.Second
	res := runBite(t, cfg)
	if fo := engineEvents(res, clusterProc, evt.KindFailover); len(fo) != 0 {
		t.Fatalf("failovers %+v: want none (a fresh delay of 500 ms or more each time)", fo)
	}
}

// TestClusterOwnFailoverEffects: the cluster's own promotion is credited
// to the partition that cut the primary off (FaultEffect.Promoted), and
// PromotedLacking says whether the promoted replica lacked a lock key live
// on the old primary: c0's write on n0 after the cut began never reached
// n1 (lacking); with only the write before the cut, n1 has it.
func TestClusterOwnFailoverEffects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		writes  []time.Duration
		lacking bool
	}{
		{"written before the cut", []time.Duration{100 * time.Millisecond}, false},
		{"written after the cut began", []time.Duration{100 * time.Millisecond, 250 * time.Millisecond}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runBite(t, electionWorld(t, []faults.Fault{cut(200*time.Millisecond, 2*time.Second)}, tc.writes...))
			if fo := engineEvents(res, clusterProc, evt.KindFailover); len(fo) != 1 {
				t.Fatalf("failovers %+v, want one", fo)
			}
			if len(res.Effects) == 0 {
				t.Fatalf("no fault effect recorded, want the cut's")
			}
			if e := res.Effects[0]; e.Promoted != "n1" || e.PromotedLacking != tc.lacking {
				t.Errorf("partition's effect: promoted %q lacking %v, want n1 lacking %v", e.Promoted, e.PromotedLacking, tc.lacking)
			}
		})
	}
}

// TestClusterVotesPerVoter: a primary that voted for one replica of a
// failed primary does not vote for another within 2 × node timeout, but
// one that did not vote may (Redis keeps voted_time in each voter's view
// of the failed primary). Five shards of three (quorum 3 of the 4 other
// primaries), node timeout 1 s: n0 is cut off at 300 ms; n2 missed c0's
// write (cut from n0 before it), so n1 ranks first and asks first, but
// reaches only n3 (cut from n6, n9, n12): 1 vote. n2 asks a second later
// (rank 1), inside n3's 2 s, and gets n6's, n9's and n12's: promoted.
func TestClusterVotesPerVoter(t *testing.T) {
	cfg := clusterConfig(15, 1)
	cfg.Duration = 5 * time.Second
	cfg.Topology = Topology{Replicated: true, Shards: 5, ReplLag: 10 * time.Millisecond, DownAfter: time.Second, ClusterFailover: true}
	var key string
	for _, k := range clusterKeysSpread {
		if SlotShard(KeySlot(k), 5) == 0 {
			key = k
		}
	}
	if key == "" {
		t.Fatal("no key of shard 0 of 5")
	}
	long := 10 * time.Second
	cfg.Faults = []faults.Fault{
		{Kind: faults.Partition, Start: 50 * time.Millisecond, Duration: long, From: []string{"n2"}, To: []string{"n0"}},
		{Kind: faults.Partition, Start: 50 * time.Millisecond, Duration: long, From: []string{"n1"}, To: []string{"n6", "n9", "n12"}},
		{Kind: faults.Partition, Start: 300 * time.Millisecond, Duration: long, From: []string{"n0", "c0"},
			To: []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "n11", "n12", "n13", "n14"}},
	}
	cfg.WatchKeys = []string{key}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 100*time.Millisecond)
		p.Nodes()[0].Set(p.Context(), key, "a", 0)
	}
	res := runBite(t, cfg)
	var won []string
	for _, ev := range engineEvents(res, clusterProc, evt.KindReconfigure) {
		if strings.Contains(ev.Detail, "won the election") {
			won = append(won, ev.Detail)
		}
	}
	fo := engineEvents(res, clusterProc, evt.KindFailover)
	if len(fo) != 1 || !strings.HasPrefix(fo[0].Detail, "n0 -> n2") {
		t.Fatalf("elections won %q, failovers %+v: want n0 -> n2, elected with the votes n1 did not get", won, fo)
	}
	if len(won) != 1 || !strings.HasPrefix(won[0], "n2 won the election with 3 of 5") {
		t.Errorf("elections won %q, want n2's with 3 of 5 primaries' votes", won)
	}
}

// TestClusterVotesPerFailedPrimary: a primary's vote is kept in its view
// of the failed primary, so a shard's new primary failing soon after its
// election is voted on afresh: n0 is cut off, n1 (ahead of n2, which
// missed c0's write) is promoted at T; n1 is cut off at T+1 ms and n2,
// asking about n1 within the 2 s (2 × node timeout) since n3 and n6
// voted about n0, gets their votes.
func TestClusterVotesPerFailedPrimary(t *testing.T) {
	cfg := func(fs ...faults.Fault) Config {
		cfg := clusterConfig(9, 1)
		cfg.Duration = 8 * time.Second
		cfg.Topology = Topology{Replicated: true, Shards: 3, ReplLag: 10 * time.Millisecond, DownAfter: time.Second, ClusterFailover: true}
		key := shard0Key(t)
		cfg.WatchKeys = []string{key}
		cfg.Faults = append([]faults.Fault{
			{Kind: faults.Partition, Start: 50 * time.Millisecond, Duration: 20 * time.Second, From: []string{"n2"}, To: []string{"n0"}},
			{Kind: faults.Partition, Start: 300 * time.Millisecond, Duration: 20 * time.Second, From: []string{"n0", "c0"},
				To: []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"}},
		}, fs...)
		cfg.Program = func(p *Proc) {
			sleepUntil(p, 100*time.Millisecond)
			p.Nodes()[0].Set(p.Context(), key, "a", 0)
		}
		return cfg
	}
	fo := engineEvents(runBite(t, cfg()), clusterProc, evt.KindFailover)
	if len(fo) != 1 || !strings.HasPrefix(fo[0].Detail, "n0 -> n1") {
		t.Fatalf("failovers %+v: want n0 -> n1", fo)
	}
	at := time.Duration(fo[0].T)
	fo = engineEvents(runBite(t, cfg(faults.Fault{Kind: faults.Partition, Start: at + time.Millisecond, Duration: 20 * time.Second,
		From: []string{"n1"}, To: []string{"n0", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "c0"}})), clusterProc, evt.KindFailover)
	if len(fo) != 2 || !strings.HasPrefix(fo[1].Detail, "n1 -> n2") || time.Duration(fo[1].T) > at+2*time.Second {
		t.Fatalf("n1 promoted at %v, cut off at once; failovers %+v: want n1 -> n2 within 2 s (2 × node timeout)", at, fo)
	}
}
