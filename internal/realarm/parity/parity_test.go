package parity

import (
	"bytes"
	"context"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// TestVerdictOf: an arm's verdict is the parity rule's (run.Tally's
// WorstVerdict), so 1 liveness run of 20 makes the arm liveness where the
// report's cell rule (Tally.Verdict) says safe; runs that could not be
// judged at all make a safe arm "error"; no runs, "none". The counts the
// results file shows leave out the verdicts no run got.
func TestVerdictOf(t *testing.T) {
	for _, tc := range []struct {
		safe, unsafe, liveness, unknown, errs int
		want                                  checker.Verdict
		counts                                map[checker.Verdict]int
	}{
		{3, 0, 0, 0, 0, checker.VerdictSafe, map[checker.Verdict]int{"safe": 3}},
		{3, 1, 0, 0, 0, checker.VerdictUnsafe, map[checker.Verdict]int{"safe": 3, "unsafe": 1}},
		{19, 0, 1, 0, 0, checker.VerdictLiveness, map[checker.Verdict]int{"safe": 19, "liveness": 1}},
		{0, 0, 1, 1, 0, checker.VerdictLiveness, map[checker.Verdict]int{"liveness": 1, "unknown": 1}},
		{1, 0, 0, 1, 0, checker.VerdictUnknown, map[checker.Verdict]int{"safe": 1, "unknown": 1}},
		{2, 0, 0, 0, 1, VerdictError, map[checker.Verdict]int{"safe": 2, "error": 1}},
		{0, 1, 0, 0, 1, checker.VerdictUnsafe, map[checker.Verdict]int{"unsafe": 1, "error": 1}},
		{0, 0, 0, 0, 2, VerdictError, map[checker.Verdict]int{"error": 2}},
		{0, 0, 0, 0, 0, VerdictNone, map[checker.Verdict]int{}},
	} {
		var tl run.Tally
		seed := uint64(0)
		for v, n := range map[checker.Verdict]int{checker.VerdictSafe: tc.safe, checker.VerdictUnsafe: tc.unsafe, checker.VerdictLiveness: tc.liveness, checker.VerdictUnknown: tc.unknown} {
			for range n {
				seed++
				tl.Add(run.Outcome{Verdict: v}, seed)
			}
		}
		if got := verdictOf(&tl, tc.errs); got != tc.want {
			t.Errorf("verdictOf(%+v, %d errors) = %s, want %s", tl, tc.errs, got, tc.want)
		}
		if got := verdictCounts(&tl, tc.errs); !maps.Equal(got, tc.counts) {
			t.Errorf("verdictCounts(%+v, %d errors) = %v, want %v", tl, tc.errs, got, tc.counts)
		}
	}
}

// TestAgreement: a cell agrees when the verdicts match and the Wilson
// intervals overlap; an unsupported cell never agrees.
func TestAgreement(t *testing.T) {
	cell := func(su, sn, ru, rn int, sv, rv checker.Verdict) *CellResult {
		c := &CellResult{SimUnsafe: su, SimRuns: sn, RealUnsafe: ru, RealRuns: rn, SimVerdict: sv, RealVerdict: rv}
		c.SimCI = ci(su, sn)
		c.RealCI = ci(ru, rn)
		c.finish()
		return c
	}
	if c := cell(36, 40, 3, 5, "unsafe", "unsafe"); !c.Agree {
		t.Errorf("36/40 vs 3/5 unsafe: intervals overlap, want agree")
	}
	if c := cell(40, 40, 3, 5, "unsafe", "unsafe"); c.Agree {
		t.Errorf("40/40 ([0.91, 1]) vs 3/5 ([0.23, 0.88]): intervals apart, want disagree")
	}
	if c := cell(200, 200, 2, 20, "unsafe", "unsafe"); c.Agree {
		t.Errorf("200/200 vs 2/20: intervals apart, want disagree")
	}
	if c := cell(0, 40, 0, 5, "safe", "unknown"); c.Agree {
		t.Errorf("safe vs unknown: want disagree")
	}
	c := &CellResult{SimRuns: 40, SimVerdict: "safe", NotSupported: "no Sentinel"}
	c.finish()
	if c.Agree {
		t.Errorf("an unsupported cell agreed")
	}
}

func ci(k, n int) [2]float64 {
	lo, hi := stats.Wilson(k, n)
	return [2]float64{lo, hi}
}

// TestRunWriteRead runs one cell in both arms (redis-server needed), and
// one the real arm cannot run; parity.json reads back, the table lists
// the unsupported cell as such, the chart is a PNG.
func TestRunWriteRead(t *testing.T) {
	if err := realredis.CheckBinaries(); err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("real-Redis arm skipped: %v", err)
	}
	opt := Options{Cells: []Cell{{Scenario: "pause-after-check", Lock: "fencing"}, {Scenario: "delayed-restart-jump", Lock: "set-nx-cad"}}, SimRuns: 2, RealRuns: 1, RealJobs: 1, TTL: 200e6}
	res, err := Run(context.Background(), sim.TestBubble(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	f, u := res.Cells[0], res.Cells[1]
	if f.SimRuns != 2 || f.RealRuns != 1 || f.SimVerdict != "safe" || f.RealVerdict != "safe" || !f.Agree {
		t.Errorf("fencing cell %+v: want 2 sim and 1 real run, safe, agreeing", f)
	}
	if f.RealUntested != "" {
		t.Errorf("fencing cell: real untested %q, want none (its pauses fire after the check: each bites)", f.RealUntested)
	}
	if u.NotSupported == "" || u.RealVerdict != "not-supported" || u.Agree || u.SimRuns != 2 {
		t.Errorf("delayed-restart-jump cell %+v: want the sim arm run and the real arm not supported", u)
	}
	dir := t.TempDir()
	if err := res.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Cells) != 2 || back.Cells[0].SimUnsafe != f.SimUnsafe || back.TTLNS != 200e6 {
		t.Errorf("read back %+v", back)
	}
	var tbl bytes.Buffer
	res.WriteTable(&tbl)
	if !strings.Contains(tbl.String(), "not yet supported") || !strings.Contains(tbl.String(), "delayed-restart-jump × set-nx-cad") {
		t.Errorf("table does not list the unsupported cell:\n%s", tbl.String())
	}
	png, err := os.ReadFile(dir + "/" + ChartFile)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("chart: %v", err)
	}
	if got := res.Disagreements(); len(got) != 0 {
		t.Errorf("disagreements %v", got)
	}
}

