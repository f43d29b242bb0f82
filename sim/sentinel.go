package sim

import (
	evt "github.com/locksim/locksim/event"
	"strconv"
	"time"
)

// sentinel is Sentinel-style failover logic, one deployment monitoring
// every primary/replica group of the world (Topology.Groups; one by
// default), as a Sentinel monitors several masters by name. For each group
// it probes the primary every 100 ms; after DownAfter without a reply it
// promotes the group's reachable replica with the most replicated data,
// repoints the group's other replicas, and tells the clients (who drop
// their connections to the old primary, as go-redis's failover client
// does). An old primary that comes back, or that was only isolated (split
// brain), is demoted to a replica and resynced from the new primary when
// Sentinel reaches it again: what it accepted meanwhile is lost.
type sentinel struct {
	w      *World
	groups []*sentinelGroup
}

// sentinelGroup is Sentinel's view of one monitored group.
type sentinelGroup struct {
	id        int
	primary   int
	downSince int64
	epoch     int // bumps at every failover; clients ignore older news
	// fault is the failover fault (1-based) that crashed the primary and
	// awaits a promotion; lostKeys the watched keys' values live on that
	// primary at the crash (Result.Effects).
	fault    int
	lostKeys map[string]string
	// ownCause: fault is the one a cluster's own failover credits
	// (cluster_failover_effects.go), not a failover fault's.
	ownCause bool
}

// groupOf returns the group whose primary is node id, or nil.
func (s *sentinel) groupOf(id int) *sentinelGroup {
	for _, g := range s.groups {
		if g.primary == id {
			return g
		}
	}
	return nil
}

const sentinelTick = 100 * time.Millisecond

func newSentinel(w *World) *sentinel {
	s := &sentinel{w: w}
	for g := 0; g < w.groupCount(); g++ {
		s.groups = append(s.groups, &sentinelGroup{id: g, primary: w.groupFirst(g), downSince: -1})
	}
	return s
}

// groupName is group g's name in a failover fault's targets ("g0", ...).
func groupName(g int) string { return "g" + strconv.Itoa(g) }

func (s *sentinel) start() { s.schedule() }

func (s *sentinel) schedule() {
	s.w.after(s.w.now()+int64(sentinelTick), stepSentinel, s.tick)
}

func (s *sentinel) canReach(n *Node) bool {
	return n.up && n.pausedUntil <= s.w.now() && s.w.net.reachable(sentinelAddr, n.addr())
}

// members are group g's nodes, in node order.
func (s *sentinel) members(g *sentinelGroup) []*Node {
	first, size := s.w.groupFirst(g.id), s.w.groupSize()
	return s.w.nodes[first : first+size]
}

func (s *sentinel) tick() {
	defer s.schedule()
	if s.w.cfail != nil {
		s.w.cfail.tick() // the cluster's own failure detection in its place
		return
	}
	for _, g := range s.groups {
		s.tickGroup(g)
	}
}

func (s *sentinel) tickGroup(g *sentinelGroup) {
	w := s.w
	p := w.nodes[g.primary]
	if s.canReach(p) {
		g.downSince = -1
	} else {
		if g.downSince < 0 {
			g.downSince = w.now()
		}
		if w.now()-g.downSince >= int64(w.cfg.Topology.DownAfter) {
			s.failover(g)
		}
	}
	// Demote stale primaries Sentinel can reach again.
	for _, n := range s.members(g) {
		if n.id != g.primary && n.replicaOf < 0 && s.canReach(n) {
			np := w.nodes[g.primary]
			if !np.up {
				continue
			}
			w.record(Event{Proc: SentinelName, Kind: evt.KindDemote, Detail: n.name + " -> replica of " + np.name})
			n.epoch++ // REPLICAOF drops its clients
			n.unblockWaiters()
			n.resetConns()
			np.fullSync(n)
		} else if n.id != g.primary && n.replicaOf >= 0 && n.replicaOf != g.primary && s.canReach(n) {
			// A replica Sentinel could not reach at the failover still
			// follows the old primary: repoint it (Sentinel's "reconfigure
			// replicas"). Its clients stay connected, as with REPLICAOF on
			// a replica.
			np := w.nodes[g.primary]
			if !np.up {
				continue
			}
			w.record(Event{Proc: SentinelName, Kind: evt.KindReconfigure, Detail: n.name + " -> replica of " + np.name})
			np.fullSync(n)
		}
	}
}

