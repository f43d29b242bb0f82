package redsynckit

import (
	"os"
	"strconv"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locktest"
)

// Side is one side of a known bug: a version and what it must show.
type Side struct {
	ID      string // the entry's id (knownbugs/bugs/ID.yaml)
	Side    string // "buggy" or "fixed"
	Lib     Lib
	Options locktest.Options // Seed is the first search's; run i searches with Seed+i
	// Unsafe: the search must find an unsafe run (the buggy side); false:
	// no search may find one (the fixed side).
	Unsafe bool
}

// Runs is how many searches Measure runs: LOCKSIM_KNOWNBUGS_RUNS, else
// def (small, so the suite's go test stays quick).
func Runs(t *testing.T, def int) int {
	s := os.Getenv("LOCKSIM_KNOWNBUGS_RUNS")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("LOCKSIM_KNOWNBUGS_RUNS=%q: want a positive integer", s)
	}
	return n
}

// Measure runs runs searches of s.Lib, pinned seeds Seed, Seed+1, ...,
// each of Options.Checks schedules, and counts those that found an unsafe
// run. It logs "known-bug ID SIDE bad/runs" and, for the first search that
// found one, the shrunk counterexample with its repro. The buggy side
// fails unless some search found the bug; the fixed side fails on any
// unsafe run, and shows it.
func Measure(t *testing.T, s Side, runs int) {
	t.Helper()
	f := Factory(s.Lib)
	bad := 0
	var first *locktest.Outcome
	var firstSeed uint64
	for i := range runs {
		o := s.Options
		o.Seed += uint64(i)
		out := find(t, f, o)
		if out == nil {
			continue
		}
		if out.Check.Verdict != checker.VerdictUnsafe {
			t.Logf("search %d (seed %d): %s, not counted as unsafe:\n%s", i, o.Seed, out.Check.Verdict, locktest.Describe(t, *out))
			continue
		}
		bad++
		if first == nil {
			first, firstSeed = out, o.Seed
		}
	}
	t.Logf("known-bug %s %s %d/%d", s.ID, s.Side, bad, runs)
	if first != nil {
		d, note := *first, ""
		if s.Options.ExpectClass != "" {
			// Drawn by the class-filtered loop below, not shrunk: keep
			// Describe from saying it was.
			d.Tried, note = 0, ", drawn, not shrunk"
		}
		t.Logf("first found (search seed %d, schedule %d%s):\n%s", firstSeed, first.Tried, note, locktest.Describe(t, d))
	}
	if first == nil {
		t.Logf("(each search: %d schedules)", s.Options.Checks)
	}
	switch {
	case s.Unsafe && bad == 0:
		t.Fatalf("%s %s: no search of %d found it unsafe", s.ID, s.Side, runs)
	case !s.Unsafe && bad > 0:
		t.Fatalf("%s %s: %d of %d searches found it unsafe", s.ID, s.Side, bad, runs)
	}
}

// find is locktest.Find, or, when o.ExpectClass is set, a search for that
// class of violation only: locktest.Find stops at the first unsafe run of
// any class (under client pauses without fencing, the late write every
// lease lock makes), so it would hide the class a bug is about behind
// another. It draws o.Checks schedules from locktest.Schedules(o), as
// Find does, with world seeds and schedules from the search seed o.Seed,
// runs each with locktest.Run and returns the first run whose violation
// is of the class, unshrunk (Describe prints its repro).
func find(t *testing.T, f locktest.Factory, o locktest.Options) *locktest.Outcome {
	t.Helper()
	if o.ExpectClass == "" {
		return locktest.Find(t, f, o)
	}
	gen := locktest.Schedules(o)
	for i := range o.Checks {
		caseSeed := int(o.Seed)*100_000 + i
		schedule := gen.Example(caseSeed)
		out := locktest.Run(t, f, o, uint64(caseSeed)+1, schedule)
		if out.Check.Verdict == checker.VerdictUnsafe && out.Check.Class == o.ExpectClass {
			// Not shrunk: the drawn schedule itself (Measure's log says so).
			out.Tried, out.FromFaults, out.FromClients = i+1, len(schedule), out.Clients
			return &out
		}
	}
	return nil
}
