package sim

import "github.com/locksim/locksim/faults"

// Which fault a cluster's own failover is credited to (FaultEffect's
// Promoted and PromotedLacking): a failover fault credits itself (it
// crashed the primary: inject.go); otherwise, when a shard's primary is
// flagged FAIL, the fault that cut it off from the primaries that flagged
// it: a partition between them in force then, else the node pause or
// crash that took it out. Its promotion is then judged against the lock
// keys live on the old primary at the promotion (when down: when it went
// down): a promoted replica lacking one lost the lock's key.

// noteCause credits shard g's coming promotion to the fault that cut its
// primary p off, unless a failover fault awaits it already.
func (f *clusterFailure) noteCause(g *sentinelGroup, p *Node) {
	if g.fault != 0 {
		return
	}
	w := f.w
	for _, lf := range w.net.active {
		if lf.kind != faults.Partition {
			continue
		}
		for t := 0; t < w.shards(); t++ {
			if m := w.shardPrimary(t); t != g.id && (lf.matches(p.addr(), m.addr()) || lf.matches(m.addr(), p.addr())) {
				g.fault, g.ownCause = lf.fault, true
				return
			}
		}
	}
	if !p.up || p.pausedUntil > w.now() {
		g.fault, g.ownCause = p.outFault, true
	}
}

// dropCause forgets the credit noteCause gave when the FAIL flag clears
// with no promotion.
func (f *clusterFailure) dropCause(g *sentinelGroup) {
	if g.ownCause {
		g.fault, g.ownCause = 0, false
	}
}

// promote makes r shard g's primary, the cluster's election won: the
// keys it is judged against are the old primary's now (when down: when
// it went down), unless a failover fault read them at its crash.
func (f *clusterFailure) promote(g *sentinelGroup, r *Node) {
	if g.ownCause {
		old := f.w.nodes[g.primary]
		g.lostKeys = old.liveValues()
		if !old.up {
			g.lostKeys = old.downVals
		}
		g.ownCause = false
	}
	f.w.sentinel.promote(g, r)
}
