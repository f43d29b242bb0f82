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
// is credited to the latest partition, node pause or crash that names
// the old primary and could have caused it, and judged against the lock
// keys live on the old primary then (when down or stopped: when last
// read, before the fault took it out). The simulator credits the fault in
// force when the old primary is flagged FAIL; the harness sees no flag,
// only the promotion, so it credits a fault that had lasted the node
// timeout by then and was still in force, or had ended no longer ago than
// the election that follows a FAIL flag may take (electionBound).

// maxClusterCuts bounds the faults remembered for it (a schedule's faults
// are bounded; this is a second guard).
const maxClusterCuts = 4096

// clusterCut is such a fault: its index, the nodes it names, and when it
// began and is due to end (the harness's clock; to is noEnd for a fault
// in force until the heal).
type clusterCut struct {
	fault    int
	names    []string
	from, to time.Duration
}

const noEnd = time.Duration(math.MaxInt64)

// electionBound is how long after a FAIL flag a replica's election may
// end, as Redis schedules it (sim/cluster_failover.go): 500 ms plus up to
// 500 ms plus a second per rank (a shard of size nodes has size-1
// replicas), then votes for up to the auth timeout, max(2 × node timeout,
// 2 s); and one poll of the role watcher.
func (w *world) electionBound() time.Duration {
	rank := time.Duration(max(w.clus.size-2, 0)) * time.Second
	return time.Second + rank + max(2*w.nodeTimeout(), 2*time.Second) + rolePoll
}

// noteClusterCut remembers fault i (f, its targets resolved) as it begins.
func (w *world) noteClusterCut(i int, f faults.Fault) {
	if w.clus == nil || !w.cfg.Topology.ClusterFailover {
		return
	}
	switch f.Kind {
	case faults.Partition, faults.NodePause, faults.Crash:
	default:
		return
	}
	c := clusterCut{fault: i, names: slices.Concat(f.Targets, f.From, f.To), from: time.Duration(w.now()), to: noEnd}
	if f.Duration > 0 {
		c.to = c.from + f.Duration
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

// creditPromotion credits node n's promotion in old's place to the latest
// fault that names old and could have caused it (causedBy), if any, with
// whether n lacked a lock key live on old.
func (w *world) creditPromotion(old, n int) {
	name := w.servers[old].name
	now := time.Duration(w.now())
	w.mu.Lock()
	fault := -1
	for _, c := range slices.Backward(w.clusterCuts) {
		if slices.Contains(c.names, name) && w.causedBy(c, now) {
			fault = c.fault
			break
		}
	}
	w.mu.Unlock()
	if fault < 0 {
		return
	}
	keys := w.liveKeys(old)
	keyed, lacking := len(keys) > 0, w.lacks(n, keys)
	w.noteEffect(fault, func(e *sim.FaultEffect) { e.NotePromotion(w.servers[n].name, keyed, lacking) })
}
