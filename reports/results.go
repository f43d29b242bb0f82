package reports

import (
	"strconv"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/run"
)

// Expectation is what a scenario file expects of a lock, by side of the
// debate, and the verdict the simulation is expected to measure (Want).
type Expectation struct {
	Role               string `json:"role,omitempty"`
	Kleppmann          string `json:"kleppmann,omitempty"`
	Antirez            string `json:"antirez,omitempty"`
	Agreed             string `json:"agreed,omitempty"`
	Want               string `json:"want,omitempty"` // the verdict the scenario file expects the simulation to measure
	OutsideAssumptions bool   `json:"outside_assumptions,omitempty"`
	Note               string `json:"note,omitempty"`
}

// CellResult is one cell of results.json: the six fields every cell
// reports (scenario, lock, runs, lease overlaps, resource violations,
// verdict) first.
type CellResult struct {
	Scenario               string          `json:"scenario"`
	Lock                   string          `json:"lock"`
	Runs                   int             `json:"runs"`
	LeaseOverlapRuns       int             `json:"lease_overlap_runs"`
	ResourceViolationRuns  int             `json:"resource_violation_runs"`
	Verdict                checker.Verdict `json:"verdict"`
	UnsafeRuns             int             `json:"unsafe_runs"`
	LivenessRuns           int             `json:"liveness_runs"`
	UnknownRuns            int             `json:"unknown_runs"`
	OwnershipViolationRuns int             `json:"ownership_violation_runs"`
	StaleSectionRuns       int             `json:"stale_section_runs"`    // a holder acted on a dead lease
	StaleAcceptedRuns      int             `json:"stale_accepted_runs"`   // and the storage accepted its write
	FencedRejectionRuns    int             `json:"fenced_rejection_runs"` // the storage refused an operation
	StarvedRuns            int             `json:"starved_runs"`          // a client made no progress after the heal (fairness)
	// UnfiredPauseRuns counts runs in which a targeted pause never fired
	// (the lock never reached its point): such runs did not test the pause.
	UnfiredPauseRuns int `json:"unfired_pause_runs,omitempty"`
	// OwnershipOnlyRuns counts the unsafe runs of class ownership (no
	// double hold, the resource intact): UnsafeRuns includes them.
	OwnershipOnlyRuns int `json:"ownership_only_runs"`
	// Faults counts the runs' faults by how far they got (run.Effects).
	Faults CellFaults `json:"faults"`
	// ClockUnreachedRuns counts runs with a client clock set wrong (by the
	// world or a fault) that the lock never read: a library reads
	// time.Now, and one bubble has one clock. Such a cell's safe verdict
	// says nothing about that clock.
	ClockUnreachedRuns int          `json:"clock_unreached_runs,omitempty"`
	UnsafeRate         float64      `json:"unsafe_rate"`
	UnsafeRateCI95     [2]float64   `json:"unsafe_rate_ci95"`
	Seeds              [2]uint64    `json:"seeds"` // first and last seed run
	DurationNS         int64        `json:"duration_ns"`
	LivenessNS         int64        `json:"liveness_ns"`
	FirstUnsafeSeed    *uint64      `json:"first_unsafe_seed,omitempty"`
	Repro              string       `json:"repro,omitempty"` // reproduces the first unsafe seed
	ReproTraceSHA256   string       `json:"repro_trace_sha256,omitempty"`
	Timeline           string       `json:"timeline,omitempty"`
	Story              string       `json:"story,omitempty"` // the first unsafe seed's violation in a sentence
	Debate             string       `json:"debate,omitempty"`
	Expected           *Expectation `json:"expected,omitempty"`
	MatchesExpected    *bool        `json:"matches_expected,omitempty"`
	// CPUNS is the CPU time the cell's runs took, summed (each measured
	// where it ran: sweep.CPUTime; a run from the result store counts the
	// CPU it took when it ran). Measured, not simulated: the one field of
	// results.json that differs between two runs of the same report
	// without the store. The timeline rerun is not counted.
	CPUNS int64 `json:"cpu_ns"`
	// Stop is why the cell stopped after Runs seeds (sequential.go):
	// "narrow", "bound", "cap" or "fixed".
	Stop string `json:"stop"`
}

// CellFaults sums a cell's faults: injected, reached the code under test,
// bit (struck while it could matter); NoBiteRuns counts the runs that
// injected faults none of which bit.
type CellFaults struct {
	Injected   int `json:"injected"`
	Reached    int `json:"reached"`
	Bit        int `json:"bit"`
	NoBiteRuns int `json:"no_bite_runs"`
}

