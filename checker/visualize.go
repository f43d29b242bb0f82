package checker

import (
	"errors"
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locksim/locksim/event"
)

// MaxAnnotations bounds the fault annotations of a visualization; events
// beyond it are left out (the checks do not depend on them).
const MaxAnnotations = 10_000

// FaultAnnotations turns h's fault and engine events into porcupine
// annotations, one per event: the world's fault (spanning to its fault-end,
// or the end of the history), fault-end and heal under the tag "world";
// failovers, crashes, restarts, pauses and sentinel reconfigurations under
// the tag of the process they happened to. At most MaxAnnotations.
func FaultAnnotations(h History) []porcupine.Annotation {
	ends := map[int]int64{} // fault index -> its fault-end time
	open := map[string][]int{}
	for i := range h.Events {
		e := &h.Events[i]
		if e.Proc != "world" {
			continue
		}
		switch e.Kind {
		case event.KindFault:
			open[e.Detail] = append(open[e.Detail], i)
		case event.KindFaultEnd:
			if q := open[e.Detail]; len(q) > 0 {
				ends[q[0]] = e.T
				open[e.Detail] = q[1:]
			}
		}
	}
	var out []porcupine.Annotation
	for i := range h.Events {
		if len(out) >= MaxAnnotations {
			break
		}
		e := &h.Events[i]
		if e.Op != "" || !worldKinds[e.Kind] {
			continue
		}
		a := porcupine.Annotation{Tag: e.Proc, Start: e.T, End: e.T, Description: string(e.Kind), Details: fmt.Sprintf("t=%v %s %s", time.Duration(e.T), e.Kind, e.Detail)}
		switch e.Kind {
		case event.KindFault:
			a.End = h.End
			if t, ok := ends[i]; ok {
				a.End = t
			}
			a.Description = "fault: " + e.Detail
			a.BackgroundColor = "#f6c6c6"
		case event.KindFaultEnd, event.KindHeal:
			a.BackgroundColor = "#c6f6d0"
		case event.KindCrash, event.KindFailover, event.KindDemote, event.KindPause:
			a.Description = string(e.Kind) + " " + e.Detail
			a.BackgroundColor = "#f6e3c6"
		}
		out = append(out, a)
	}
	return out
}

// WriteVisualization writes porcupine's HTML visualization of r's
// linearizability check of h to path, with h's faults annotated
// (FaultAnnotations). r must come from Check (or Linearizable) on the same
// h, with porcupine run (not skipped). Writing a file is the checker's
// output; it draws nothing itself.
func WriteVisualization(path string, h History, r Result) error {
	info := r.Linearizability.Info
	if info == nil {
		return errors.New("no linearizability check to visualize (" + r.Linearizability.Result + ")")
	}
	vis := *info
	vis.AddAnnotations(FaultAnnotations(h))
	nm := SectionModel(h.Initial)
	return porcupine.VisualizePath(nm.ToModel(), vis, path)
}
