package realredis

import (
	"math"
	"slices"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

// The cluster's own promotions credited to a fault (sim.FaultEffect's
// Promoted and PromotedLacking), as the simulator credits them
// (sim/cluster_failover_effects.go): in a world that fails over by itself
// the harness promotes nobody, so a promotion it sees (watchClusterRoles)
// is credited, in the simulator's order, to the latest partition that
// separated the old primary from another shard's primary, else to the
// latest node pause or crash of the old primary, of those that could
// have caused it (causedBy); and judged against the lock keys live on the
// old primary then (when down or stopped: when last read, before the
// fault took it out). The simulator credits the fault in force when the
// old primary is flagged FAIL; the harness sees no flag, only the
// promotion, so it credits a fault that had lasted the node timeout by
// then and was still in force, or had ended no longer ago than the
// election that follows a FAIL flag may take (electionBound).

// maxClusterCuts bounds the faults remembered for it (a schedule's faults
// are bounded; this is a second guard).
const maxClusterCuts = 4096

// clusterCut is such a fault: its index and kind, the nodes it names
// (a partition's two sides; a pause's or crash's targets in from), and
// when it began and is due to end (the harness's clock, f.End(); to is
// noEnd for a fault in force until the heal).
type clusterCut struct {
	fault    int
	kind     faults.Kind
	a, b     []string
	from, to time.Duration
}

const noEnd = time.Duration(math.MaxInt64)

// electionBound is how long after a cut ends the election it caused may
// end, as Redis schedules it (sim/cluster_failover.go): a replica that
// hears of the FAIL late schedules it while the flag stands (up to 2 ×
// node timeout after it, when a FAIL may clear), 500 ms plus up to 500 ms
// plus a second per rank later (a shard of size nodes has size-1
// replicas), then collects votes for up to the auth timeout, max(2 × node
// timeout, 2 s); and one poll of the role watcher.
func (w *world) electionBound() time.Duration {
	nt := w.nodeTimeout()
	rank := time.Duration(max(w.clus.size-2, 0)) * time.Second
	return 2*nt + time.Second + rank + max(2*nt, 2*time.Second) + rolePoll
}

// noteClusterCut remembers fault i (f, its targets resolved) as it begins.
func (w *world) noteClusterCut(i int, f faults.Fault) {
	if w.clus == nil || !w.cfg.Topology.ClusterFailover {
		return
	}
	c := clusterCut{fault: i, kind: f.Kind, from: time.Duration(w.now()), to: noEnd}
	switch f.Kind {
	case faults.Partition:
		c.a, c.b = f.From, f.To
	case faults.NodePause, faults.Crash:
		c.a = f.Targets
	default:
		return
	}
	if f.Duration > 0 {
		c.to = f.End()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.clusterCuts) < maxClusterCuts {
		w.clusterCuts = append(w.clusterCuts, c)
	}
}

// causedBy reports whether cut c could have caused a promotion seen at
// now: it lasts the node timeout (the old primary's FAIL flag needs it),
// had lasted it by now, and had not ended longer ago than an election
// takes.
func (w *world) causedBy(c clusterCut, now time.Duration) bool {
	nt := w.nodeTimeout()
	if c.to == noEnd {
		return c.from+nt <= now
	}
	return c.to-c.from >= nt && c.from+nt <= now && now <= c.to+w.electionBound()
}

// causeOf is the fault a promotion seen at now in old's place is credited
// to (-1: none), as the simulator's noteCause picks it: the latest
// partition separating old from one of others (the other shards'
// primaries), else the latest node pause or crash of old, that could
// have caused it. The caller holds w.mu.
func (w *world) causeOf(old string, others []string, now time.Duration) int {
	separates := func(x, y []string) bool {
		return slices.Contains(x, old) && slices.ContainsFunc(y, func(n string) bool { return slices.Contains(others, n) })
	}
	for _, pass := range []func(clusterCut) bool{
		func(c clusterCut) bool {
			return c.kind == faults.Partition && (separates(c.a, c.b) || separates(c.b, c.a))
		},
		func(c clusterCut) bool { return c.kind != faults.Partition && slices.Contains(c.a, old) },
	} {
		for _, c := range slices.Backward(w.clusterCuts) {
			if pass(c) && w.causedBy(c, now) {
				return c.fault
			}
		}
	}
	return -1
}

// creditPromotion credits node n's promotion in old's place to the fault
// causeOf picks, if any, with whether n lacked a lock key live on old.
func (w *world) creditPromotion(old, n int) {
	c := w.clus
	var others []string
	c.mu.Lock()
	for t, p := range c.primary {
		if t != n/c.size && c.clusterOf(p) == c.clusterOf(old) {
			others = append(others, w.servers[p].name)
		}
	}
	c.mu.Unlock()
	now := time.Duration(w.now())
	w.mu.Lock()
	fault := w.causeOf(w.servers[old].name, others, now)
	w.mu.Unlock()
	if fault < 0 {
		return
	}
	keys := w.liveKeys(old)
	keyed, lacking := len(keys) > 0, w.lacks(n, keys)
	w.noteEffect(fault, func(e *sim.FaultEffect) { e.NotePromotion(w.servers[n].name, keyed, lacking) })
}
