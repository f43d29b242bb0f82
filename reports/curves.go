package reports

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

// A curve is one of the report's rate plots: violation rate against one
// swept value, a line per lock, each point run over the plan's curve
// seeds. The pause sweep varies run.Spec.Pause in the no-faults world; the
// debate's other questions (DEBATE.md, "questions the simulator can settle
// with numbers") step through a built-in scenario file's own sweep: block,
// the same parameter language 'locksim sweep' reads.
type curve struct {
	// ID is the curve's section in results.json ("drift_sweep", ...).
	ID       string
	Title    string // the chart's heading
	Scenario string
	// Locks are the lines, in order; CarefulLocks are drawn again with a
	// careful holder whose sections would outlast the lease (1 to 1.2
	// TTL, scenarios.Params.Careful: it stops at the end of the validity
	// its own clock shows), each as the line "<lock> (careful)".
	Locks        []string
	CarefulLocks []string
	// XLabel names the swept value and its unit; Scale turns the
	// scenario's sweep numbers into it (drift: ppm → percent).
	XLabel string
	Scale  float64
	Marks  []charts.Mark
	// Question is the debate's question the curve answers; Reading says
	// what to look for. Both go into the caption.
	Question, Reading string
	// pauseSweep: the curve is the pause sweep's kind (pausesecs.go): a
	// run whose pause fell short is left out of its rate, not counted.
	pauseSweep bool
	points     []*point
}

// point is one (lock, value) of a curve.
type point struct {
	curve *curve
	lock  string
	value float64 // on the curve's axis
	run.Tally
	// short counts the pause sweep's runs left out of the tally: c0 did
	// not pause in full inside the safety phase (Outcome.PauseShort).
	short int
	// run is the point's run at seed 1 (file curves).
	run run.Spec
}

// leavesShortOut reports whether a run of the point whose pause fell
// short is left out of its rate (the pause sweeps) rather than counted (a
// debate curve, which runs its scenario's own schedule).
func (pt *point) leavesShortOut() bool { return pt.curve == nil || pt.curve.pauseSweep }

// The debate's curves, in the report's order after the pause sweep.
func debateCurves() []*curve {
	return []*curve{
		{ID: "drift_sweep", Title: "Violation rate vs node clock drift (S8)", Scenario: "drift",
			Locks:        []string{"set-nx-cad", "redlock", "redsync", "redislock", "fencing"},
			CarefulLocks: []string{"set-nx-cad", "redlock"},
			XLabel:       "node clock drift (% fast)", Scale: 1e-4,
			Marks:    []charts.Mark{{X: 1, Label: "Redlock's allowance: 1% of TTL + 2 ms"}, {X: 10, Label: `antirez: "10% error" is fine`}},
			Question: "what drift is enough? Redlock's implementations allow 1% of the TTL; antirez called 10% fine.",
			Reading:  "the nodes' clocks run fast by the given rate for the whole safety phase while holders use their lease to the end of its validity (critical sections of 0.97 to 0.99 of the TTL); a lock is unsafe from the drift at which its keys expire before the holder believes its lease ends. With sections that long, the section's length sets the threshold as much as a drift allowance does (set-nx-cad has none); the \"(careful)\" lines are holders whose sections would outlast the lease (1 to 1.2 TTL) and who stop at the end of the validity their own clock shows, where only the lock's own allowance (Redlock's 1% + 2 ms; redsync's 1%, not drawn careful) decides."},
		{ID: "acquire_pause_sweep", Title: "Violation rate vs pause during acquisition (S2)", Scenario: "pause-during-acquire",
			Locks:  []string{"set-nx-cad", "redislock", "redlock", "redsync"},
			XLabel: "pause during acquisition (× the lock's TTL)", Scale: 1,
			Marks:    []charts.Mark{{X: 1, Label: "pause = TTL"}},
			Question: "is Redlock's post-acquisition check sufficient, and how often does a lock without it fail?",
			Reading:  "clients c0 and c1 stop after a node's reply to their SET arrived, nine times each; redlock and redsync re-read a monotonic clock after the round and give up a lock whose validity is gone, set-nx-cad and redislock go on with an expired key."},
		{ID: "restart_jump_sweep", Title: "Violation rate vs clock jump during a delayed restart (S4)", Scenario: "delayed-restart-jump",
			Locks:  []string{"set-nx-cad", "redlock", "redsync", "fencing"},
			XLabel: "forward clock jump of the crashed node during its downtime (× the lock's TTL)", Scale: 1,
			Marks:    []charts.Mark{{X: 0.2, Label: "true downtime = TTL"}},
			Question: "does a delayed restart need accurate clocks?",
			Reading:  "the crashed node waits 1.2 × the TTL by its own clock before it restarts empty; a forward jump J during the downtime brings it back after 1.2 − J TTLs of true time; to the right of the mark the node returns while a lease it held can still run."},
	}
}

