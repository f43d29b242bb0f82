package checker

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/event"
)

// LivenessReport is what the liveness checks found. The liveness phase is
// [Heal, End] (the whole run when Heal ≤ 0). Progress is an acquire ok; for
// designs that exclude nothing (Fencing "version") it is a write ok, or a
// read that found the pool sold out.
//
// Liveness fails when, after the heal, clients keep trying and nobody makes
// progress (a deadlock, or a key nobody can ever take), or when an
// unavailability window exceeds Options.MaxUnavailable. One client
// starving while others progress is a fairness figure (Starved,
// LongestWait): a failure only for a design that promises fairness
// (History.Fair) or when the caller asks (Options.RequireFairness).
type LivenessReport struct {
	// Judged is false when the history cannot tell (capped, or no liveness
	// phase: Heal ≥ End); Starved and Deadlock are then not failures.
	Judged     bool  `json:"judged"`
	PhaseStart int64 `json:"phase_start_ns"`
	// Starved lists the clients that made no progress in the liveness
	// phase, sorted (a fairness figure).
	Starved []string `json:"starved,omitempty"`
	// LongestWaitNS is the longest time one client spent trying without
	// progress in the liveness phase (from its first attempt after its last
	// progress, or the heal, to its next progress or the end), by
	// LongestWaitClient (a fairness figure).
	LongestWaitNS     int64  `json:"longest_wait_ns"`
	LongestWaitClient string `json:"longest_wait_client,omitempty"`
	// FairnessRequired: starving clients fail the run: with
	// Options.RequireFairness any starving client; for a design that
	// promises fairness (History.Fair) a starving client whose waiting
	// request a grant in the liveness phase overtook (StarvedOvertaken),
	// since a FIFO lock owes a client that asked late, or held the lock
	// across the heal, nothing within the phase.
	FairnessRequired bool `json:"fairness_required,omitempty"`
	// StarvedOvertaken lists the starved clients whose waiting request a
	// grant in the liveness phase overtook, sorted.
	StarvedOvertaken []string `json:"starved_overtaken,omitempty"`
	// Grants counts the acquisitions of the whole run that began a hold
	// (an acquire ok of a client not already holding: nested ones are not
	// grants), and Overtakes those that overtook an earlier waiting
	// request: another client had called acquire before this grant's
	// call and was still waiting for its answer (Overtaking). A fair
	// (FIFO) lock grants in request order and overtakes none; a fairness
	// figure, never a verdict by itself. FirstOvertake is the first.
	Grants        int       `json:"grants"`
	Overtakes     int       `json:"overtakes"`
	FirstOvertake *Overtake `json:"first_overtake,omitempty"`
	// LongestUnavailable is the longest stretch of true time in which some
	// client was trying to acquire (between an acquire call and its return)
	// and no client believed it held the lock (Holds); it starts at
	// LongestUnavailableStart. Reported, and a failure only above
	// Options.MaxUnavailable when that is set.
	LongestUnavailableNS    int64 `json:"longest_unavailable_ns"`
	LongestUnavailableStart int64 `json:"longest_unavailable_start_ns"`
	// Deadlock: no client made progress from DeadlockSince (the last
	// progress, before the liveness phase; 0 if none ever) through End
	// (whether clients kept trying, or were all stuck).
	Deadlock      bool  `json:"deadlock"`
	DeadlockSince int64 `json:"deadlock_since_ns,omitempty"`
	// Blockers is what held the clients back in the liveness phase: their
	// failed and unknown attempts, by cause and node, most frequent first.
	Blockers []Blocker `json:"blockers,omitempty"`
	// Failure is the verdict: a deadlock, an unavailability window above
	// the bound, or (fairness required) starved clients.
	Failure bool     `json:"failure"`
	Reasons []string `json:"reasons,omitempty"`
}

// Blocker is one cause of failed attempts in the liveness phase.
type Blocker struct {
	// Cause: "not acquired: held by c3", "not acquired: held by no client",
	// "connection reset", "timeout", "fenced", or the error text (cut).
	Cause string `json:"cause"`
	// Node is the node the error names ("" when it names none).
	Node    string   `json:"node,omitempty"`
	Count   int      `json:"count"`
	Clients []string `json:"clients"` // who saw it, sorted
	FirstNS int64    `json:"first_ns"`
}

func (b Blocker) String() string {
	s := fmt.Sprintf("%d× %s", b.Count, b.Cause)
	if b.Node != "" {
		s += " (" + b.Node + ")"
	}
	return s + " [" + strings.Join(b.Clients, ",") + "]"
}

