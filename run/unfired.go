package run

import (
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// UnfiredPauses lists the schedule's targeted client pauses (Fault.At) that
// were armed in the safety phase but never fired: the client did not reach
// the pause point while the pause waited for it (a lock that never marks the
// point, or a client that never came to it again). Such a fault took no
// effect, so it is not counted as injected. nil when the history was capped
// (what fired is then unknown).
func UnfiredPauses(h checker.History) []faults.Fault {
	if h.Capped {
		return nil
	}
	armed, fired := map[int]bool{}, map[int]bool{}
	for _, e := range h.Events {
		switch {
		case e.Fault <= 0:
		case e.Proc == "world" && e.Kind == event.KindFault:
			armed[e.Fault] = true
		case e.Kind == event.KindPause:
			fired[e.Fault] = true
		}
	}
	var out []faults.Fault
	for i, f := range h.Faults {
		if f.Kind == faults.ClientPause && f.At != "" && armed[i+1] && !fired[i+1] {
			out = append(out, f)
		}
	}
	return out
}
