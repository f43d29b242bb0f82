package parity

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/sim"
)

// TestDriverCellUntested: a drivers cell whose runs are all safe and
// whose injected faults never bit is marked untested (n/t, with the
// footnote, and "untested" in drivers.json), by the rule a report's
// cells are drawn by; one run in which a fault bit clears the mark.
func TestDriverCellUntested(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bitIn  uint64 // the seed whose run's fault bit (0: none)
		wantNT bool
	}{{"none bit", 0, true}, {"seed 2 bit", 2, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			out := filepath.Join(t.TempDir(), "p")
			run := func(_ context.Context, _ DriversOptions, job *realredis.Job, _ string) (*childRun, error) {
				c := &childRun{Verdict: "safe", Repro: job.Repro(), Injected: 4}
				if job.Spec.Seed == tc.bitIn {
					c.Bit = 1
				}
				return c, nil
			}
			arms, err := DirArms("../../../drivers", DriverWorld)
			if err != nil {
				t.Fatal(err)
			}
			arms = slices.DeleteFunc(arms, func(a Arm) bool { return a.Name != control })
			opt := DriversOptions{Dir: "../../../drivers", Scenarios: []string{"no-faults"}, Arms: arms,
				SimRuns: 1, RealRuns: 3, RealJobs: 2, run: run}
			res, err := RunDrivers(context.Background(), sim.Bubble(nil), opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Write(out); err != nil {
				t.Fatal(err)
			}
			c := res.Cell("no-faults", control)
			if got := c.Untested != ""; got != tc.wantNT {
				t.Fatalf("cell untested %q, want marked %v", c.Untested, tc.wantNT)
			}
			tb, err := os.ReadFile(filepath.Join(out, DriversTableFile))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(tb), "[safe]"+UntestedMark) && strings.Contains(string(tb), "n/t: safe but untested"); got != tc.wantNT {
				t.Errorf("drivers.txt marks the cell n/t: %v, want %v:\n%s", got, tc.wantNT, tb)
			}
			back, err := ReadDrivers(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := back.Cell("no-faults", control).Untested; got != c.Untested {
				t.Errorf("drivers.json untested %q, want %q", got, c.Untested)
			}
		})
	}
}

// TestParityTableUntested: a real cell marked untested shows n/t after
// its rate, with the footnote; one that is not shows neither.
func TestParityTableUntested(t *testing.T) {
	r := &Result{TTLNS: 200e6, Cells: []CellResult{
		{Scenario: "clock-jump", Lock: "zk-lock", SimRuns: 1, SimVerdict: "safe", RealRuns: 2, RealVerdict: "safe", Agree: true, RealUntested: "no fault bit"},
		{Scenario: "pause-after-check", Lock: "fencing", SimRuns: 1, SimVerdict: "safe", RealRuns: 2, RealVerdict: "safe", Agree: true},
	}}
	var b strings.Builder
	r.WriteTable(&b)
	lines := strings.Split(b.String(), "\n")
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "clock-jump") && !strings.Contains(l, "0/2 safe"+UntestedMark):
			t.Errorf("the untested cell is not marked: %q", l)
		case strings.HasPrefix(l, "pause-after-check") && strings.Contains(l, UntestedMark):
			t.Errorf("a tested cell is marked: %q", l)
		}
	}
	if !strings.Contains(b.String(), "n/t: safe but untested") {
		t.Errorf("no footnote:\n%s", b.String())
	}
}
