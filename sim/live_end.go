package sim

import (
	evt "github.com/locksim/locksim/event"
)

// The liveness phase's early end (Config.EndWhenLive). Liveness is shown
// once every client has acquired the lock after the heal: from then on,
// for a design that promises no fairness and with no unavailability
// bound to watch, the rest of the phase decides no liveness verdict. The
// world then ends at that instant, provided the healed world's
// invariants hold there (else at the next acquisition that finds them
// holding, or at the phase's end as before). Result.LiveAt says when.
//
// The acquisitions are read from the trace's records as flushRecords
// merges them, in process order on the scheduler goroutine: the instant
// depends on the run alone.
type liveEnd struct {
	healAt  int64  // the heal's instant (the checkers' phase start)
	seen    []bool // client i acquired after the heal
	n       int    // how many have
	at      int64  // when liveness was shown (0: not yet)
	pending bool   // a "live" event is queued
}

// noteLive reads one record merged into the trace.
func (w *World) noteLive(ev *Event) {
	// A record made before the heal may be merged just after it: its
	// time, not the merge, says which phase it belongs to.
	if !w.cfg.EndWhenLive || w.phase != phaseLiveness || ev.T < w.live.healAt || w.live.at > 0 || ev.Kind != evt.KindOK || ev.Op != evt.OpAcquire {
		return
	}
	if w.live.seen == nil {
		w.live.seen = make([]bool, len(w.procs))
	}
	i, ok := w.byName[ev.Proc]
	if !ok || i < 0 || i >= len(w.procs) || w.procs[i].name != ev.Proc {
		return
	}
	if !w.live.seen[i] {
		w.live.seen[i] = true
		w.live.n++
	}
	if w.live.n < len(w.procs) || w.live.pending {
		return
	}
	w.live.pending = true
	w.after(w.now(), stepLive, func() {
		w.live.pending = false
		if w.stopping || w.healedInvariants() != nil {
			return // not settled yet: the next acquisition tries again
		}
		w.live.at = w.now()
		w.stop()
	})
}