// curveSteps are the sweep steps a file curve runs: all of them, or for
// --quick every other one and the last.
func curveSteps(n int, quick bool) []int {
	var out []int
	for i := 0; i < n; i++ {
		if !quick || i%2 == 0 || i == n-1 {
			out = append(out, i)
		}
	}
	return out
}

// curveLiveness is the liveness phase of a curve's runs: the plots read
// safety only, and a phase of two TTLs lets every section begun before the
// heal end inside it.
func curveLiveness(info locks.Info) time.Duration { return max(pauseSweepLiveness, 2*info.TTL) }

// addFileCurve lays out a curve over its scenario file's sweep: block.
func (p *Plan) addFileCurve(c *curve, keep func(string) bool) ([]job, error) {
	s, err := scenarios.Get(c.Scenario)
	if err != nil || s.File == nil || s.File.Sweep == nil {
		return nil, fmt.Errorf("curve %s: scenario %s has no sweep: block", c.ID, c.Scenario)
	}
	nums := s.File.SweepNumbers()
	var jobs []job
	for _, step := range curveSteps(len(nums), p.opt.Quick) {
		for _, id := range c.Locks {
			info, err := catalogue.Get(id)
			if err != nil || info.Unavailable != "" || !keep(id) {
				continue
			}
			if why := s.Fits(info); why != "" {
				return nil, fmt.Errorf("curve %s: lock %s does not fit scenario %s: %s", c.ID, id, c.Scenario, why)
			}
			for _, careful := range []bool{false, true} {
				if careful && !slices.Contains(c.CarefulLocks, id) {
					continue
				}
				st := step
				params := scenarios.Params{Liveness: curveLiveness(info)}
				if careful {
					// Sections that would outlast the lease: the holder
					// stops where its own clock says the validity ends.
					params.Careful, params.HoldMin, params.HoldMax = true, info.TTL, info.TTL*6/5
				}
				spec := run.Spec{Scenario: c.Scenario, Lock: id, Seed: 1, Params: params, Step: &st}
				if _, err := spec.Build(); err != nil {
					return nil, fmt.Errorf("curve %s, lock %s, step %d: %w", c.ID, id, step, err)
				}
				pt := &point{curve: c, lock: seriesName(id, careful), value: roundX(nums[step] * c.Scale), run: spec}
				c.points = append(c.points, pt)
				jobs = append(jobs, job{req: sweep.Request{Spec: spec}, point: pt})
			}
		}
	}
	return jobs, nil
}

// seriesName is a curve line's name: the lock, or "<lock> (careful)".
func seriesName(lock string, careful bool) string {
	if careful {
		return lock + " (careful)"
	}
	return lock
}

// series are the curve's line names, in order.
func (c *curve) series() []string {
	out := slices.Clone(c.Locks)
	for _, id := range c.CarefulLocks {
		out = append(out, seriesName(id, true))
	}
	return out
}

// roundX keeps 12 significant digits (0.1*3 reads 0.3 on axes and in JSON).
func roundX(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return r
}

// chart is the curve's rate chart.
func (c *curve) chart() charts.RateChart {
	rc := charts.RateChart{Title: c.Title, XLabel: c.XLabel, YLabel: "runs judged unsafe", Marks: c.Marks}
	for _, id := range c.series() {
		s := charts.RateSeries{Name: id}
		for _, pt := range c.points {
			if pt.lock == id {
				s.Points = append(s.Points, charts.RatePoint{X: pt.value, Rate: stats.Rate{K: pt.Unsafe, N: pt.Runs}})
			}
		}
		if len(s.Points) > 0 {
			rc.Series = append(rc.Series, s)
		}
	}
	return rc
}

