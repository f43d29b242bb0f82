package run

import (
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// UnfiredPauses lists the schedule's armed faults that were armed in the
// safety phase but never fired: targeted client pauses (Fault.At) whose
// client did not reach the pause point while the pause waited (a lock that
// never marks the point, or a client that never came to it again), and
// faults of other kinds armed at a point (Fault.At, Fault.On) whose client
// never reached it before the heal. Such a fault took no effect, so it is
// not counted as injected. nil when the history was capped (what fired is
// then unknown).
func UnfiredPauses(h checker.History) []faults.Fault {
	if h.Capped {
		return nil
	}
	armed, fired, began := map[int]bool{}, map[int]bool{}, map[int]bool{}
	for _, e := range h.Events {
		switch {
		case e.Fault <= 0:
		case e.Proc == "world" && e.Kind == event.KindFault:
			armed[e.Fault] = true
			began[e.Fault] = true
		case e.Kind == event.KindPause:
			fired[e.Fault] = true
		}
	}
	var out []faults.Fault
	for i, f := range h.Faults {
		switch {
		case f.At == "":
		case f.Kind == faults.ClientPause:
			if armed[i+1] && !fired[i+1] {
				out = append(out, f)
			}
		case !began[i+1] && f.Start < time.Duration(h.Heal):
			// An armed fault's "fault" event is its beginning: none
			// means it waited from its start to the heal.
			out = append(out, f)
		}
	}
	return out
}
