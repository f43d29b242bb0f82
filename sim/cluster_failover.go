package sim

import (
	"fmt"
	"math"
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
//   - each replica keeps its own election schedule, as Redis's
//     clusterHandleSlaveFailover keeps failover_auth_time: while its
//     primary is FAIL and no election of its is due or recent (none
//     scheduled for the retry time, 2 × max(2 × node timeout, 2 s)), it
//     schedules one 500 ms plus a random 0..499 ms from now, plus a second
//     per rank (the replicas of the same primary with more replicated
//     data); the delay is Redis's and does not scale with the node
//     timeout. At the scheduled time, and until the election timeout
//     max(2 × node timeout, 2 s) past it, it asks for votes once, whenever
//     its primary is FAIL: a primary flagged FAIL again after the flag
//     cleared meets an election already due, which runs at once. It wins
//     with the votes of a majority of the primaries it reaches (a primary
//     votes about one failed primary once per 2 × node timeout); the
//     winner serves the shard's slots. A FAIL flag clears when the primary
//     is reached again, after it has been flagged for 2 × node timeout
//     (clearNodeFailureIfNeeded); a node that restarts forgets its
//     schedule. A replica acts on a FAIL from its next round (every
//     100 ms) after the flag: it hears of it by a message;
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
// replica validity factor, manual failover, a voter's one vote per
// config epoch (two shards' elections drawing the same epoch).

// clusterProc is the process name of the cluster's own events (FAIL
// flags, elections, promotions, demotions) in the trace.
const clusterProc = "cluster"

// clusterFailure is the cluster's own failure detection state.
type clusterFailure struct {
	w       *World
	timeout int64
	// since[a][b]: since when node a has not reached node b (-1: it does).
	since  [][]int64
	failed []bool  // shard s's primary is flagged FAIL
	failAt []int64 // since when (while failed)
	// votedAt[m][p]: when node m, as a primary, last voted about failed
	// primary p (Redis keeps voted_time in each voter's view of the failed
	// primary: a shard's next primary starts afresh).
	votedAt [][]int64
	// Each node's election schedule as a replica (Redis's
	// failover_auth_time, failover_auth_sent, failover_auth_rank).
	authTime []int64
	authSent []bool
	authRank []int
	rng      *rand.Rand
}

// never is an election time long past: the first FAIL schedules one.
const never = math.MinInt64 / 4

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
	f.failAt = make([]int64, w.shards())
	f.votedAt = make([][]int64, n)
	for m := range f.votedAt {
		f.votedAt[m] = make([]int64, n)
		for p := range f.votedAt[m] {
			f.votedAt[m][p] = never
		}
	}
	f.authTime = make([]int64, n)
	f.authSent = make([]bool, n)
	f.authRank = make([]int, n)
	for i := range f.authTime {
		f.authTime[i] = never
	}
	return f
}

// authTimeout is how long an election may collect votes, and retry how
// long a replica waits from one election to the next: Redis's auth_timeout,
// max(2 × node timeout, 2 s), and auth_retry_time, twice that.
func (f *clusterFailure) authTimeout() int64 { return max(2*f.timeout, int64(2*time.Second)) }
func (f *clusterFailure) retry() int64       { return 2 * f.authTimeout() }

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
		f.failed[s], f.failAt[s] = true, w.now()
		w.record(Event{Proc: clusterProc, Kind: evt.KindReconfigure, Detail: fmt.Sprintf("%s flagged FAIL by %d of %d primaries%s", p.name, reports, w.shards(), w.shardNote(s))})
		f.noteCause(g, p)
	case f.failed[s] && reports == 0 && w.now()-f.failAt[s] >= 2*f.timeout:
		f.failed[s] = false // reached again before a replica won
		w.record(Event{Proc: clusterProc, Kind: evt.KindReconfigure, Detail: fmt.Sprintf("%s FAIL cleared (reachable again)%s", p.name, w.shardNote(s))})
		f.dropCause(g)
	}
	for _, r := range w.sentinel.members(g) {
		if !r.up {
			f.authTime[r.id], f.authSent[r.id] = never, false // a restart forgets it
		}
	}
	if f.failed[s] && w.now() > f.failAt[s] { // a replica hears of the FAIL by message, and acts at its next round
		for _, r := range w.sentinel.members(g) {
			if f.failed[s] && r.id != g.primary && r.replicaOf == g.primary && r.up && r.pausedUntil <= w.now() {
				f.handleReplica(g, r)
			}
		}
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

// rank is replica r's rank among its primary's replicas: those that
// are up with more replicated data (clusterGetSlaveRank).
func (f *clusterFailure) rank(g *sentinelGroup, r *Node) int {
	k := 0
	for _, n := range f.w.sentinel.members(g) {
		if n != r && n.id != g.primary && n.replicaOf == g.primary && n.up && n.applied > r.applied {
			k++
		}
	}
	return k
}

// handleReplica is one round of replica r's election while its primary
// (shard g's) is FAIL, as Redis's clusterHandleSlaveFailover: schedule an
// election when none is due or recent, let a worse rank add its delay, ask
// for votes once at the scheduled time (not past the election timeout),
// and take the shard's slots with a majority of the primaries' votes.
func (f *clusterFailure) handleReplica(g *sentinelGroup, r *Node) {
	w := f.w
	now := w.now()
	age := now - f.authTime[r.id]
	if age > f.retry() {
		rank := f.rank(g, r)
		f.authTime[r.id] = now + int64(500*time.Millisecond) + f.rng.Int64N(500)*int64(time.Millisecond) + int64(rank)*int64(time.Second)
		f.authSent[r.id], f.authRank[r.id] = false, rank
		return
	}
	if !f.authSent[r.id] {
		if rank := f.rank(g, r); rank > f.authRank[r.id] {
			f.authTime[r.id] += int64(rank-f.authRank[r.id]) * int64(time.Second)
			f.authRank[r.id] = rank
		}
	}
	if now < f.authTime[r.id] || age > f.authTimeout() || f.authSent[r.id] {
		return // not yet, expired, or asked already (the votes came at once)
	}
	f.authSent[r.id] = true
	votes := 0
	for t := 0; t < w.shards(); t++ {
		if m := w.shardPrimary(t); t != g.id && f.reach(m, r) && f.reach(r, m) && now-f.votedAt[m.id][g.primary] >= 2*f.timeout {
			votes++
			f.votedAt[m.id][g.primary] = now
		}
	}
	if votes < f.quorum() {
		return
	}
	f.failed[g.id] = false
	w.record(Event{Proc: clusterProc, Kind: evt.KindReconfigure, Detail: fmt.Sprintf("%s won the election with %d of %d primaries' votes%s", r.name, votes, w.shards(), w.shardNote(g.id))})
	f.promote(g, r)
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
		f.failed[s] = false
	}
	for _, g := range f.w.sentinel.groups {
		f.dropCause(g)
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