// table is the curve's numbers: a row a value, a column a lock.
func (c *curve) table(xlabel string) *pauseTable {
	t := &pauseTable{XLabel: xlabel}
	var vals []float64
	for _, pt := range c.points {
		if !slices.Contains(t.Locks, pt.lock) {
			t.Locks = append(t.Locks, pt.lock)
		}
		if !slices.Contains(vals, pt.value) {
			vals = append(vals, pt.value)
		}
	}
	for _, v := range vals {
		row := pauseRow{Value: run.FormatValue(v)}
		for _, id := range t.Locks {
			txt := ""
			for _, pt := range c.points {
				if pt.lock == id && pt.value == v {
					txt = stats.Rate{K: pt.Unsafe, N: pt.Runs}.String() + shortNote(pt)
				}
			}
			row.Cells = append(row.Cells, txt)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// shortNote is a curve point's runs with a targeted pause short or
// unfired, beside the faults of the same runs that bit: a run counts as
// short when any of its pauses was (the heal cut the last of nine), so
// "6 short" alone read as six runs that tested nothing where most of
// their pauses had fired in full ("" when no run was short or unfired).
func shortNote(pt *point) string {
	var parts []string
	if pt.short > 0 {
		parts = append(parts, fmt.Sprintf("%d short", pt.short))
	}
	if pt.Unfired > 0 {
		parts = append(parts, fmt.Sprintf("%d unfired", pt.Unfired))
	}
	if len(parts) == 0 {
		return ""
	}
	if pt.leavesShortOut() {
		// One pause a run; the short runs are not in the tally.
		return " (" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf(" (%s runs; %d of the point's %d faults bit)", strings.Join(parts, ", "), pt.Bit, pt.Injected)
}

// CurveResult is one of the debate's curves in results.json.
type CurveResult struct {
	Scenario string `json:"scenario"`
	// X names the swept value and its unit.
	X        string       `json:"x"`
	Question string       `json:"question"`
	Seeds    int          `json:"seeds_per_point"`
	Marks    []MarkResult `json:"marks,omitempty"`
	Points   []CurvePoint `json:"points"`
}

// MarkResult is a value the debate names on a curve's axis.
type MarkResult struct {
	X     float64 `json:"x"`
	Label string  `json:"label"`
}

// CurvePoint is one (lock, value) of a curve.
type CurvePoint struct {
	Lock                  string  `json:"lock"`
	X                     float64 `json:"x"`
	Runs                  int     `json:"runs"`
	UnsafeRuns            int     `json:"unsafe_runs"`
	LeaseOverlapRuns      int     `json:"lease_overlap_runs"`
	ResourceViolationRuns int     `json:"resource_violation_runs"`
	// PauseShortRuns counts runs in which a targeted pause did not run in
	// full inside the safety phase, UnfiredPauseRuns runs in which one
	// never fired; both are in Runs and the rate.
	PauseShortRuns   int        `json:"pause_short_runs"`
	UnfiredPauseRuns int        `json:"unfired_pause_runs"`
	UnsafeRate       float64    `json:"unsafe_rate"`
	UnsafeRateCI95   [2]float64 `json:"unsafe_rate_ci95"`
	// Faults counts the point's faults by how far they got, and
	// BitFraction is the fraction of injected faults that bit (0 when none
	// was injected): a curve point whose faults rarely bit tested little.
	Faults      CellFaults `json:"faults"`
	BitFraction float64    `json:"bit_fraction"`
	// FirstUnsafeSeed and Repro name a run to look at (nil when safe).
	FirstUnsafeSeed *uint64 `json:"first_unsafe_seed,omitempty"`
	Repro           string  `json:"repro,omitempty"`
	Stop            string  `json:"stop"` // why it stopped: see CellResult.Stop
}

func (c *curve) result(seeds int) *CurveResult {
	r := &CurveResult{Scenario: c.Scenario, X: c.XLabel, Question: c.Question, Seeds: seeds}
	for _, m := range c.Marks {
		r.Marks = append(r.Marks, MarkResult{X: m.X, Label: m.Label})
	}
	for _, pt := range c.points {
		rate := stats.Rate{K: pt.Unsafe, N: pt.Runs}
		lo, hi := rate.Interval()
		cp := CurvePoint{Lock: pt.lock, X: pt.value, Runs: pt.Runs, UnsafeRuns: pt.Unsafe, LeaseOverlapRuns: pt.Overlap,
			ResourceViolationRuns: pt.Resource, PauseShortRuns: pt.short, UnfiredPauseRuns: pt.Unfired, UnsafeRate: round6(rate.P()), UnsafeRateCI95: [2]float64{round6(lo), round6(hi)}}
		cp.Faults = CellFaults{Injected: pt.Injected, Reached: pt.Reached, Bit: pt.Bit, NoBiteRuns: pt.NoBite}
		if pt.Injected > 0 {
			cp.BitFraction = round6(float64(pt.Bit) / float64(pt.Injected))
		}
		if pt.HasUnsafe {
			s := pt.FirstUnsafe
			cp.FirstUnsafeSeed = &s
			r := pt.run
			r.Seed = s
			cp.Repro = r.Repro()
		}
		r.Points = append(r.Points, cp)
	}
	return r
}
