package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/locksim/locksim/event"
)

// Verdict is a run's verdict (Result.Verdict). Its values are stable
// names, printed and in every JSON output (results.json: docs/CLI.md).
type Verdict string

// The verdicts, from worst to best for a lock: unsafe (its claim broke),
// liveness (no progress after the heal, or unavailable too long),
// unknown (the run could not be judged completely), safe.
const (
	VerdictSafe     Verdict = "safe"
	VerdictUnsafe   Verdict = "unsafe"
	VerdictLiveness Verdict = "liveness"
	VerdictUnknown  Verdict = "unknown"
)

// Verdicts lists the verdicts in a fixed order (tables, tallies).
var Verdicts = []Verdict{VerdictSafe, VerdictUnsafe, VerdictLiveness, VerdictUnknown}

// Fencing values of History.Fencing: event's, named here for the
// checkers' readers.
const (
	FenceNone           = event.FenceNone
	FenceMaxToken       = event.FenceMaxToken
	FenceMaxTokenStrict = event.FenceMaxTokenStrict
	FenceOwnerCAS       = event.FenceOwnerCAS
	FenceVersion        = event.FenceVersion
)

// What a lock claims (Result.Claim).
const (
	ClaimMutualExclusion = "mutual-exclusion" // no fencing: the lock itself must exclude
	ClaimResourceSafety  = "resource-safety"  // fencing: the resource must stay right
)

// DefaultMaxEvents caps the events Check considers (Options.MaxEvents).
// Beyond it the rest of the history is ignored and the result is treated as
// capped: "unknown" at best, liveness not judged.
const DefaultMaxEvents = 20_000_000

// Options bound and tune Check. The zero value is the defaults.
type Options struct {
	// PorcupineTimeout is porcupine's wall-clock budget (default
	// DefaultPorcupineTimeout); at the bound its answer is "unknown".
	PorcupineTimeout time.Duration
	// MaxSections caps the sections handed to porcupine (default
	// DefaultMaxSections); above it the answer is "unknown".
	MaxSections int
	// SkipPorcupine leaves the linearizability check out ("skipped"): for
	// callers inside a synctest bubble or in a hurry. Storage truth still
	// runs.
	SkipPorcupine bool
	// MaxUnavailable, when > 0, makes an unavailability window longer than
	// it a liveness failure; 0 only reports the window.
	MaxUnavailable time.Duration
	// MaxEvents caps the events considered (default DefaultMaxEvents).
	MaxEvents int
	// RequireFairness makes a client that never progressed after the heal
	// while others did a liveness failure (it is a fairness figure
	// otherwise; History.Fair does the same for designs that promise it).
	RequireFairness bool
}

// Kind is a kind of violation (Violation.Kind): a stable name, printed
// and in every JSON output.
type Kind string

// The violation kinds.
const (
	// KindLeaseOverlap: two clients believed they held the lock at once.
	KindLeaseOverlap Kind = "lease-overlap"
	// KindResource: the storage's own record shows a lost update or a
	// stale write accepted.
	KindResource Kind = "resource"
	// KindLinearizability: porcupine found the resource history not
	// linearizable.
	KindLinearizability Kind = "linearizability"
	// KindOwnership: a release or renewal acted on a lock another client
	// held.
	KindOwnership Kind = "ownership"
)

// Class says which claim an unsafe run broke (Result.Class). locksim's
// one definition of unsafe: the lock's claim broke in the run, in one of
// three ways, worst first:
//
//   - ClassDoubleHold: two clients believed they held the lock at the same
//     instant (a lease overlap; not counted for a fenced lock, whose claim
//     is the resource's).
//   - ClassResource: the protected resource broke: the storage lost an
//     update or accepted a stale write, or porcupine found the clients'
//     history not linearizable.
//   - ClassOwnership: neither of those, but a client deleted or re-timed
//     the lock key while another client held it (a release or renewal of
//     a lock it no longer held): the other holder's lease was cut short,
//     though no second holder acted on it in this run.
//
// It is event.Class, declared once with the history's vocabulary.
type Class = event.Class

// The classes of an unsafe run.
const (
	ClassDoubleHold = event.ClassDoubleHold
	ClassResource   = event.ClassResource
	ClassOwnership  = event.ClassOwnership
)

