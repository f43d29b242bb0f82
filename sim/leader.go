package sim

import "github.com/locksim/locksim/faults"

// resolveLeader is f with its faults.Leader target (if any) resolved to
// the member that leads now (faults.Fault.WithLeader); false when f names
// the leader and no member leads.
func (w *World) resolveLeader(f faults.Fault) (faults.Fault, bool) {
	if !f.NamesLeader() {
		return f, true
	}
	name := w.leaderName()
	return f.WithLeader(name), name != ""
}

// leaderName is the member service that leads now: of the up members that
// believe they lead (a partitioned leader may still believe it), the one
// of the highest term; "" when none does. A member says so through Leads
// (internal/zk).
func (w *World) leaderName() string {
	best, name := uint64(0), ""
	for _, n := range w.services {
		l, ok := n.svc.(interface{ Leads() (uint64, bool) })
		if !ok || !n.up {
			continue
		}
		if term, leads := l.Leads(); leads && (name == "" || term > best) {
			best, name = term, n.name
		}
	}
	return name
}
