package reports

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// The rule's edges, from the Wilson interval itself: with no violation
// the upper bound first reaches 2% at 189 runs; with every run unsafe the
// interval first narrows to 10 points at 35; a cell whose liveness runs
// are near half does not stop by the bound.
func TestStopRuleEdges(t *testing.T) {
	firstN := func(k func(n int) run.Tally) (int, string) {
		for n := 1; n <= 200; n++ {
			tl := k(n)
			if why := stopReason(&tl, n, 200, false); why != "" {
				return n, why
			}
		}
		return 0, ""
	}
	if n, why := firstN(func(n int) run.Tally { return run.Tally{Runs: n} }); n != 189 || why != StopBound {
		t.Errorf("no violations: stopped at %d (%s), want 189 (bound)", n, why)
	}
	if _, hi := stats.Wilson(0, 188); hi <= stopUpper {
		t.Errorf("Wilson(0, 188) upper %v: the bound holds a run earlier than the rule says", hi)
	}
	if n, why := firstN(func(n int) run.Tally { return run.Tally{Runs: n, Unsafe: n} }); n != 35 || why != StopNarrow {
		t.Errorf("every run unsafe: stopped at %d (%s), want 35 (narrow)", n, why)
	}
	// Half the runs unsafe: the interval never narrows to ±5 points
	// within 200 runs; the cap ends it.
	if n, why := firstN(func(n int) run.Tally { return run.Tally{Runs: n, Unsafe: n / 2} }); n != 200 || why != StopCap {
		t.Errorf("half unsafe: stopped at %d (%s), want 200 (cap)", n, why)
	}
	// One violation at seed 124 and none before (delayed-restart-jump ×
	// fencing in the fixed report): it stops there.
	if n, why := firstN(func(n int) run.Tally { return run.Tally{Runs: n, Unsafe: min(1, n/124)} }); n != 124 || why != StopNarrow {
		t.Errorf("one violation at seed 124: stopped at %d (%s), want 124 (narrow)", n, why)
	}
	// Liveness in about half the runs: the verdict is a coin toss, so the
	// bound does not end it.
	if n, why := firstN(func(n int) run.Tally { return run.Tally{Runs: n, Liveness: n / 2} }); n != 200 || why != StopCap {
		t.Errorf("liveness in half the runs: stopped at %d (%s), want 200 (cap)", n, why)
	}
	if n, why := firstN(func(n int) run.Tally { return run.Tally{Runs: n, Liveness: n} }); n != 189 || why != StopBound {
		t.Errorf("liveness in every run: stopped at %d (%s), want 189 (bound)", n, why)
	}
	tl := run.Tally{Runs: 199, Unsafe: 199}
	if why := stopReason(&tl, 199, 200, true); why != "" {
		t.Errorf("fixed plan stopped early: %s", why)
	}
	if why := stopReason(&tl, 200, 200, true); why != StopFixed {
		t.Errorf("fixed plan at its cap: %q, want %q", why, StopFixed)
	}
}

