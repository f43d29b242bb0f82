package realredis

import (
	"slices"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

// The cluster's own promotions credited to a fault (sim.FaultEffect's
// Promoted and PromotedLacking), as the simulator credits them
// (sim/cluster_failover_effects.go): in a world that fails over by itself
// the harness promotes nobody, so a promotion it sees (watchClusterRoles)
// is credited to the latest partition, node pause or crash begun that
// names the old primary, and judged against the lock keys live on the old
// primary then (when down or stopped: when last read, before the fault
// took it out).

// maxClusterCuts bounds the faults remembered for it (a schedule's faults
// are bounded; this is a second guard).
const maxClusterCuts = 4096

// clusterCut is such a fault: its index and the nodes it names.
type clusterCut struct {
	fault int
	names []string
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
	names := slices.Concat(f.Targets, f.From, f.To)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.clusterCuts) < maxClusterCuts {
		w.clusterCuts = append(w.clusterCuts, clusterCut{fault: i, names: names})
	}
}

// creditPromotion credits node n's promotion in old's place to the latest
// fault begun that names old, if any, with whether n lacked a lock key
// live on old.
func (w *world) creditPromotion(old, n int) {
	name := w.servers[old].name
	w.mu.Lock()
	fault := -1
	for _, c := range slices.Backward(w.clusterCuts) {
		if slices.Contains(c.names, name) {
			fault = c.fault
			break
		}
	}
	w.mu.Unlock()
	if fault < 0 {
		return
	}
	lacking := w.lacks(n, w.liveKeys(old))
	w.noteEffect(fault, func(e *sim.FaultEffect) {
		if e.Promoted == "" {
			e.Promoted, e.PromotedLacking = w.servers[n].name, lacking
		}
	})
}
