// Package search is the fault-schedule search that locktest.Find and
// 'locksim search' share: how a case (a world seed and a fault schedule)
// is drawn from a case seed, which case seeds a search tries and in what
// order, which judged runs it stops at, and how a found run is shrunk. It
// knows nothing of testing.T: the caller runs each case (in its own
// bubble, as its own world) and says whether it is the one sought.
package search

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// Case is one case of a search: a world seed and a fault schedule.
type Case struct {
	Seed   uint64
	Faults []faults.Fault
}

// Cases draws a case: the world's seed in [1, 2^32], then the schedule
// (the order rapid.Check-driven searches drew them in, so a case seed
// draws the same case it always did).
func Cases(schedules *rapid.Generator[[]faults.Fault]) *rapid.Generator[Case] {
	return rapid.Custom(func(t *rapid.T) Case {
		seed := rapid.Uint64Range(1, 1<<32).Draw(t, "seed")
		return Case{Seed: seed, Faults: schedules.Draw(t, "faults")}
	})
}

// Search is one search: Replay's case seeds first, then Checks cases
// drawn from the case seeds Seed, Seed+1, Seed+3, Seed+6, ... (the
// sequence rapid.Check uses, so a pinned search finds what it found when
// it ran under rapid.Check with -rapid.seed set to Seed).
type Search struct {
	Cases  *rapid.Generator[Case]
	Seed   uint64
	Checks int
	// Replay are case seeds tried before the drawn ones (a failing case
	// kept from an earlier search).
	Replay []uint64
	// Try runs one case and reports whether it is the one sought; an
	// error ends the search with it.
	Try func(c Case) (bool, error)
}

// Found is the case a search stopped at.
type Found struct {
	Case     Case
	CaseSeed uint64
	// Tried is how many cases were tried up to and including it
	// (replayed ones included).
	Tried int
	// Replayed is 1 + its index in Search.Replay, or 0 for a drawn case.
	Replayed int
}

// Run tries the cases in order and returns the first that Try sought, or
// nil when none was.
func (s Search) Run() (*Found, error) {
	if s.Cases == nil || s.Try == nil {
		return nil, fmt.Errorf("search: no case generator or no Try")
	}
	tried := 0
	try := func(caseSeed uint64) (*Found, error) {
		c := s.Cases.Example(int(caseSeed))
		tried++
		ok, err := s.Try(c)
		if err != nil || !ok {
			return nil, err
		}
		return &Found{Case: c, CaseSeed: caseSeed, Tried: tried}, nil
	}
	for i, cs := range s.Replay {
		f, err := try(cs)
		if err != nil {
			return nil, err
		}
		if f != nil {
			f.Replayed = i + 1
			return f, nil
		}
	}
	seed := s.Seed
	for i := range s.Checks {
		seed += uint64(i)
		f, err := try(seed)
		if f != nil || err != nil {
			return f, err
		}
	}
	return nil, nil
}

// Failed reports whether a judged run is a failure a search stops at:
// unsafe, or a liveness failure (nobody could take the lock after the
// faults healed).
func Failed(r checker.Result) bool {
	return r.Verdict == checker.VerdictUnsafe || r.Verdict == checker.VerdictLiveness
}

// Kind is the violation kind run.Shrink keeps while it shrinks r: the
// first violation's, linearizability for an illegal resource history
// with none, "" when there is none to keep (a liveness failure, a safe
// run).
func Kind(r checker.Result) checker.Kind {
	if r.Verdict != checker.VerdictUnsafe {
		return ""
	}
	switch {
	case r.First != nil:
		return r.First.Kind
	case r.Porcupine == checker.LinIllegal:
		return checker.KindLinearizability
	}
	return ""
}

// Shrink shrinks the unsafe run job makes (its result was r) with
// locksim's one shrinker (run.Shrink: the same seed, fewer faults, fewer
// clients, shorter and earlier faults, while it still fails with the
// same kind of violation). ok is false when r has no kind to keep
// (Kind): the run is returned as found.
func Shrink(b sim.Bubble, job *run.Job, r checker.Result, opt run.ShrinkOptions) (res run.ShrinkResult, ok bool, err error) {
	kind := Kind(r)
	if kind == "" {
		return run.ShrinkResult{}, false, nil
	}
	res, err = run.Shrink(b, job, kind, opt)
	return res, err == nil, err
}