// A sequential report counts, per cell, exactly the seeds up to the first
// prefix of the fixed plan where the rule holds, whatever the number of
// workers: the fixed plan's outcomes (kept in a result store) replayed
// seed by seed through the rule give each cell's runs and stop reason.
func TestSequentialIsFixedPrefix(t *testing.T) {
	b := sim.TestBubble(t)
	opt := Options{Scenarios: []string{"clock-jump"}, Locks: []string{"redislock", "fencing"}, Seeds: 50}
	st, err := OpenStore(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	report := func(o Options, workers int, store *Store) (*Plan, Results) {
		t.Helper()
		p, err := NewPlan(o)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, "timelines"), 0o755)
		if err := p.Run(context.Background(), b, dir, Exec{Workers: workers, Store: store}); err != nil {
			t.Fatal(err)
		}
		return p, p.Results()
	}
	fixedOpt := opt
	fixedOpt.Fixed = true
	fixed, fixedRes := report(fixedOpt, 2, st)
	for _, c := range fixedRes.Cells {
		if c.Runs != 50 || c.Stop != StopFixed {
			t.Fatalf("fixed plan: %s × %s ran %d seeds (%s), want 50 (fixed)", c.Scenario, c.Lock, c.Runs, c.Stop)
		}
	}
	// The rule replayed on the fixed plan's outcomes, seed by seed.
	want := map[string][2]any{}
	for _, c := range fixed.cells {
		var tl run.Tally
		for seed := uint64(1); seed <= 50; seed++ {
			o, ok := st.get(st.key(sweep.Request{Spec: c.At(seed)}), sweep.Request{Spec: c.At(seed)})
			if !ok {
				t.Fatalf("%s seed %d not in the store", c.Lock.ID, seed)
			}
			tl.Add(o, seed)
			if why := stopReason(&tl, int(seed), 50, false); why != "" {
				want[c.Lock.ID] = [2]any{tl.Runs, why}
				want[c.Lock.ID+" unsafe"] = [2]any{tl.Unsafe, tl.Verdict()}
				break
			}
		}
	}
	// The test needs a cell that stops early to mean anything.
	if w := want["redislock"]; w[0].(int) >= 50 {
		t.Fatalf("clock-jump × redislock did not stop early in 50 seeds (%v): pick a cell that does", w)
	}
	// The dry run applies the rule to the store's outcomes: each cell's
	// runs up to its stop, every one measured.
	pl, err := NewPlan(opt)
	if err != nil {
		t.Fatal(err)
	}
	cells, _ := pl.Expect(st)
	for _, c := range cells {
		if c.Runs != want[c.Lock][0] || c.Measured != c.Runs {
			t.Errorf("--plan from the store: %s × %s %d runs (%d measured), want %v", c.Scenario, c.Lock, c.Runs, c.Measured, want[c.Lock][0])
		}
	}
	js := func(r Results) string {
		r.Cells = slices.Clone(r.Cells)
		for i := range r.Cells {
			r.Cells[i].CPUNS = 0
		}
		r.Settings.StopRule = ""
		b, _ := json.Marshal(r)
		return string(b)
	}
	var first string
	for _, workers := range []int{1, 3} {
		seq, res := report(opt, workers, nil)
		for _, c := range res.Cells {
			if got := ([2]any{c.Runs, c.Stop}); got != want[c.Lock] {
				t.Errorf("%d workers: %s × %s: %v, want %v (the rule on the fixed plan's seeds)", workers, c.Scenario, c.Lock, got, want[c.Lock])
			}
			if got := ([2]any{c.UnsafeRuns, c.Verdict}); got != want[c.Lock+" unsafe"] {
				t.Errorf("%d workers: %s × %s: unsafe runs and verdict %v, want %v", workers, c.Scenario, c.Lock, got, want[c.Lock+" unsafe"])
			}
			if c.Seeds != [2]uint64{1, uint64(c.Runs)} {
				t.Errorf("%s: seeds %v for %d runs", c.Lock, c.Seeds, c.Runs)
			}
		}
		if seq.Runs() >= fixed.Runs() {
			t.Errorf("%d workers: the sequential plan ran %d runs, the fixed one %d", workers, seq.Runs(), fixed.Runs())
		}
		if first == "" {
			first = js(res)
		} else if js(res) != first {
			t.Errorf("results differ between 1 and %d workers", workers)
		}
	}
	if want["redislock unsafe"][1] != checker.VerdictUnsafe {
		t.Errorf("clock-jump × redislock: %v, want unsafe", want["redislock unsafe"])
	}
}

// A cell without violations stops at the bound only when its verdict is
// settled: 76 liveness against 76 safe (and 37 unknown) is a tie that the
// remaining seeds could turn, though each share alone lies below ½.
func TestBoundWaitsForASettledVerdict(t *testing.T) {
	for _, c := range []struct {
		live, unknown int
		want          string
	}{
		{0, 0, StopBound},
		{3, 2, StopBound},
		{76, 37, ""},        // liveness 76 against safe 76: a tie
		{150, 0, StopBound}, // liveness 150 against safe 39: settled
		{80, 80, ""},        // both beat safe (29), and tie with each other
	} {
		tl := &run.Tally{Runs: 189, Liveness: c.live, Unknown: c.unknown}
		if got := stopReason(tl, 189, 200, false); got != c.want {
			t.Errorf("liveness %d, unknown %d of 189: stop %q, want %q", c.live, c.unknown, got, c.want)
		}
	}
}
