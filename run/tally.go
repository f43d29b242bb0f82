package run

import (
	"time"

	"github.com/locksim/locksim/checker"
)

// Tally counts runs by outcome.
type Tally struct {
	Runs          int
	Unsafe        int
	Liveness      int
	Unknown       int
	Overlap       int // runs with a lease overlap
	Resource      int // runs with a resource violation
	Ownership     int // runs with an ownership violation
	Stale         int // runs with a stale section (a holder acted on a dead lease)
	StaleAccepted int // runs in which the storage accepted a stale write
	Fenced        int // runs in which the storage refused an operation
	Starved       int // runs in which a client made no progress after the heal
	Unfired       int // runs in which a targeted pause never fired
	// OwnershipOnly counts the unsafe runs of class ownership (no double
	// hold, the resource intact: checker.ClassOwnership).
	OwnershipOnly int
	// Injected, Reached and Bit sum the runs' faults by how far they got;
	// NoBite counts runs that injected faults none of which bit;
	// ClockUnreached runs with a client clock set wrong that the lock
	// never read (a library: one bubble has one clock).
	Injected, Reached, Bit int
	NoBite                 int
	ClockUnreached         int
	FirstUnsafe            uint64
	HasUnsafe              bool
	// CPU sums the runs' measured CPU time (Outcome.CPU).
	CPU time.Duration
}

// Add counts one run of the given seed.
func (t *Tally) Add(o Outcome, seed uint64) {
	t.Runs++
	t.CPU += o.CPU
	if o.StaleSections > 0 {
		t.Stale++
	}
	if o.StaleAccepted > 0 {
		t.StaleAccepted++
	}
	if o.FencedRejections > 0 {
		t.Fenced++
	}
	if o.Starved > 0 {
		t.Starved++
	}
	if o.Unfired > 0 {
		t.Unfired++
	}
	if o.Class == checker.ClassOwnership {
		t.OwnershipOnly++
	}
	t.Injected += o.Injected
	t.Reached += o.Reached
	t.Bit += o.Bit
	if o.Injected > 0 && o.Bit == 0 {
		t.NoBite++
	}
	if o.ClockUnreached > 0 {
		t.ClockUnreached++
	}
	switch o.Verdict {
	case checker.VerdictUnsafe:
		t.Unsafe++
		if !t.HasUnsafe || seed < t.FirstUnsafe {
			t.FirstUnsafe, t.HasUnsafe = seed, true
		}
	case checker.VerdictLiveness:
		t.Liveness++
	case checker.VerdictSafe:
		// counted by Safe: the runs neither unsafe, liveness nor unknown
	default:
		t.Unknown++ // unknown, or no verdict at all: never counted safe
	}
	if o.LeaseOverlaps > 0 {
		t.Overlap++
	}
	if o.ResourceViolations > 0 {
		t.Resource++
	}
	if o.OwnershipViolations > 0 {
		t.Ownership++
	}
}

// Untested says why a group of runs (a report's cell, or one run) does
// not test its scenario ("" when it does): in every run a client clock
// was wrong and the lock never read it, and no fault bit (a library
// reads time.Now: slow-client-clocks × a library); or faults were
// injected and none bit in any run. Only a safe verdict is drawn
// untested (reports.CellResult.Untested, the real arm's summary).
func Untested(runs, clockUnreachedRuns, injected, bit int) string {
	switch {
	case runs > 0 && clockUnreachedRuns == runs && bit == 0:
		return "client clock not reached"
	case injected > 0 && bit == 0:
		return "no fault bit"
	}
	return ""
}

// Untested is Untested of the group's runs.
func (t *Tally) Untested() string { return Untested(t.Runs, t.ClockUnreached, t.Injected, t.Bit) }

// Safe counts the runs judged safe.
func (t *Tally) Safe() int { return t.Runs - t.Unsafe - t.Liveness - t.Unknown }

// Verdict is the cell rule, the one verdict of a group of runs that the
// report, the sweep and the built-in expectations use: unsafe if any run
// was unsafe (one counterexample is enough), otherwise the verdict most
// runs got, ties going to the more severe (liveness, then unknown). A lock
// that starves a client in 1 run of 20 is safe by this rule, its liveness
// count shown beside it, not called a liveness failure: over many seeds a
// rare stall is a figure, not the design's verdict. No runs: safe
// (nothing was seen).
func (t *Tally) Verdict() checker.Verdict {
	safe := t.Safe()
	switch {
	case t.Unsafe > 0:
		return checker.VerdictUnsafe
	case t.Liveness > 0 && t.Liveness >= safe && t.Liveness >= t.Unknown:
		return checker.VerdictLiveness
	case t.Unknown > 0 && t.Unknown >= safe:
		return checker.VerdictUnknown
	}
	return checker.VerdictSafe
}

// WorstVerdict is the parity rule, for comparing the two arms of a cell
// (internal/realarm/parity) run a few times each: the worst verdict any run got,
// unsafe, then liveness, then unknown, then safe. Unlike Verdict, 1
// liveness run of 20 makes the group liveness: with a handful of real runs
// a minority is still a disagreement worth showing, and the simulator's
// arm must be read by the same rule to be compared. No runs: safe.
func (t *Tally) WorstVerdict() checker.Verdict {
	switch {
	case t.Unsafe > 0:
		return checker.VerdictUnsafe
	case t.Liveness > 0:
		return checker.VerdictLiveness
	case t.Unknown > 0:
		return checker.VerdictUnknown
	}
	return checker.VerdictSafe
}