// Untested says why a cell's verdict does not test its scenario ("" when
// it does): in every run a client clock was wrong and the lock never read
// it, and no fault bit (slow-client-clocks × a library); or faults were
// injected and none bit in any run.
func (c *CellResult) Untested() string {
	return run.Untested(c.Runs, c.ClockUnreachedRuns, c.Faults.Injected, c.Faults.Bit) // the real arm's cells use it too
}

// Missed reports whether the cell's verdict differs from the one its
// scenario file expects.
func (c *CellResult) Missed() bool { return c.MatchesExpected != nil && !*c.MatchesExpected }

// PointResult is one point of the pause sweep.
type PointResult struct {
	Lock                  string     `json:"lock"`
	PauseTTL              float64    `json:"pause_ttl"`
	Runs                  int        `json:"runs"`
	PauseShortRuns        int        `json:"pause_short_runs"` // left out of runs: c0 did not pause in full in time
	UnsafeRuns            int        `json:"unsafe_runs"`
	LeaseOverlapRuns      int        `json:"lease_overlap_runs"`
	ResourceViolationRuns int        `json:"resource_violation_runs"`
	UnsafeRateCI95        [2]float64 `json:"unsafe_rate_ci95"`
	Stop                  string     `json:"stop"` // why it stopped: see CellResult.Stop
}

// Results is results.json: the report's numbers, the one model both
// documents are rendered from.
type Results struct {
	Cells      []CellResult  `json:"cells"`
	PauseSweep []PointResult `json:"pause_sweep,omitempty"`
	// The debate's questions (DEBATE.md), each a curve over a scenario
	// file's sweep: block (nil when its scenario is not in the report).
	DriftSweep        *CurveResult `json:"drift_sweep,omitempty"`
	AcquirePauseSweep *CurveResult `json:"acquire_pause_sweep,omitempty"`
	RestartJumpSweep  *CurveResult `json:"restart_jump_sweep,omitempty"`
	// PauseSecondsSweep is the pause sweep at lengths in seconds
	// (pausesecs.go): x is the pause in seconds.
	PauseSecondsSweep *CurveResult `json:"pause_seconds_sweep,omitempty"`
	// PerYear is the expected violations per year of each design under
	// the default fault profile (perhour.go).
	PerYear *PerYearResult `json:"per_year,omitempty"`
	// Deprecated: no longer filled (PerYear replaced it).
	PerHour  *PerHourResult `json:"per_hour,omitempty"`
	Settings struct {
		Seeds      int    `json:"seeds_per_cell"`
		PauseSeeds int    `json:"pause_sweep_seeds"`
		CurveSeeds int    `json:"curve_seeds"` // per point of the debate's curves
		Quick      bool   `json:"quick"`
		Locksim    string `json:"locksim"`
		// StopRule is the sequential rule (StopRule), or "fixed plan".
		StopRule string `json:"stop_rule"`
		// LivenessEnd says how a cell's liveness phase ends (LivenessEnd).
		LivenessEnd string `json:"liveness_end"`
	} `json:"settings"`
}

// Unsafe and Missed count the cells judged unsafe and the cells that
// differ from their expectation.
func (r *Results) Unsafe() (unsafe, missed int) {
	for i := range r.Cells {
		if r.Cells[i].Verdict == checker.VerdictUnsafe {
			unsafe++
		}
		if r.Cells[i].Missed() {
			missed++
		}
	}
	return unsafe, missed
}

// MissedCells are the cells whose verdict differs from their
// expectation, in the report's order.
func (r *Results) MissedCells() []CellResult {
	var out []CellResult
	for _, c := range r.Cells {
		if c.Missed() {
			out = append(out, c)
		}
	}
	return out
}

