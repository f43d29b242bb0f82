package run

import (
	"testing"

	"github.com/locksim/locksim/checker"
)

// tallyOf counts runs with the given verdicts, safe ones first.
func tallyOf(safe, unsafe, liveness, unknown int) Tally {
	var t Tally
	seed := uint64(0)
	for _, g := range []struct {
		v checker.Verdict
		n int
	}{{checker.VerdictSafe, safe}, {checker.VerdictUnsafe, unsafe}, {checker.VerdictLiveness, liveness}, {checker.VerdictUnknown, unknown}} {
		for range g.n {
			seed++
			t.Add(Outcome{Verdict: g.v}, seed)
		}
	}
	return t
}

// TestTallyRules pins the two rules a group of runs is read by. The cell
// rule (Tally.Verdict: the report, the sweep, the built-in expectations)
// is unsafe on one unsafe run, else the majority with ties to the more
// severe: 1 liveness run of 20 is a safe cell, its liveness count shown
// beside it. The parity rule (Tally.WorstVerdict: the sim and real arms
// of internal/realarm/parity, a few runs each) is the worst run: the same 1 of 20
// is liveness, a disagreement worth showing.
func TestTallyRules(t *testing.T) {
	cases := []struct {
		name                         string
		safe, unsafe, liveness, unkn int
		cell, worst                  checker.Verdict
	}{
		{"no runs", 0, 0, 0, 0, checker.VerdictSafe, checker.VerdictSafe},
		{"1 unsafe of 20", 19, 1, 0, 0, checker.VerdictUnsafe, checker.VerdictUnsafe},
		{"1 liveness of 20", 19, 0, 1, 0, checker.VerdictSafe, checker.VerdictLiveness},
		{"1 unknown of 20", 19, 0, 0, 1, checker.VerdictSafe, checker.VerdictUnknown},
		{"liveness ties safe", 10, 0, 10, 0, checker.VerdictLiveness, checker.VerdictLiveness},
		{"three-way tie", 5, 0, 5, 5, checker.VerdictLiveness, checker.VerdictLiveness},
		{"unknown ties safe", 5, 0, 0, 5, checker.VerdictUnknown, checker.VerdictUnknown},
		{"safe by one", 6, 0, 0, 5, checker.VerdictSafe, checker.VerdictUnknown},
		{"unknown beats liveness", 0, 0, 3, 4, checker.VerdictUnknown, checker.VerdictLiveness},
		{"unsafe beats a liveness majority", 0, 1, 19, 0, checker.VerdictUnsafe, checker.VerdictUnsafe},
	}
	for _, tc := range cases {
		tl := tallyOf(tc.safe, tc.unsafe, tc.liveness, tc.unkn)
		if tl.Runs != tc.safe+tc.unsafe+tc.liveness+tc.unkn || tl.Safe() != tc.safe {
			t.Errorf("%s: counted %d runs, %d safe", tc.name, tl.Runs, tl.Safe())
		}
		if got := tl.Verdict(); got != tc.cell {
			t.Errorf("%s: cell rule (Verdict) = %s, want %s", tc.name, got, tc.cell)
		}
		if got := tl.WorstVerdict(); got != tc.worst {
			t.Errorf("%s: parity rule (WorstVerdict) = %s, want %s", tc.name, got, tc.worst)
		}
	}
}

// TestTallyFirstUnsafe: the first unsafe seed is the least, whatever the
// order the runs were counted in.
func TestTallyFirstUnsafe(t *testing.T) {
	var tl Tally
	for _, s := range []uint64{9, 4, 7} {
		tl.Add(Outcome{Verdict: checker.VerdictUnsafe}, s)
	}
	tl.Add(Outcome{Verdict: checker.VerdictSafe}, 1)
	if !tl.HasUnsafe || tl.FirstUnsafe != 4 || tl.Unsafe != 3 || tl.Runs != 4 {
		t.Errorf("tally %+v: want 3 unsafe of 4, first unsafe seed 4", tl)
	}
}

// TestTallyNoVerdictIsNotSafe: a run whose outcome carries no verdict (or
// one the tally does not know) counts as unknown, never as safe: Safe is
// what is left once unsafe, liveness and unknown runs are taken away.
func TestTallyNoVerdictIsNotSafe(t *testing.T) {
	var tl Tally
	tl.Add(Outcome{}, 1)
	tl.Add(Outcome{Verdict: "error"}, 2)
	tl.Add(Outcome{Verdict: checker.VerdictSafe}, 3)
	if tl.Unknown != 2 || tl.Safe() != 1 || tl.Runs != 3 {
		t.Errorf("tally %+v (safe %d): want 2 unknown and 1 safe of 3", tl, tl.Safe())
	}
}