// progress reports whether e is progress for the lock's design.
func progress(h History, e *Event) bool {
	if h.Fencing == FenceVersion {
		switch {
		case e.Op == event.OpWrite && e.Kind == event.KindOK:
			return true
		case e.Op == event.OpRead && e.Kind == event.KindOK && h.Resource == ResourcePool && e.Value <= 0:
			return true // sold out: the round completed
		}
		return false
	}
	return e.Op == event.OpAcquire && e.Kind == event.KindOK
}

// tryOp is the operation by which a client tries to make progress.
func tryOp(h History) event.Op {
	if h.Fencing == FenceVersion {
		return event.OpWrite
	}
	return event.OpAcquire
}

// trying reports whether e is a client's attempt to make progress.
func trying(h History, e *Event) bool {
	if e.Kind != event.KindCall {
		return false
	}
	if h.Fencing == FenceVersion {
		return e.Op == event.OpRead || e.Op == event.OpWrite
	}
	return e.Op == event.OpAcquire
}

// Liveness checks, in O(n log n):
//
//	(a) deadlock: no progress from before the phase through End (the
//	    reason says whether clients kept trying: a call in the phase, or
//	    one still open at it; or were all stuck);
//	(b) the longest window in which some client was trying to acquire and
//	    nobody believed it held the lock (holds: the belief intervals), a
//	    failure above o.MaxUnavailable when that is set;
//	(c) fairness: the clients that made no progress in the phase and the
//	    longest wait, failures only when h.Fair or o.RequireFairness;
//
// and lists what held the clients back (Blockers).
func Liveness(h History, holds []Hold, o Options) LivenessReport {
	r := LivenessReport{PhaseStart: max(h.Heal, 0), FairnessRequired: h.Fair || o.RequireFairness}
	clients := h.Clients
	if len(clients) == 0 {
		clients = historyClients(h)
	}
	type opKey struct {
		proc string
		id   int64
	}
	progressed := map[string]bool{}
	lastProgress := int64(-1)
	triedInPhase := false
	open := map[opKey]bool{} // trying calls not yet returned
	crossed := false
	waitFrom := map[string]int64{} // client -> start of its current wait
	wait := func(c string, until int64) {
		from, ok := waitFrom[c]
		if !ok {
			return
		}
		delete(waitFrom, c)
		if d := until - max(from, r.PhaseStart); until >= r.PhaseStart && d > r.LongestWaitNS {
			r.LongestWaitNS, r.LongestWaitClient = d, c
		}
	}
	for i := range h.Events {
		e := &h.Events[i]
		if !crossed && e.T >= r.PhaseStart {
			crossed = true
			triedInPhase = triedInPhase || len(open) > 0
		}
		k := opKey{e.Proc, e.OpID}
		if trying(h, e) {
			open[k] = true
			if _, ok := waitFrom[e.Proc]; !ok {
				waitFrom[e.Proc] = e.T
			}
			if e.T >= r.PhaseStart {
				triedInPhase = true
			}
		} else if e.Kind != event.KindCall {
			delete(open, k)
		}
		if progress(h, e) {
			lastProgress = e.T
			wait(e.Proc, e.T)
			if e.T >= r.PhaseStart {
				progressed[e.Proc] = true
			}
		}
	}
	if !crossed {
		triedInPhase = triedInPhase || len(open) > 0
	}
	for _, c := range clients {
		wait(c, h.End)
	}
	r.LongestUnavailableNS, r.LongestUnavailableStart = unavailable(h, holds)
	var overtaken map[string]bool
	r.Grants, r.Overtakes, r.FirstOvertake, overtaken = overtaking(h, r.PhaseStart)
	r.Judged = !h.Capped && r.PhaseStart < h.End
	switch {
	case h.Capped:
		r.Reasons = append(r.Reasons, "liveness not judged: the history was capped")
	case r.PhaseStart >= h.End:
		r.Reasons = append(r.Reasons, "liveness not judged: no liveness phase (heal at or after the end)")
	}
	if r.Judged {
		r.Blockers = blockers(h, holds, r.PhaseStart)
		for _, c := range clients {
			if !progressed[c] {
				r.Starved = append(r.Starved, c)
			}
		}
		slices.Sort(r.Starved)
		what := "acquired the lock"
		if h.Fencing == FenceVersion {
			what = "completed a write"
		}
		// The excuse of a key orphaned at the heal holds only for a lock
		// that granted at all: one that never did in the whole run is
		// dead, whatever its lease.
		if lastProgress >= 0 && lastProgress < r.PhaseStart && h.End-r.PhaseStart <= h.LeaseTTL {
			r.Judged, r.Starved = false, nil
			r.Reasons = append(r.Reasons, fmt.Sprintf("liveness not judged: no client %s after the heal, but the liveness phase (%v) is not longer than the lock's lease (%v), for which a key orphaned at the heal may block everyone",
				what, time.Duration(h.End-r.PhaseStart), time.Duration(h.LeaseTTL)))
		} else if lastProgress < r.PhaseStart {
			r.Deadlock, r.DeadlockSince, r.Failure = true, max(lastProgress, 0), true
			how := "while clients kept trying"
			if !triedInPhase {
				how = "and no client even tried: every one was stuck"
			}
			r.Reasons = append(r.Reasons, fmt.Sprintf("liveness: deadlock, no client %s from t=%v through the end (%v after the heal) %s",
				what, time.Duration(r.DeadlockSince), time.Duration(h.End-r.PhaseStart), how))
		} else if len(r.Starved) > 0 {
			line := fmt.Sprintf("fairness: %s never %s in the %v after the heal while others did (longest wait %v, %s)",
				CapList(r.Starved, 10), what, time.Duration(h.End-r.PhaseStart), time.Duration(r.LongestWaitNS), r.LongestWaitClient)
			for _, c := range r.Starved {
				if overtaken[c] {
					r.StarvedOvertaken = append(r.StarvedOvertaken, c)
				}
			}
			switch {
			case o.RequireFairness:
				r.Failure = true
				line = "liveness: " + line + "; fairness is required"
			case h.Fair && len(r.StarvedOvertaken) > 0:
				r.Failure = true
				line = fmt.Sprintf("liveness: %s; the design promises fairness, and %s waited while later requests were granted ahead",
					line, CapList(r.StarvedOvertaken, 10))
			case h.Fair:
				line += "; not a failure: the design promises fairness, but no grant after the heal overtook a starved client's request (it asked late, or held the lock across the heal)"
			default:
				line += "; not a failure: the design promises no fairness"
			}
			r.Reasons = append(r.Reasons, line)
		}
	}
	if o.MaxUnavailable > 0 && r.LongestUnavailableNS > int64(o.MaxUnavailable) {
		r.Failure = true
		r.Reasons = append(r.Reasons, fmt.Sprintf("liveness: the lock was unavailable for %v from t=%v while clients were trying (bound %v)",
			time.Duration(r.LongestUnavailableNS), time.Duration(r.LongestUnavailableStart), o.MaxUnavailable))
	}
	if r.Failure && len(r.Blockers) > 0 {
		var parts []string
		for i, b := range r.Blockers {
			if i == 4 {
				parts = append(parts, fmt.Sprintf("and %d more causes", len(r.Blockers)-i))
				break
			}
			parts = append(parts, b.String())
		}
		r.Reasons = append(r.Reasons, "liveness: what held the clients back after the heal: "+strings.Join(parts, "; "))
	}
	return r
}

