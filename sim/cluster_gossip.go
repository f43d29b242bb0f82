package sim

import (
	"time"

	evt "github.com/locksim/locksim/event"
)

// A restarted old primary of a Redis Cluster learns from the cluster bus
// that its slots were taken over (a PONG from a node with a newer config
// epoch) and turns into the new owner's replica on its first gossip
// exchange, without waiting for a failover agent's tick: real Redis
// 7.0.15 did it 24 and 44 ms after "Ready to accept connections"
// (docs/FINDINGS.md). The simulator draws the delay from 20 to 50 ms
// after the restart (its own random stream); until then the node still
// serves its old slots as a primary. Not modelled: the start-up time of a
// real server before it accepts connections.

const (
	gossipMin  = 20 * time.Millisecond
	gossipSpan = 30 * time.Millisecond
)

// gossipAfterRestart schedules restarted node n's first gossip exchange,
// in a cluster with replicas (any failover agent).
func (w *World) gossipAfterRestart(n *Node) {
	if w.shards() == 0 || w.sentinel == nil || w.phase != phaseSafety || n.replicaOf >= 0 {
		return
	}
	if w.gossipRng == nil {
		w.gossipRng = w.streams.Get("cluster-gossip")
	}
	at := w.now() + int64(gossipMin) + w.gossipRng.Int64N(int64(gossipSpan)+1)
	w.after(at, stepSentinel, func() { w.gossipDemote(n) })
}

// gossipDemote turns n into its shard's primary's replica if n is up,
// still a primary, no longer its shard's, and reaches the new primary.
func (w *World) gossipDemote(n *Node) {
	now := w.now()
	s := w.shardOf(n.id)
	np := w.shardPrimary(s)
	if w.phase != phaseSafety || !n.up || n.replicaOf >= 0 || np == n || !np.up ||
		n.pausedUntil > now || np.pausedUntil > now || !w.net.reachable(n.addr(), np.addr()) {
		return // a later tick of the failover agent sees to it
	}
	w.record(Event{Proc: clusterProc, Kind: evt.KindDemote, Detail: n.name + " -> replica of " + np.name + w.shardNote(s) + " (gossip)"})
	n.epoch++ // its clients are dropped, as REPLICAOF drops them
	n.unblockWaiters()
	n.resetConns()
	np.fullSync(n)
}
