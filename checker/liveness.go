package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// LivenessReport is what the liveness checks found. The liveness phase is
// [Heal, End] (the whole run when Heal ≤ 0). Progress is an acquire ok; for
// designs that exclude nothing (Fencing "version") it is a write ok, or a
// read that found the pool sold out.
type LivenessReport struct {
	// Judged is false when the history cannot tell (capped, or no liveness
	// phase: Heal ≥ End); Starved and Deadlock are then not failures.
	Judged     bool  `json:"judged"`
	PhaseStart int64 `json:"phase_start_ns"`
	// Starved lists the clients that made no progress in the liveness
	// phase, sorted.
	Starved []string `json:"starved,omitempty"`
	// LongestUnavailable is the longest stretch of true time in which some
	// client was trying to acquire (between an acquire call and its return)
	// and no client believed it held the lock (Holds); it starts at
	// LongestUnavailableStart. Reported, and a failure only above
	// Options.MaxUnavailable when that is set.
	LongestUnavailableNS    int64 `json:"longest_unavailable_ns"`
	LongestUnavailableStart int64 `json:"longest_unavailable_start_ns"`
	// Deadlock: no client made progress from DeadlockSince (the last
	// progress, before the liveness phase; 0 if none ever) through End,
	// while clients kept trying in the liveness phase.
	Deadlock      bool  `json:"deadlock"`
	DeadlockSince int64 `json:"deadlock_since_ns,omitempty"`
	// Failure is the verdict: starved clients, a deadlock, or an
	// unavailability window above the bound.
	Failure bool     `json:"failure"`
	Reasons []string `json:"reasons,omitempty"`
}

// progress reports whether e is progress for the lock's design.
func progress(h History, e *Event) bool {
	if h.Fencing == FenceVersion {
		switch {
		case e.Op == "write" && e.Kind == "ok":
			return true
		case e.Op == "read" && e.Kind == "ok" && h.Resource == ResourcePool && e.Value <= 0:
			return true // sold out: the round completed
		}
		return false
	}
	return e.Op == "acquire" && e.Kind == "ok"
}

// trying reports whether e is a client's attempt to make progress.
func trying(h History, e *Event) bool {
	if e.Kind != "call" {
		return false
	}
	if h.Fencing == FenceVersion {
		return e.Op == "read" || e.Op == "write"
	}
	return e.Op == "acquire"
}

// Liveness checks, in O(n log n):
//
//	(a) every client makes progress in the liveness phase;
//	(b) the longest window in which some client was trying to acquire and
//	    nobody believed it held the lock (holds: the belief intervals);
//	(c) deadlock: no progress from before the phase through End while
//	    clients kept trying.
//
// maxUnavailable > 0 makes a (b) window longer than it a failure.
func Liveness(h History, holds []Hold, maxUnavailable time.Duration) LivenessReport {
	r := LivenessReport{PhaseStart: max(h.Heal, 0)}
	clients := h.Clients
	if len(clients) == 0 {
		clients = historyClients(h)
	}
	progressed := map[string]bool{}
	lastProgress := int64(-1)
	triedInPhase := false
	for i := range h.Events {
		e := &h.Events[i]
		if progress(h, e) {
			lastProgress = e.T
			if e.T >= r.PhaseStart {
				progressed[e.Proc] = true
			}
		}
		if e.T >= r.PhaseStart && trying(h, e) {
			triedInPhase = true
		}
	}
	r.LongestUnavailableNS, r.LongestUnavailableStart = unavailable(h, holds)
	r.Judged = !h.Capped && r.PhaseStart < h.End
	switch {
	case h.Capped:
		r.Reasons = append(r.Reasons, "liveness not judged: the history was capped")
	case r.PhaseStart >= h.End:
		r.Reasons = append(r.Reasons, "liveness not judged: no liveness phase (heal at or after the end)")
	}
	if r.Judged {
		for _, c := range clients {
			if !progressed[c] {
				r.Starved = append(r.Starved, c)
			}
		}
		slices.Sort(r.Starved)
		if len(r.Starved) > 0 {
			r.Failure = true
			what := "acquired the lock"
			if h.Fencing == FenceVersion {
				what = "completed a write"
			}
			r.Reasons = append(r.Reasons, fmt.Sprintf("liveness: %s never %s in the %v after the heal",
				strings.Join(r.Starved, ", "), what, time.Duration(h.End-r.PhaseStart)))
		}
		if lastProgress < r.PhaseStart && triedInPhase {
			r.Deadlock, r.DeadlockSince, r.Failure = true, max(lastProgress, 0), true
			r.Reasons = append(r.Reasons, fmt.Sprintf("liveness: deadlock, no progress from t=%v through the end while clients kept trying",
				time.Duration(r.DeadlockSince)))
		}
	}
	if maxUnavailable > 0 && r.LongestUnavailableNS > int64(maxUnavailable) {
		r.Failure = true
		r.Reasons = append(r.Reasons, fmt.Sprintf("liveness: the lock was unavailable for %v from t=%v while clients were trying (bound %v)",
			time.Duration(r.LongestUnavailableNS), time.Duration(r.LongestUnavailableStart), maxUnavailable))
	}
	return r
}

// historyClients lists the processes that ran client operations, in order
// of appearance.
func historyClients(h History) []string {
	seen := map[string]bool{}
	var out []string
	for i := range h.Events {
		e := &h.Events[i]
		if e.Op != "" && !seen[e.Proc] {
			seen[e.Proc] = true
			out = append(out, e.Proc)
		}
	}
	return out
}

// unavailable returns the longest window (length, start) in which some
// client was between an acquire call and its return (no return: until
// End) and no belief interval was open.
func unavailable(h History, holds []Hold) (int64, int64) {
	type edge struct {
		t      int64
		try    int // +1 / -1
		hold   int // +1 / -1
		prefer int // at equal times, ends before starts
	}
	var edges []edge
	type opKey struct {
		proc string
		id   int64
	}
	open := map[opKey]int64{} // pending acquire -> call time
	key := func(e *Event) opKey { return opKey{e.Proc, e.OpID} }
	for i := range h.Events {
		e := &h.Events[i]
		if e.Op != "acquire" {
			continue
		}
		switch e.Kind {
		case "call":
			open[key(e)] = e.T
		case "ok", "fail", "unknown":
			k := key(e)
			if t, ok := open[k]; ok {
				delete(open, k)
				if e.T > t {
					edges = append(edges, edge{t: t, try: +1, prefer: 1}, edge{t: e.T, try: -1})
				}
			}
		}
	}
	for _, t := range open {
		if h.End > t {
			edges = append(edges, edge{t: t, try: +1, prefer: 1}, edge{t: h.End, try: -1})
		}
	}
	for _, hd := range holds {
		edges = append(edges, edge{t: hd.Start, hold: +1, prefer: 1}, edge{t: hd.End, hold: -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.prefer, b.prefer)
	})
	var best, bestStart int64
	tries, held := 0, 0
	down := false
	var since int64
	for i := 0; i < len(edges); {
		t := edges[i].t
		for ; i < len(edges) && edges[i].t == t; i++ {
			tries += edges[i].try
			held += edges[i].hold
		}
		now := tries > 0 && held == 0
		switch {
		case now && !down:
			down, since = true, t
		case !now && down:
			down = false
			if t-since > best {
				best, bestStart = t-since, since
			}
		}
	}
	return best, bestStart
}