func (s *sentinel) failover(g *sentinelGroup) {
	var best *Node
	for _, n := range s.members(g) {
		if n.id == g.primary || n.replicaOf < 0 || !s.canReach(n) {
			continue
		}
		if best == nil || n.applied > best.applied {
			best = n
		}
	}
	if best == nil {
		return // nothing to promote; try again next tick
	}
	s.promote(g, best)
}

// promote makes best group g's primary: the failover's record, best's
// role, the group's other reachable replicas resynced from it, and (with
// Sentinel, not with the cluster's own election) the clients told.
func (s *sentinel) promote(g *sentinelGroup, best *Node) {
	w := s.w
	old := g.primary
	if e := w.effect(g.fault); e != nil {
		e.NotePromotion(best.name, len(g.lostKeys) > 0, best.lacks(g.lostKeys))
	}
	g.fault, g.lostKeys = 0, nil
	g.primary = best.id
	g.downSince = -1
	w.stats.Failovers++
	g.epoch++
	epoch := g.epoch
	proc := SentinelName
	if w.cfail != nil {
		proc = clusterProc // the cluster's own election
	}
	w.record(Event{Proc: proc, Kind: evt.KindFailover, Detail: w.nodes[old].name + " -> " + best.name + w.shardNote(g.id)})
	best.replicaOf = -1
	best.offset = best.applied
	best.acked = map[int]int64{}
	best.aofAcked = map[int]int64{}
	for _, n := range s.members(g) {
		if n != best && n.id != old && n.replicaOf >= 0 && s.canReach(n) {
			best.fullSync(n)
		}
	}
	if w.cfail != nil {
		return // a cluster tells no client: they learn from -MOVED
	}
	for _, p := range w.procs {
		p := p
		w.net.deliver(w.net.rng, sentinelAddr, p.id, nil, nil, stepSwitchMaster, func() {
			s.tell(p, g, best.id, epoch)
		})
	}
}

// tell is a client hearing from Sentinel that group g's primary is node id
// (as of the group's failover epoch): it follows it and drops its
// connections to the old one. News older than what the client knows is
// ignored (two failovers' messages can arrive out of order).
func (s *sentinel) tell(p *Proc, g *sentinelGroup, id, epoch int) {
	if epoch < p.sentinelEpoch[g.id] || p.primary[g.id] == id {
		p.sentinelEpoch[g.id] = max(p.sentinelEpoch[g.id], epoch)
		return
	}
	p.sentinelEpoch[g.id] = epoch
	old := p.primary[g.id]
	p.primary[g.id] = id
	sortConns(p.conns)
	for _, c := range p.conns {
		if c.node == s.w.nodes[old] && !c.closed { // a pointer: services have ids of their own
			c.sendReset()
		}
	}
}

// heal settles each group on one primary at the heal (every node is up
// and reachable by then): any other node of the group that still thinks
// it is a primary is demoted and resynced, every replica follows the
// primary, and every client is told which node it is, as Sentinel's
// reconfiguration would do within a few ticks.
func (s *sentinel) heal() {
	w := s.w
	for _, g := range s.groups {
		g.downSince = -1
		np := w.nodes[g.primary]
		for _, n := range s.members(g) {
			switch {
			case n == np:
			case n.replicaOf < 0:
				w.record(Event{Proc: SentinelName, Kind: evt.KindDemote, Detail: n.name + " -> replica of " + np.name})
				n.epoch++
				n.unblockWaiters()
				n.resetConns()
				np.fullSync(n)
			case n.replicaOf != g.primary:
				w.record(Event{Proc: SentinelName, Kind: evt.KindReconfigure, Detail: n.name + " -> replica of " + np.name})
				np.fullSync(n)
			}
		}
		for _, p := range w.procs {
			s.tell(p, g, g.primary, g.epoch)
		}
	}
}
