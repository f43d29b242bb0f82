package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	evt "github.com/locksim/locksim/event"
)

// The cluster's own failure detection and election (Topology.ClusterFailover),
// in place of the Sentinel stand-in (sentinel.go), as the Redis Cluster
// specification describes them, with the node timeout Topology.DownAfter
// (cluster-node-timeout):
//
//   - a node that has not reached another for the node timeout flags it
//     PFAIL (each node's own view, checked every 100 ms, as clusterCron);
//   - a primary is flagged FAIL once a majority of the primaries serving
//     slots (the other shards' primaries here) flag it PFAIL;
//   - its replica with the most replicated data (rank 0) starts an
//     election 500 ms plus a random 0..500 ms after the FAIL (each further
//     rank adds a second) and wins with the votes of a majority of the
//     primaries it reaches; a lost election is retried after
//     max(2 × node timeout, 2 s); the winner serves the shard's slots;
//   - a node that reaches fewer than a majority of the primaries (itself
//     counted when it is one) for the node timeout sees the cluster down and
//     answers every keyed command -CLUSTERDOWN (a partitioned primary
//     stops accepting writes), as does a node of the majority while a
//     shard's primary is FAIL and not yet replaced (full coverage
//     required, Redis's default);
//   - an old primary that reaches the new one again turns into its replica
//     and resyncs from it (what it accepted meanwhile is lost).
//
// Clients are told nothing in the safety phase: go-redis's ClusterClient
// learns the new primary from a -MOVED or its slot map's reload. The heal
// is the world's (sentinel.heal): it settles each shard on one primary and
// drops each client's connections to the others, as it does with the
// Sentinel stand-in. Not modelled: gossip's
// own delay, the rejoin delay of a node coming back to the majority, the
// replica validity factor, manual failover.

// clusterProc is the process name of the cluster's own events (FAIL
// flags, elections, promotions, demotions) in the trace.
const clusterProc = "cluster"

// clusterFailure is the cluster's own failure detection state.
type clusterFailure struct {
	w       *World
	timeout int64
	// since[a][b]: since when node a has not reached node b (-1: it does).
	since   [][]int64
	failed  []bool  // shard s's primary is flagged FAIL
	electAt []int64 // shard s's rank-0 replica starts its election then (-1: none due)
	rng     *rand.Rand
}

func newClusterFailure(w *World) *clusterFailure {
	n := len(w.nodes)
	f := &clusterFailure{w: w, timeout: int64(w.cfg.Topology.DownAfter), rng: w.streams.Get("cluster-election")}
	for range n {
		row := make([]int64, n)
		for j := range row {
			row[j] = -1
		}
		f.since = append(f.since, row)
	}
	f.failed = make([]bool, w.shards())
	f.electAt = make([]int64, w.shards())
	for s := range f.electAt {
		f.electAt[s] = -1
	}
	return f
}

// reach: node a reaches node b now (both up and serving, the link open).
func (f *clusterFailure) reach(a, b *Node) bool {
	now := f.w.now()
	return a.up && b.up && b.pausedUntil <= now && a.pausedUntil <= now && f.w.net.reachable(a.addr(), b.addr())
}

// pfail: node a flags node b PFAIL (not reached for the node timeout, and
// not reached now: a ping's reply clears the flag at once).
func (f *clusterFailure) pfail(a, b *Node) bool {
	if a == b {
		return false
	}
	s := f.since[a.id][b.id]
	return s >= 0 && f.w.now()-s >= f.timeout && !f.reach(a, b)
}

// stale: primary n is no longer its shard's primary and has heard of the
// one that replaced it (it reaches it: gossip is instant), so it redirects
// its slots there until it is turned into that node's replica.
func (f *clusterFailure) stale(n *Node) bool {
	p := f.w.shardPrimary(f.w.shardOf(n.id))
	return p != n && f.reach(n, p)
}

// quorum is a majority of the primaries serving slots.
func (f *clusterFailure) quorum() int { return f.w.shards()/2 + 1 }

// down is the -CLUSTERDOWN node n answers, "" while it sees the cluster up.
func (f *clusterFailure) down(n *Node) string {
	w := f.w
	reached := 0
	for s := 0; s < w.shards(); s++ {
		if p := w.shardPrimary(s); p == n || !f.pfail(n, p) {
			reached++
		}
	}
	if reached < f.quorum() {
		return "CLUSTERDOWN The cluster is down"
	}
	for s := 0; s < w.shards(); s++ {
		if f.failed[s] {
			return "CLUSTERDOWN The cluster is down"
		}
	}
	return ""
}

