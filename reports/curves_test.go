package reports

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// Every debate curve is laid out from its scenario file's sweep: block:
// a point per lock and step (--quick: every other step and the last),
// each run a step of the file with the curve's liveness phase, and its
// section and chart in the report.
func TestDebateCurvesLayout(t *testing.T) {
	for _, c := range debateCurves() {
		t.Run(c.ID, func(t *testing.T) {
			p, err := NewPlan(Options{Scenarios: []string{c.Scenario}, Quick: true})
			if err != nil {
				t.Fatal(err)
			}
			var got *curve
			for _, pc := range p.curves {
				if pc.ID == c.ID {
					got = pc
				}
			}
			if got == nil {
				t.Fatalf("the plan has no %s curve", c.ID)
			}
			steps := map[int]bool{}
			for _, j := range p.jobs {
				if j.point == nil || j.point.curve != got {
					continue
				}
				sp := j.req.Spec
				if sp.Step == nil || sp.Scenario != c.Scenario || sp.Params.Liveness == 0 || sp.Seed > uint64(curveQuickSeeds) {
					t.Fatalf("job %+v", sp)
				}
				steps[*sp.Step] = true
			}
			if len(got.points) != len(steps)*len(c.series()) {
				t.Fatalf("%d points, want %d steps × %d series", len(got.points), len(steps), len(c.series()))
			}
			if !steps[0] || len(steps) < 4 {
				t.Fatalf("steps %v: want the first and at least four", steps)
			}
			if n := p.Runs(); n < len(got.points)*curveQuickSeeds {
				t.Fatalf("%d runs for %d points", n, len(got.points))
			}
			res := p.Results()
			section := map[string]*CurveResult{"drift_sweep": res.DriftSweep, "acquire_pause_sweep": res.AcquirePauseSweep, "restart_jump_sweep": res.RestartJumpSweep}[c.ID]
			if section == nil || len(section.Points) != len(got.points) || section.Seeds != curveQuickSeeds || len(section.Marks) == 0 {
				t.Fatalf("results.json section %s: %+v", c.ID, section)
			}
		})
	}
	// The drift axis is in percent: the file's values, 0 to 200000 ppm.
	p, err := NewPlan(Options{Scenarios: []string{"drift"}, Locks: []string{"redlock"}})
	if err != nil {
		t.Fatal(err)
	}
	var xs, careful []float64
	for _, pt := range p.curves[0].points {
		switch pt.lock {
		case "redlock":
			xs = append(xs, pt.value)
		case "redlock (careful)":
			careful = append(careful, pt.value)
			if !pt.run.Params.Careful {
				t.Fatalf("the careful series' run %+v is not careful", pt.run)
			}
		default:
			t.Fatalf("series %q", pt.lock)
		}
	}
	want := []float64{0, 0.5, 1, 1.5, 2, 3, 5, 10, 15, 20}
	if !slices.Equal(xs, want) || !slices.Equal(careful, want) {
		t.Fatalf("drift values %v, careful %v", xs, careful)
	}
}

// The S8 curve answers its question with runs, not a table: Redlock is
// safe with no drift and unsafe with its nodes' clocks 20% fast (its
// allowance is 1%), over the same seeds, each run as the report runs it.
func TestDriftCurveRedlock(t *testing.T) {
	b := sim.TestBubble(t)
	p, err := NewPlan(Options{Scenarios: []string{"drift"}, Locks: []string{"redlock"}, Seeds: 8})
	if err != nil {
		t.Fatal(err)
	}
	unsafe := map[float64]int{}
	for _, j := range p.jobs {
		if j.point == nil || (j.point.value != 0 && j.point.value != 20) {
			continue
		}
		o := judge(t, b, j.req.Spec)
		if o.Verdict == checker.VerdictUnsafe {
			unsafe[j.point.value]++
		}
	}
	if unsafe[0] != 0 || unsafe[20] == 0 {
		t.Fatalf("redlock unsafe runs over 4 seeds: %d at 0%% drift (want 0), %d at 20%% (want some)", unsafe[0], unsafe[20])
	}
}

func judge(t *testing.T, b sim.Bubble, sp run.Spec) run.Outcome {
	t.Helper()
	j, err := sweep.Judge(b, sp)
	if err == nil && j.Err != nil {
		err = j.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	return run.OutcomeOf(j)
}

// A report of background scenarios only is an input error that says why
// and what to do, not "nothing to run".
func TestReportOfBackgroundOnly(t *testing.T) {
	_, err := NewPlan(Options{Scenarios: []string{"bg-crash", "bg-process-pause"}, Quick: true})
	var ie *sweep.InputError
	if !errors.As(err, &ie) || ie.Field != "scenarios" || !strings.Contains(err.Error(), "background scenarios (matrix: false)") || !strings.Contains(err.Error(), "locksim sweep --scenario bg-crash") {
		t.Fatalf("err = %v, want an input error on --scenarios naming the background scenarios", err)
	}
}