// Classes lists the classes, worst first.
var Classes = []Class{ClassDoubleHold, ClassResource, ClassOwnership}

// Violation is the first verdict-relevant violation, for counterexamples.
type Violation struct {
	Kind    Kind     `json:"kind"` // lease-overlap | resource | linearizability | ownership
	T       int64    `json:"t_ns"` // true time the violation shows
	Since   int64    `json:"since_ns"`
	Clients []string `json:"clients"` // the involved clients
	Detail  string   `json:"detail"`
	// Cause says why the first holder's key went away (Cause), when the
	// caller had the key log to tell it ("" otherwise).
	Cause string `json:"cause,omitempty"`
}

// Result is the checkers' judgement of one history.
type Result struct {
	Verdict Verdict `json:"verdict"` // safe | unsafe | liveness | unknown
	// Class is an unsafe run's class (double-hold | resource | ownership);
	// "" for any other verdict.
	Class   Class    `json:"class,omitempty"`
	Claim   string   `json:"claim"`   // mutual-exclusion | resource-safety
	Reasons []string `json:"reasons"` // one line each, verdict-relevant first

	LeaseOverlaps int      `json:"lease_overlaps"`
	OverlapNS     int64    `json:"lease_overlap_ns"` // total length of the overlaps
	FirstOverlap  *Overlap `json:"first_overlap,omitempty"`

	// ResourceViolations counts the storage-truth violations (exact).
	ResourceViolations     int                `json:"resource_violations"`
	FirstResourceViolation *ResourceViolation `json:"first_resource_violation,omitempty"`
	// DuplicateWrites counts accepted writes that repeated the previous one
	// exactly (see StorageTruthReport): reported, not violations.
	DuplicateWrites int `json:"duplicate_writes"`
	// Porcupine is porcupine's verdict on the client-side history: ok |
	// illegal | unknown | skipped; Linearizability has the details and the
	// search record for WriteVisualization.
	Porcupine       string          `json:"porcupine"`
	Linearizability Linearizability `json:"linearizability"`

	OwnershipViolations     int                 `json:"ownership_violations"`
	FirstOwnershipViolation *OwnershipViolation `json:"first_ownership_violation,omitempty"`

	Liveness LivenessReport `json:"liveness"`

	// Stale is what fencing is for: sections acted on after the lease
	// ended, stale writes accepted, operations the storage refused.
	// Reported, never a verdict by itself (resource safety decides).
	Stale StaleReport `json:"stale"`

	// First is the earliest violation that made the verdict unsafe (nil
	// otherwise).
	First *Violation `json:"first_violation,omitempty"`
	// Events is the number of events considered; Capped is true when the
	// history was capped (by its producer or by Options.MaxEvents).
	Events int  `json:"events"`
	Capped bool `json:"capped"`
}

// FirstViolationTime is the true time the first verdict-relevant violation
// shows, or -1 when there is none.
func (r Result) FirstViolationTime() int64 {
	if r.First == nil {
		return -1
	}
	return r.First.T
}

// Fenced reports whether the history's lock relies on a fencing resource.
func (h History) Fenced() bool { return h.Fencing != "" && h.Fencing != FenceNone }