// tick is one round of every node's failure detection (every 100 ms).
func (f *clusterFailure) tick() {
	w := f.w
	now := w.now()
	for _, a := range w.nodes {
		for _, b := range w.nodes {
			switch {
			case !a.up || a == b || f.reach(a, b):
				f.since[a.id][b.id] = -1
			case f.since[a.id][b.id] < 0:
				f.since[a.id][b.id] = now
			}
		}
	}
	for _, g := range w.sentinel.groups {
		f.tickShard(g)
	}
}

// tickShard flags shard g's primary FAIL, runs its replica's election,
// and turns stale primaries and replicas of the shard toward its primary.
func (f *clusterFailure) tickShard(g *sentinelGroup) {
	w := f.w
	s, p := g.id, w.nodes[g.primary]
	reports := 0
	for t := 0; t < w.shards(); t++ {
		if m := w.shardPrimary(t); t != s && m.up && f.pfail(m, p) {
			reports++
		}
	}
	switch {
	case !f.failed[s] && reports >= f.quorum():
		f.failed[s] = true
		w.record(Event{Proc: clusterProc, Kind: evt.KindReconfigure, Detail: fmt.Sprintf("%s flagged FAIL by %d of %d primaries%s", p.name, reports, w.shards(), w.shardNote(s))})
		f.schedule(g)
	case f.failed[s] && reports == 0:
		f.failed[s], f.electAt[s] = false, -1 // reached again before a replica won
		w.record(Event{Proc: clusterProc, Kind: evt.KindReconfigure, Detail: fmt.Sprintf("%s FAIL cleared (reachable again)%s", p.name, w.shardNote(s))})
	}
	if f.failed[s] && f.electAt[s] >= 0 && w.now() >= f.electAt[s] {
		f.elect(g)
	}
	np := w.nodes[g.primary]
	for _, n := range w.sentinel.members(g) {
		if n == np || !f.reach(n, np) {
			continue
		}
		switch {
		case n.replicaOf < 0:
			w.record(Event{Proc: clusterProc, Kind: evt.KindDemote, Detail: n.name + " -> replica of " + np.name + w.shardNote(s)})
			n.epoch++ // its clients are dropped, as REPLICAOF drops them
			n.unblockWaiters()
			n.resetConns()
			np.fullSync(n)
		case n.replicaOf != np.id:
			w.record(Event{Proc: clusterProc, Kind: evt.KindReconfigure, Detail: n.name + " -> replica of " + np.name + w.shardNote(s)})
			np.fullSync(n)
		}
	}
}

// candidate is shard g's replica with the most replicated data among
// those up, and its rank (always 0: the best one runs first).
func (f *clusterFailure) candidate(g *sentinelGroup) *Node {
	var best *Node
	for _, n := range f.w.sentinel.members(g) {
		if n.id == g.primary || n.replicaOf != g.primary || !n.up {
			continue
		}
		if best == nil || n.applied > best.applied {
			best = n
		}
	}
	return best
}

// schedule sets when shard g's rank-0 replica starts its election: 500 ms
// plus a random 0..500 ms from now.
func (f *clusterFailure) schedule(g *sentinelGroup) {
	f.electAt[g.id] = f.w.now() + int64(500*time.Millisecond) + f.rng.Int64N(int64(500*time.Millisecond)+1)
}

// elect runs shard g's election: its candidate wins with the votes of a
// majority of the primaries (the other shards' primaries that reach it);
// otherwise it tries again after the election timeout.
func (f *clusterFailure) elect(g *sentinelGroup) {
	w := f.w
	r := f.candidate(g)
	votes := 0
	if r != nil {
		for t := 0; t < w.shards(); t++ {
			if m := w.shardPrimary(t); t != g.id && f.reach(m, r) && f.reach(r, m) {
				votes++
			}
		}
	}
	if r == nil || votes < f.quorum() {
		f.electAt[g.id] = w.now() + max(2*f.timeout, int64(2*time.Second))
		return
	}
	f.failed[g.id], f.electAt[g.id] = false, -1
	w.record(Event{Proc: clusterProc, Kind: evt.KindReconfigure, Detail: fmt.Sprintf("%s won the election with %d of %d primaries' votes%s", r.name, votes, w.shards(), w.shardNote(g.id))})
	w.sentinel.promote(g, r)
}

// heal clears every flag at the heal (the sentinel's heal settles each
// shard on one primary).
func (f *clusterFailure) heal() {
	for i := range f.since {
		for j := range f.since[i] {
			f.since[i][j] = -1
		}
	}
	for s := range f.failed {
		f.failed[s], f.electAt[s] = false, -1
	}
}

// clusterDown is the -CLUSTERDOWN error node n answers every keyed
// command with while it sees the cluster down, "" otherwise.
func (n *Node) clusterDown() string {
	if n.w.cfail == nil {
		return ""
	}
	return n.w.cfail.down(n)
}