func (c *Cell) result() CellResult {
	j := CellResult{Scenario: c.Scenario.ID, Lock: c.Lock.ID, Runs: c.Runs, LeaseOverlapRuns: c.Overlap, ResourceViolationRuns: c.Resource,
		Verdict: c.Verdict(), UnsafeRuns: c.Unsafe, LivenessRuns: c.Liveness, UnknownRuns: c.Unknown, OwnershipViolationRuns: c.Ownership,
		StaleSectionRuns: c.Stale, StaleAcceptedRuns: c.StaleAccepted, FencedRejectionRuns: c.Fenced, StarvedRuns: c.Starved, UnfiredPauseRuns: c.Unfired,
		Seeds: [2]uint64{1, uint64(c.Runs)}, DurationNS: int64(c.SafetyPhase), LivenessNS: int64(c.LivenessPhase),
		Timeline: c.Timeline, Story: c.Story, Debate: debateRow(c.Scenario), Expected: c.expect,
		OwnershipOnlyRuns: c.OwnershipOnly, ClockUnreachedRuns: c.ClockUnreached,
		Faults: CellFaults{Injected: c.Injected, Reached: c.Reached, Bit: c.Bit, NoBiteRuns: c.NoBite}, CPUNS: int64(c.CPU)}
	if c.seq != nil {
		j.Stop = c.seq.stop
	}
	r := stats.Rate{K: c.Unsafe, N: c.Runs}
	j.UnsafeRate = round6(r.P())
	lo, hi := r.Interval()
	j.UnsafeRateCI95 = [2]float64{round6(lo), round6(hi)}
	if c.HasUnsafe {
		s := c.FirstUnsafe
		j.FirstUnsafeSeed = &s
		j.Repro = c.Repro(s)
		j.ReproTraceSHA256 = c.FirstUnsafeSHA
	}
	if c.expect != nil && c.expect.Want != "" {
		m := checker.Verdict(c.expect.Want) == j.Verdict
		j.MatchesExpected = &m
	}
	return j
}

// stopOf is why a curve's point stopped ("" before Run).
func (p *Plan) stopOf(pt *point) string {
	if s := p.pointSeq[pt]; s != nil {
		return s.stop
	}
	return ""
}

func round6(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 6, 64), 64)
	return f
}

// pauseShort is how many pause-sweep runs were left out of the rates.
func (p *Plan) pauseShort() int {
	n := 0
	for _, pt := range p.points {
		n += pt.short
	}
	return n
}

// Results is the model of a plan that has run.
func (p *Plan) Results() Results {
	var res Results
	for _, c := range p.cells {
		res.Cells = append(res.Cells, c.result())
	}
	for _, pt := range p.points {
		r := stats.Rate{K: pt.Unsafe, N: pt.Runs}
		lo, hi := r.Interval()
		res.PauseSweep = append(res.PauseSweep, PointResult{Lock: pt.lock, PauseTTL: pt.value, Runs: pt.Runs, PauseShortRuns: pt.short, UnsafeRuns: pt.Unsafe,
			LeaseOverlapRuns: pt.Overlap, ResourceViolationRuns: pt.Resource, UnsafeRateCI95: [2]float64{round6(lo), round6(hi)}, Stop: p.stopOf(pt)})
	}
	for _, c := range p.curves {
		r := c.result(p.curveSeeds)
		for i, pt := range c.points {
			r.Points[i].Stop = p.stopOf(pt)
		}
		switch c.ID {
		case "drift_sweep":
			res.DriftSweep = r
		case "acquire_pause_sweep":
			res.AcquirePauseSweep = r
		case "restart_jump_sweep":
			res.RestartJumpSweep = r
		}
	}
	if c := p.pauseSecs; c != nil {
		res.PauseSecondsSweep = c.result(p.pauseSeeds)
		for i, pt := range c.points {
			res.PauseSecondsSweep.Points[i].Stop = p.stopOf(pt)
		}
	}
	res.PerYear = p.perYear
	res.Settings.Seeds, res.Settings.PauseSeeds, res.Settings.Quick, res.Settings.Locksim = p.seeds, p.pauseSeeds, p.opt.Quick, p.opt.Version
	res.Settings.StopRule = StopRule
	if p.opt.Fixed {
		res.Settings.StopRule = "fixed plan: every seed of every cell and point"
	}
	res.Settings.LivenessEnd = livenessEnd(p.opt.EndWhenLive)
	if len(p.points) == 0 {
		res.Settings.PauseSeeds = 0
	}
	if len(p.curves) > 0 {
		res.Settings.CurveSeeds = p.curveSeeds
	}
	return res
}

// livenessEnd is how a cell's liveness phase ends, in a sentence for the
// report's settings and results.json.
func livenessEnd(early bool) string {
	if !early {
		return "every cell's liveness phase runs to its end (--full-liveness)"
	}
	return "a cell's run ends once every client has acquired after the heal (liveness shown; designs that promise no fairness, judged without an unavailability bound: run.Spec.EndWhenLive), or at the phase's end when it is not shown; the runs' repro lines carry --end-when-live. A violation or a stale section that would have come later in the fault-free liveness phase is then not seen: on the full report of 2026-11-27 this kept every verdict and changed the counts of 14 cells of 338 (docs/FINDINGS.md)"
}
