package checker

import (
	"cmp"
	"slices"

	"github.com/locksim/locksim/event"
)

// MaxSliceEvents bounds a counterexample slice (Slice).
const MaxSliceEvents = 200

// worldKinds are the fault and engine events a counterexample keeps.
var worldKinds = map[event.Kind]bool{
	event.KindFault: true, event.KindFaultEnd: true, event.KindHeal: true, event.KindFailover: true, event.KindDemote: true,
	event.KindReconfigure: true, event.KindCrash: true, event.KindRestart: true, event.KindPause: true,
}

// Slice returns the part of h that shows r's first violation: the involved
// clients' events (their operations, the storage's records of them, the
// Redis commands they sent) from the involved acquisitions' calls
// (r.First.Since) to the violation (r.First.T), plus the faults active in
// that span (a fault that began earlier is included with its start) and the
// engine's failovers, crashes, restarts and pauses in it. window > 0 bounds
// how far before the violation the slice reaches. Events keep history order.
//
// At most MaxSliceEvents (200) events are returned. At the cap the events
// furthest before the violation are dropped first, Redis commands before
// storage records, storage records before client operations, and client
// operations before faults. It returns nil when r has no violation.
func Slice(h History, r Result, window int64) []Event {
	v := r.First
	if v == nil {
		return nil
	}
	from, to := v.Since, v.T
	if window > 0 && to-window > from {
		from = to - window
	}
	involved := map[string]bool{}
	for _, c := range v.Clients {
		involved[c] = true
	}
	// Faults active in [from, to]: started by to, not ended before from
	// (a fault-end closes the earliest open fault with the same detail).
	last := upperBound(h.Events, to)
	active := map[int]bool{} // index of a fault event -> keep
	openFaults := map[string][]int{}
	for i := 0; i < len(h.Events); i++ {
		e := &h.Events[i]
		if e.Proc != "world" {
			continue
		}
		switch e.Kind {
		case event.KindFault:
			if i < last {
				openFaults[e.Detail] = append(openFaults[e.Detail], i)
			}
		case event.KindFaultEnd:
			if q := openFaults[e.Detail]; len(q) > 0 {
				if e.T >= from {
					active[q[0]] = true
				}
				openFaults[e.Detail] = q[1:]
			}
		}
	}
	for _, q := range openFaults {
		for _, i := range q {
			active[i] = true // never ended
		}
	}
	type pick struct {
		idx  int
		tier int // 0 faults, 1 client ops, 2 storage, 3 commands
	}
	var picks []pick
	for i := 0; i < last; i++ {
		e := &h.Events[i]
		switch {
		case e.Proc == "world" && e.Kind == event.KindFault:
			if active[i] {
				picks = append(picks, pick{i, 0})
			}
		case e.T < from:
		case worldKinds[e.Kind] && !involved[e.Proc] && e.Op == "":
			picks = append(picks, pick{i, 0})
		case involved[e.Proc]:
			picks = append(picks, pick{i, 1})
		case involved[e.Peer] && (e.Kind == event.KindStoreWrite || e.Kind == event.KindStoreRead):
			picks = append(picks, pick{i, 2})
		case involved[e.Peer]:
			picks = append(picks, pick{i, 3})
		}
	}
	if len(picks) > MaxSliceEvents {
		// Keep the lowest tiers, latest first within a tier.
		slices.SortFunc(picks, func(a, b pick) int {
			if c := cmp.Compare(a.tier, b.tier); c != 0 {
				return c
			}
			return cmp.Compare(b.idx, a.idx)
		})
		picks = picks[:MaxSliceEvents]
		slices.SortFunc(picks, func(a, b pick) int { return cmp.Compare(a.idx, b.idx) })
	}
	out := make([]Event, len(picks))
	for i, p := range picks {
		out[i] = h.Events[p.idx]
	}
	return out
}