// Overtake is one grant that overtook an earlier waiting request.
type Overtake struct {
	Client string `json:"client"`   // granted
	CallNS int64  `json:"call_ns"`  // its acquire call
	AtNS   int64  `json:"at_ns"`    // the grant (acquire ok)
	Waiter string `json:"waiter"`   // the earliest waiting client it overtook
	WaitNS int64  `json:"wait_ns"`  // that client's acquire call
	Ahead  int    `json:"overtook"` // how many waiting requests it overtook
}

func (o Overtake) String() string {
	return fmt.Sprintf("%s, asking at t=%v, was granted at t=%v ahead of %d earlier waiting request(s), first %s's from t=%v",
		o.Client, time.Duration(o.CallNS), time.Duration(o.AtNS), o.Ahead, o.Waiter, time.Duration(o.WaitNS))
}

// Overtaking compares the order of grants with the order of requests, in
// O(n·c) for c clients: each acquire ok that begins a hold (the client
// holds nothing: no acquire ok since its last release call) is a grant;
// it overtakes every other client whose acquire call came before the
// grant's own call and had not returned when the grant came. It returns
// the grants, the grants that overtook at least one such request, and the
// first of those. A FIFO lock's history overtakes none.
func Overtaking(h History) (grants, overtakes int, first *Overtake) {
	grants, overtakes, first, _ = overtaking(h, 0)
	return grants, overtakes, first
}