// A cell naming no scenario or no lock is an error before anything runs,
// never a cell listed as "not at the real arm's scale"; the
// bubble is never used.
func TestRunRefusesUnknownCells(t *testing.T) {
	for _, c := range []struct {
		cell Cell
		want string
	}{
		{Cell{Scenario: "no-faults", Lock: "set-nx-ca"}, `parity: cell no-faults/set-nx-ca: unknown lock "set-nx-ca"`},
		{Cell{Scenario: "nope", Lock: "set-nx-cad"}, `parity: cell nope/set-nx-cad: unknown scenario "nope"`},
	} {
		opt := Options{Cells: []Cell{{Scenario: "no-faults", Lock: "set-nx-cad"}, c.cell}, SimRuns: 1, RealRuns: 1, RealJobs: 1}
		res, err := Run(context.Background(), nil, opt)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || res != nil {
			t.Errorf("%v: %v, %v; want an error starting %q", c.cell, res, err, c.want)
		}
	}
}

// TestSimArmInterval: the simulator arm's 95% interval is the Wilson
// interval of its own counts. It was computed before the counts were set,
// as Wilson(0, 0) = [0, 1] for every cell, which made any two arms'
// intervals overlap and left agreement to the verdicts alone.
func TestSimArmInterval(t *testing.T) {
	cr := &CellResult{Scenario: "pause-after-check", Lock: "set-nx-cad", TTLNS: 200e6}
	if err := cr.simArm(sim.TestBubble(t), Options{SimRuns: 3}); err != nil {
		t.Fatal(err)
	}
	if cr.SimRuns != 3 || cr.SimUnsafe == 0 {
		t.Fatalf("sim arm: %d runs, %d unsafe; want 3 runs, some unsafe (a pause after the check breaks an unfenced lease)", cr.SimRuns, cr.SimUnsafe)
	}
	lo, hi := stats.Wilson(cr.SimUnsafe, cr.SimRuns)
	if cr.SimCI != [2]float64{lo, hi} || cr.SimCI == [2]float64{0, 1} {
		t.Errorf("sim interval %v, want Wilson(%d, %d) = [%v, %v]", cr.SimCI, cr.SimUnsafe, cr.SimRuns, lo, hi)
	}
}
