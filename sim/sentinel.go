package sim

import "time"

// sentinel is Sentinel-style failover logic: it probes the primary every
// 100 ms; after DownAfter without a reply it promotes the reachable replica
// with the most replicated data, repoints the other replicas, and tells the
// clients (who drop their connections to the old primary, as go-redis's
// failover client does). An old primary that comes back, or that was only
// isolated (split brain), is demoted to a replica and resynced from the new
// primary when Sentinel reaches it again: what it accepted meanwhile is lost.
type sentinel struct {
	w         *World
	primary   int
	downSince int64
	healthy   bool
	epoch     int // bumps at every failover; clients ignore older news
}

const sentinelTick = 100 * time.Millisecond

func newSentinel(w *World) *sentinel { return &sentinel{w: w, downSince: -1} }

func (s *sentinel) start() { s.schedule() }

func (s *sentinel) schedule() {
	s.w.after(s.w.now()+int64(sentinelTick), "sentinel", s.tick)
}

func (s *sentinel) canReach(n *Node) bool {
	return n.up && n.pausedUntil <= s.w.now() && s.w.net.reachable(sentinelAddr, n.addr())
}

func (s *sentinel) tick() {
	w := s.w
	defer s.schedule()
	p := w.nodes[s.primary]
	if s.canReach(p) {
		s.downSince = -1
	} else {
		if s.downSince < 0 {
			s.downSince = w.now()
		}
		if w.now()-s.downSince >= int64(w.cfg.Topology.DownAfter) {
			s.failover()
		}
	}
	// Demote stale primaries Sentinel can reach again.
	for _, n := range w.nodes {
		if n.id != s.primary && n.replicaOf < 0 && s.canReach(n) {
			np := w.nodes[s.primary]
			if !np.up {
				continue
			}
			w.record(Event{Proc: SentinelName, Kind: "demote", Detail: n.name + " -> replica of " + np.name})
			n.epoch++ // REPLICAOF drops its clients
			n.resetConns()
			np.fullSync(n)
		} else if n.id != s.primary && n.replicaOf >= 0 && n.replicaOf != s.primary && s.canReach(n) {
			// A replica Sentinel could not reach at the failover still
			// follows the old primary: repoint it (Sentinel's "reconfigure
			// replicas"). Its clients stay connected, as with REPLICAOF on
			// a replica.
			np := w.nodes[s.primary]
			if !np.up {
				continue
			}
			w.record(Event{Proc: SentinelName, Kind: "reconfigure", Detail: n.name + " -> replica of " + np.name})
			np.fullSync(n)
		}
	}
}

func (s *sentinel) failover() {
	w := s.w
	var best *Node
	for _, n := range w.nodes {
		if n.id == s.primary || n.replicaOf < 0 || !s.canReach(n) {
			continue
		}
		if best == nil || n.applied > best.applied {
			best = n
		}
	}
	if best == nil {
		return // nothing to promote; try again next tick
	}
	old := s.primary
	s.primary = best.id
	s.downSince = -1
	w.stats.Failovers++
	s.epoch++
	epoch := s.epoch
	w.record(Event{Proc: SentinelName, Kind: "failover", Detail: w.nodes[old].name + " -> " + best.name})
	best.replicaOf = -1
	best.offset = best.applied
	best.acked = map[int]int64{}
	for _, n := range w.nodes {
		if n != best && n.id != old && n.replicaOf >= 0 && s.canReach(n) {
			best.fullSync(n)
		}
	}
	for _, p := range w.procs {
		p := p
		w.net.deliver(w.net.rng, sentinelAddr, p.id, nil, nil, "switch-master", func() {
			s.tell(p, best.id, epoch)
		})
	}
}

// tell is a client hearing from Sentinel that the primary is node id (as of
// failover epoch): it follows it and drops its connections to the old one.
// News older than what the client knows is ignored (two failovers' messages
// can arrive out of order).
func (s *sentinel) tell(p *Proc, id, epoch int) {
	if epoch < p.sentinelEpoch || p.primary == id {
		p.sentinelEpoch = max(p.sentinelEpoch, epoch)
		return
	}
	p.sentinelEpoch = epoch
	old := p.primary
	p.primary = id
	sortConns(p.conns)
	for _, c := range p.conns {
		if c.node == s.w.nodes[old] && !c.closed { // a pointer: services have ids of their own
			c.sendReset()
		}
	}
}

// heal settles the topology on one primary at the heal (every node is up
// and reachable by then): any other node that still thinks it is a primary
// is demoted and resynced, every replica follows the primary, and every
// client is told which node it is, as Sentinel's reconfiguration would do
// within a few ticks.
func (s *sentinel) heal() {
	w := s.w
	s.downSince = -1
	np := w.nodes[s.primary]
	for _, n := range w.nodes {
		switch {
		case n == np:
		case n.replicaOf < 0:
			w.record(Event{Proc: SentinelName, Kind: "demote", Detail: n.name + " -> replica of " + np.name})
			n.epoch++
			n.resetConns()
			np.fullSync(n)
		case n.replicaOf != s.primary:
			w.record(Event{Proc: SentinelName, Kind: "reconfigure", Detail: n.name + " -> replica of " + np.name})
			np.fullSync(n)
		}
	}
	for _, p := range w.procs {
		s.tell(p, s.primary, s.epoch)
	}
}