// Check runs every checker on h and composes the verdict:
//
//   - the claim is mutual exclusion without fencing (Fencing "" or "none"),
//     resource safety with it (lease overlaps are then reported, not
//     violations);
//   - unsafe: resource violations, porcupine illegal, or (no fencing) lease
//     overlaps or ownership violations;
//   - else liveness: a liveness failure;
//   - else unknown: the history was capped or porcupine answered unknown;
//   - else safe.
//
// Porcupine starts goroutines and timers: call Check outside any synctest
// bubble, or set Options.SkipPorcupine.
func Check(h History, o Options) Result {
	if o.MaxEvents <= 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if len(h.Events) > o.MaxEvents {
		h.Events = h.Events[:o.MaxEvents]
		h.Capped = true
		if n := len(h.Events); n > 0 && h.Events[n-1].T < h.End {
			h.End = h.Events[n-1].T
		}
	}
	r := Result{Claim: ClaimMutualExclusion, Events: len(h.Events), Capped: h.Capped}
	fenced := h.Fenced()
	if fenced {
		r.Claim = ClaimResourceSafety
	}
	var firsts []Violation

	// Lease overlap.
	holds := Holds(h.LockOps(), h.End)
	overlaps := Overlaps(holds)
	r.LeaseOverlaps = len(overlaps)
	for _, ov := range overlaps {
		r.OverlapNS += ov.End - ov.Start
	}
	if len(overlaps) > 0 {
		ov := overlaps[0]
		r.FirstOverlap = &ov
		line := fmt.Sprintf("lease overlap: %d, first %s and %s both believed they held the lock from t=%v for %v (total %v)",
			len(overlaps), ov.A, ov.B, time.Duration(ov.Start), time.Duration(ov.End-ov.Start), time.Duration(r.OverlapNS))
		if fenced {
			r.Reasons = append(r.Reasons, line+"; not a violation: the lock relies on "+string(h.Fencing)+" fencing")
		} else {
			r.Reasons = append(r.Reasons, line)
			firsts = append(firsts, Violation{Kind: KindLeaseOverlap, T: ov.Start, Clients: []string{ov.A, ov.B},
				Since: min(acquireCallBefore(h, ov.A, ov.Start), acquireCallBefore(h, ov.B, ov.Start)), Detail: line})
		}
	}

	// Resource: storage truth, then porcupine.
	truth := StorageTruth(h)
	n := truth.Violations
	r.ResourceViolations, r.DuplicateWrites = n, truth.Duplicates
	if truth.Duplicates > 0 {
		r.Reasons = append(r.Reasons, fmt.Sprintf("resource: %d accepted writes were exact repeats of the previous one (one request delivered twice); not violations", truth.Duplicates))
	}
	if n > 0 {
		v := truth.Listed[0]
		r.FirstResourceViolation = &v
		line := fmt.Sprintf("resource: %s broke the %s, first: %s", count(n, "accepted write", "accepted writes"), h.Resource, v)
		r.Reasons = append(r.Reasons, line)
		clients := []string{v.Client}
		since := acquireCallBefore(h, v.Client, v.T)
		if v.PreviousClient != "" && v.PreviousClient != v.Client {
			clients = append(clients, v.PreviousClient)
			since = min(since, acquireCallBefore(h, v.PreviousClient, v.PreviousT))
		}
		firsts = append(firsts, Violation{Kind: KindResource, T: v.T, Since: since, Clients: clients, Detail: line})
	}
	switch {
	case resourceStep(h.Resource) == 0:
		r.Linearizability = Linearizability{Result: LinSkipped, Why: "no resource"}
	case o.SkipPorcupine:
		r.Linearizability = Linearizability{Result: LinSkipped, Why: "skipped by the caller"}
	default:
		r.Linearizability = Linearizable(h, o.PorcupineTimeout, o.MaxSections)
	}
	r.Porcupine = r.Linearizability.Result
	switch r.Porcupine {
	case LinIllegal:
		line := "linearizability: porcupine found the client history illegal: " + r.Linearizability.Why
		if st := r.Linearizability.Stuck; st != nil {
			s := st.Input.(Section)
			line += fmt.Sprintf(" (stuck at %s's section from t=%v)", s.Client, time.Duration(st.Call))
		}
		// Where porcupine gets stuck is an approximation that can differ
		// between calls on the same history; the storage truth is exact.
		// So the first violation is porcupine's only when the storage
		// truth found none (shrinking and reports key on it).
		if st := r.Linearizability.Stuck; st != nil && r.ResourceViolations == 0 {
			s := st.Input.(Section)
			firsts = append(firsts, Violation{Kind: KindLinearizability, T: st.Return, Since: min(st.Call, acquireCallBefore(h, s.Client, st.Call)),
				Clients: []string{s.Client}, Detail: line})
		}
		r.Reasons = append(r.Reasons, line)
	case LinUnknown:
		r.Reasons = append(r.Reasons, "linearizability unknown: "+r.Linearizability.Why)
	}

	// Ownership.
	r.OwnershipViolations, r.FirstOwnershipViolation = Ownership(h)
	if v := r.FirstOwnershipViolation; v != nil {
		line := fmt.Sprintf("ownership: %s of a lock no longer held, first: %s", count(r.OwnershipViolations, "release/renewal", "releases/renewals"), v)
		if fenced {
			r.Reasons = append(r.Reasons, line+"; not a violation: the lock relies on "+string(h.Fencing)+" fencing")
		} else {
			r.Reasons = append(r.Reasons, line)
			firsts = append(firsts, Violation{Kind: KindOwnership, T: v.At, Clients: []string{v.Client, v.Other},
				Since: min(acquireCallBefore(h, v.Client, v.AcquiredAt), acquireCallBefore(h, v.Other, v.OtherAt)), Detail: line})
		}
	}

	// Liveness.
	r.Liveness = Liveness(h, holds, o)

	// Stale sections and fenced rejections.
	r.Stale = Stale(h, holds)

	// Compose.
	if len(firsts) > 0 {
		f := slices.MinFunc(firsts, func(a, b Violation) int { return cmp.Compare(a.T, b.T) })
		r.First = &f
	}
	switch {
	case !fenced && r.LeaseOverlaps > 0:
		r.Verdict, r.Class = VerdictUnsafe, ClassDoubleHold
	case r.ResourceViolations > 0 || r.Porcupine == LinIllegal:
		r.Verdict, r.Class = VerdictUnsafe, ClassResource
	case !fenced && r.OwnershipViolations > 0:
		r.Verdict, r.Class = VerdictUnsafe, ClassOwnership
	case r.Liveness.Failure:
		r.Verdict = VerdictLiveness
	case h.Capped || r.Porcupine == LinUnknown:
		r.Verdict = VerdictUnknown
	default:
		r.Verdict = VerdictSafe
	}
	r.Reasons = append(r.Reasons, r.Liveness.Reasons...)
	if h.Capped {
		r.Reasons = append(r.Reasons, fmt.Sprintf("history capped after %d events: the rest was not checked", len(h.Events)))
	}
	if r.Verdict == VerdictSafe {
		// The verdict's own line first; what else was seen (overlaps a
		// fence made harmless, fairness figures) after it.
		r.Reasons = append([]string{safeLine(h, r)}, r.Reasons...)
	}
	if r.Stale.Sections > 0 || r.Stale.FencedRejections > 0 {
		r.Reasons = append(r.Reasons, "fencing: "+r.Stale.String())
	}
	return r
}