// overtaking is Overtaking that also returns the clients whose waiting
// request a grant at or after from overtook.
func overtaking(h History, from int64) (grants, overtakes int, first *Overtake, victims map[string]bool) {
	type pending struct {
		call int64
		id   int64
	}
	waiting := map[string]pending{} // client -> its open acquire call
	calls := map[string]int64{}     // client -> call time of its latest acquire
	holding := map[string]bool{}
	var order []string // clients in first-seen order (deterministic scans)
	seen := map[string]bool{}
	for i := range h.Events {
		e := &h.Events[i]
		if e.Op != event.OpAcquire && e.Op != event.OpRelease {
			continue
		}
		if !seen[e.Proc] {
			seen[e.Proc] = true
			order = append(order, e.Proc)
		}
		switch {
		case e.Op == event.OpAcquire && e.Kind == event.KindCall:
			waiting[e.Proc] = pending{call: e.T, id: e.OpID}
			calls[e.Proc] = e.T
		case e.Op == event.OpAcquire && (e.Kind == event.KindOK || e.Kind == event.KindFail || e.Kind == event.KindUnknown):
			if w, ok := waiting[e.Proc]; ok && w.id == e.OpID {
				delete(waiting, e.Proc)
			}
			if e.Kind != event.KindOK || holding[e.Proc] {
				continue
			}
			holding[e.Proc] = true
			grants++
			call, ahead := calls[e.Proc], 0
			var o *Overtake
			for _, c := range order {
				w, ok := waiting[c]
				if c == e.Proc || !ok || w.call >= call {
					continue
				}
				ahead++
				if e.T >= from {
					if victims == nil {
						victims = map[string]bool{}
					}
					victims[c] = true
				}
				if o == nil || w.call < o.WaitNS {
					o = &Overtake{Client: e.Proc, CallNS: call, AtNS: e.T, Waiter: c, WaitNS: w.call}
				}
			}
			if ahead > 0 {
				overtakes++
				if first == nil {
					o.Ahead = ahead
					first = o
				}
			}
		case e.Op == event.OpRelease && e.Kind == event.KindCall:
			holding[e.Proc] = false
		}
	}
	return grants, overtakes, first, victims
}

// linkRE finds the node an error names ("read tcp c0->n1: ...").
var linkRE = regexp.MustCompile(`tcp [^ >]+->([^: ]+):`)

// blockers groups the failed and unknown attempts of the liveness phase by
// cause and node. A refusal ("fail") is attributed to the client whose
// belief covered it, if any.
func blockers(h History, holds []Hold, from int64) []Blocker {
	op := tryOp(h)
	type key struct{ cause, node string }
	byKey := map[key]*Blocker{}
	var order []key
	for i := range h.Events {
		e := &h.Events[i]
		if e.T < from || e.Op != op || (e.Kind != event.KindFail && e.Kind != event.KindUnknown) {
			continue
		}
		k := key{cause: cause(e)}
		if m := linkRE.FindStringSubmatch(e.Detail); m != nil {
			k.node = m[1]
		}
		if e.Kind == event.KindFail && op == event.OpAcquire {
			k.cause = "not acquired: held by no client (the key outlived every belief)"
			for _, hd := range holds {
				if hd.Proc != e.Proc && hd.Start <= e.T && e.T < hd.End {
					k.cause = "not acquired: held by " + hd.Proc
					break
				}
			}
		}
		b, ok := byKey[k]
		if !ok {
			b = &Blocker{Cause: k.cause, Node: k.node, FirstNS: e.T}
			byKey[k] = b
			order = append(order, k)
		}
		b.Count++
		if !slices.Contains(b.Clients, e.Proc) {
			b.Clients = append(b.Clients, e.Proc)
		}
	}
	out := make([]Blocker, 0, len(order))
	for _, k := range order {
		b := *byKey[k]
		slices.Sort(b.Clients)
		out = append(out, b)
	}
	slices.SortStableFunc(out, func(a, b Blocker) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

// cause names the kind of error an attempt ended with.
func cause(e *Event) string {
	d := e.Detail
	switch {
	case strings.Contains(d, "connection reset"), strings.Contains(d, "broken pipe"):
		return "connection reset"
	case strings.Contains(d, "timeout"), strings.Contains(d, "deadline exceeded"):
		return "timeout"
	case strings.Contains(d, "fenced"):
		return "fenced"
	case d == "":
		return string(e.Kind)
	}
	if len(d) > 80 {
		d = d[:80] + "…"
	}
	return d
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
		if e.Op != event.OpAcquire {
			continue
		}
		switch e.Kind {
		case event.KindCall:
			open[key(e)] = e.T
		case event.KindOK, event.KindFail, event.KindUnknown:
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

// CapList joins names with ", ", listing at most max of them and then
// how many more there are: "c1, c2, c3 and 36 more".
func CapList(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
