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
			if p.primary == best.id {
				return
			}
			p.primary = best.id
			sortConns(p.conns)
			for _, c := range p.conns {
				if c.node == w.nodes[old] && !c.closed { // a pointer: services have ids of their own
					c.sendReset()
				}
			}
		})
	}
}

func (s *sentinel) heal() {}