func safeLine(h History, r Result) string {
	s := "safe: "
	if h.Fenced() {
		s += "the resource stayed right"
	} else {
		s += "no lease overlap"
	}
	if r.Porcupine == LinOK {
		s += fmt.Sprintf("; porcupine linearized %d sections", r.Linearizability.Sections)
	}
	switch {
	case r.Liveness.Judged && len(r.Liveness.Starved) == 0:
		s += "; every client made progress after the heal"
	case r.Liveness.Judged:
		s += fmt.Sprintf("; progress after the heal (%d of %d clients starved: a fairness figure)", len(r.Liveness.Starved), len(h.Clients))
	}
	return s
}

// acquireCallBefore is the call time of c's latest acquisition that
// succeeded at or before t, or, for designs without a lock, of c's latest
// read call at or before t; t itself when there is neither.
func acquireCallBefore(h History, c string, t int64) int64 {
	var okID int64 = -1
	readCall := t
	i := upperBound(h.Events, t)
	for j := i - 1; j >= 0; j-- {
		e := &h.Events[j]
		if e.Proc != c {
			continue
		}
		switch {
		case okID < 0 && e.Op == event.OpAcquire && e.Kind == event.KindOK:
			okID = e.OpID
		case okID >= 0 && e.Op == event.OpAcquire && e.Kind == event.KindCall && e.OpID == okID:
			return e.T
		case okID < 0 && e.Op == event.OpRead && e.Kind == event.KindCall && readCall == t:
			readCall = e.T
		}
	}
	return readCall
}

// upperBound returns the index of the first event after t (events are in
// time order).
func upperBound(evs []Event, t int64) int {
	i, _ := slices.BinarySearchFunc(evs, t+1, func(e Event, t int64) int { return cmp.Compare(e.T, t) })
	return i
}

// count is "1 accepted write", "2 accepted writes".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
