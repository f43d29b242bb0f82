package gozerokit

import (
	"os"
	"strconv"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locktest"
)

// Side is one side of a known bug: the pinned version and what it must
// show.
type Side struct {
	ID      string           // the entry's id (knownbugs/bugs/ID.yaml)
	Side    string           // "buggy" or "fixed"
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

// Measure runs runs searches of this module's go-zero (locktest.Find with
// pinned seeds Seed, Seed+1, ..., each of Options.Checks schedules) and
// counts those that found an unsafe run, as knownbugs/go/redsynckit's
// Measure does. It logs "known-bug ID SIDE bad/runs" and, for the first
// search that found one, the shrunk counterexample with its repro. The
// buggy side fails unless some search found the bug; the fixed side fails
// on any unsafe run, and shows it.
func Measure(t *testing.T, s Side, runs int) {
	t.Helper()
	bad := 0
	var first *locktest.Outcome
	var firstSeed uint64
	for i := range runs {
		o := s.Options
		o.Seed += uint64(i)
		out := locktest.Find(t, Factory, o)
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
		t.Logf("first found (search seed %d, schedule %d):\n%s", firstSeed, first.Tried, locktest.Describe(t, *first))
	} else {
		t.Logf("(each search: %d schedules)", s.Options.Checks)
	}
	switch {
	case s.Unsafe && bad == 0:
		t.Fatalf("%s %s: no search of %d found it unsafe", s.ID, s.Side, runs)
	case !s.Unsafe && bad > 0:
		t.Fatalf("%s %s: %d of %d searches found it unsafe", s.ID, s.Side, bad, runs)
	}
}
