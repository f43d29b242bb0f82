package reports

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/stats"
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

// The per-hour estimate's arithmetic, on hand-built tallies: one class
// (pauses of clients, Pareto x_min 500 ms, α 1.5, 1 per client-hour) on a
// lock at the background files' 8 s TTL in a world of 3 clients, strata
// at 1 and 2 TTLs (8 s, 16 s) with unsafe rates 2/10 and 5/10. Bins:
// (0, 8 s] between 0 and 2/10, (8 s, 16 s] between 2/10 and 5/10,
// beyond 16 s at 5/10.
func TestPerHourArithmetic(t *testing.T) {
	var curves []*curve
	for _, c := range bgCurves() {
		if c.ID == "per_hour:process-pause" {
			c.points = []*point{
				{curve: c, lock: "set-nx-cad", value: 1, Tally: run.Tally{Runs: 10, Unsafe: 2}},
				{curve: c, lock: "set-nx-cad", value: 2, Tally: run.Tally{Runs: 10, Unsafe: 5}},
			}
		}
		curves = append(curves, c)
	}
	p := &Plan{bgCurves: curves}
	r := p.perHour()
	if r == nil || len(r.Locks) != 1 || len(r.Locks[0].Classes) != 1 {
		t.Fatalf("per_hour %+v", r)
	}
	s3, s6 := math.Pow(0.5/8, 1.5), math.Pow(0.5/16, 1.5)
	w := []float64{1 - s3, s3 - s6, s6}
	want := 1 * 3 * (w[0]*(0+0.2)/2 + w[1]*(0.2+0.5)/2 + w[2]*0.5)
	got := r.Locks[0]
	if math.Abs(got.ViolationsPerHour-want) > 1e-6 || got.Classes[0].Processes != 3 {
		t.Fatalf("violations per hour %v over %d processes, want %v over 3", got.ViolationsPerHour, got.Classes[0].Processes, want)
	}
	lo1, hi1 := stats.Wilson(2, 10)
	lo2, hi2 := stats.Wilson(5, 10)
	wl := 3 * (w[0]*0 + w[1]*min(lo1, lo2) + w[2]*lo2)
	wh := 3 * (w[0]*hi1 + w[1]*max(hi1, hi2) + w[2]*hi2)
	if math.Abs(got.CI95[0]-wl) > 1e-5 || math.Abs(got.CI95[1]-wh) > 1e-5 {
		t.Fatalf("interval %v, want [%v, %v]", got.CI95, wl, wh)
	}
	bins := got.Classes[0].Bins
	if len(bins) != 3 || bins[2].ToTTL != nil || math.Abs(bins[0].Weight+bins[1].Weight+bins[2].Weight-1) > 1e-5 {
		t.Fatalf("bins %+v: want three adding to 1, the last open", bins)
	}
	// A plan with only a part of the model has no total, and says so.
	part := &Plan{bgCurves: curves[:1]}
	if part.perHour() != nil || part.perHourMissing() == "" {
		t.Fatalf("a partial model: per_hour %+v, missing %q", part.perHour(), part.perHourMissing())
	}
}

// The background scenarios stay out of the matrix, and the full plan runs
// each class for each of the estimate's locks.
func TestPerHourLayout(t *testing.T) {
	p, err := NewPlan(Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells() {
		if c.Scenario.File != nil && !c.Scenario.File.InMatrix() {
			t.Errorf("matrix cell %s × %s of a background scenario", c.Scenario.ID, c.Lock.ID)
		}
	}
	if len(p.bgCurves) != len(bgModel) {
		t.Fatalf("%d background classes laid out, want %d", len(p.bgCurves), len(bgModel))
	}
	for _, c := range p.bgCurves {
		locksSeen := map[string]bool{}
		for _, pt := range c.points {
			locksSeen[pt.lock] = true
		}
		if len(locksSeen) != len(perHourLocks) {
			t.Errorf("%s: locks %v, want %v", c.ID, locksSeen, perHourLocks)
		}
	}
	// Every design runs at one TTL, and the estimate says which: the bars
	// compare designs, not leases (set-nx-cad's own is 3 s, redlock's 10 s).
	res := p.Results()
	if res.PerHour == nil || len(res.PerHour.Locks) != len(perHourLocks) {
		t.Fatalf("per_hour: %+v", res.PerHour)
	}
	for _, l := range res.PerHour.Locks {
		if l.TTLNS != int64(8*time.Second) {
			t.Errorf("per_hour %s: TTL %v, want every design at 8s", l.Lock, time.Duration(l.TTLNS))
		}
	}
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
