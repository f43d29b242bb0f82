package reports

import (
	"fmt"
	"sync/atomic"

	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/run"
)

// Sequential sampling. A cell (or a curve's point) runs seeds 1, 2, 3, …
// in order, a prefix of the fixed plan, and stops at the first prefix of
// n seeds where one of these holds (k: its unsafe runs among the n):
//
//   - k > 0 and the 95% Wilson interval of k/n is at most ±5 percentage
//     points wide (hi − lo ≤ 10 pp): StopNarrow;
//   - k = 0, the interval's upper bound is at most 2% (n ≥ 189) and the
//     cell's verdict among safe, liveness and unknown is no coin toss:
//     each comparison the verdict makes (liveness against safe, unknown
//     against safe, liveness against unknown when both beat safe) has the
//     Wilson interval of the one's share of the two wholly below or above
//     ½ (verdictSettled): StopBound;
//   - n reaches the cap (the plan's seeds per cell or per point): StopCap.
//
// The decision reads only the results of seeds 1..n in seed order, never
// which worker finished first or how many ran at once, so a report's
// numbers do not depend on -j: runs already started past a cell's stop
// (a few, while the decision was pending) are run, stored and paid for,
// but never counted (Plan.Overrun).
const (
	StopNarrow = "narrow" // violations seen; interval ±5 pp or narrower
	StopBound  = "bound"  // none seen; upper bound ≤ 2%
	StopCap    = "cap"    // the plan's seeds ran out
	StopFixed  = "fixed"  // Options.Fixed: the fixed plan, no early stop
)

// The rule's constants.
const (
	stopHalfWidth = 0.05 // ±5 percentage points
	stopUpper     = 0.02 // a cell with no violation: upper bound 2%
)

// StopRule is the rule in a sentence, for the report and results.json.
const StopRule = "each cell runs seeds 1, 2, 3, … and stops at the first n where: it has violations and the 95% Wilson interval of its unsafe rate is at most ±5 percentage points wide; or it has none, the interval's upper bound is at most 2% (189 runs) and each comparison its verdict makes is settled (liveness against safe, unknown against safe, and liveness against unknown when both beat safe: the 95% interval of the one's share of the two lies wholly on one side of ½); or n reaches the cap (the seeds per cell; per point for the curves); the decision reads only seeds 1..n, in order"

// seqState is one cell's or point's place in the sequential plan.
type seqState struct {
	cap   int    // seeds at most
	seeds int    // seeds counted so far, in order (emit's goroutine only)
	stop  string // why it stopped ("" while it runs; emit's goroutine only)
	// done tells the workers to skip its remaining seeds.
	done atomic.Bool
}

// stopReason applies the rule to a tally of seeds 1..seeds ("" : go on).
// fixed turns the early stops off.
func stopReason(t *run.Tally, seeds, cap int, fixed bool) string {
	if seeds >= cap {
		if fixed {
			return StopFixed
		}
		return StopCap
	}
	if fixed || t.Runs == 0 {
		return ""
	}
	lo, hi := stats.Wilson(t.Unsafe, t.Runs)
	if t.Unsafe > 0 {
		if hi-lo <= 2*stopHalfWidth {
			return StopNarrow
		}
		return ""
	}
	if hi <= stopUpper && verdictSettled(t) {
		return StopBound
	}
	return ""
}

// verdictSettled reports whether more seeds could still change the
// verdict of a tally without violations (the cell rule, run.Tally.Verdict: the most
// runs among safe, liveness and unknown): each comparison the verdict
// makes must be settled, liveness against safe, unknown against safe, and
// liveness against unknown when both beat safe.
func verdictSettled(t *run.Tally) bool {
	safe := t.Runs - t.Liveness - t.Unknown
	if !settled(t.Liveness, safe) || !settled(t.Unknown, safe) {
		return false
	}
	if t.Liveness > safe && t.Unknown > safe {
		return settled(t.Liveness, t.Unknown)
	}
	return true
}

// settled reports whether a against b is no coin toss: the 95% interval
// of a's share of the two lies wholly below or above ½ (true when neither
// happened).
func settled(a, b int) bool {
	if a+b == 0 {
		return true
	}
	lo, hi := stats.Wilson(a, a+b)
	return hi < 0.5 || lo > 0.5
}

// StopText says in words why a cell stopped where it did.
func StopText(stop string) string {
	switch stop {
	case StopNarrow:
		return "interval ±5 pp"
	case StopBound:
		return "none, below 2%"
	case StopCap:
		return "cap"
	case StopFixed:
		return "fixed plan"
	}
	return stop
}

// methodText is the report's sentence on how many seeds a cell ran.
func (p *Plan) methodText() string {
	if p.opt.Fixed {
		return fmt.Sprintf("%d seeds per cell (the fixed plan)", p.seeds)
	}
	return fmt.Sprintf("seeds 1, 2, 3, … per cell, at most %d, stopped by a stated rule (a cell with violations once the 95%% interval of its unsafe rate is at most ±5 percentage points wide; one without once its upper bound is at most 2%%; the runs column says how many it took and why it stopped)", p.seeds)
}

// Overrun is how many runs Run made past a cell's or point's stop (they
// had started before the stop was known): paid for, stored, not counted.
func (p *Plan) Overrun() int { return p.overrun }

// settingsRule is the Settings list's line on the stopping rule.
func settingsRule(fixed bool) string {
	if fixed {
		return "the fixed plan (--fixed): every seed"
	}
	return "sequential: " + StopRule
}

// perPoint says how many seeds a curve's point ran: the fixed count, or
// the sequential rule's cap.
func (p *Plan) perPoint(seeds int) string {
	if p.opt.Fixed {
		return fmt.Sprintf("%d seeds per point", seeds)
	}
	return fmt.Sprintf("seeds 1, 2, … per point, at most %d, stopped by the report's rule", seeds)
}

// pauseSeedsRun is how many seeds the pause sweep's points counted, the
// runs left out for a short pause included.
func (p *Plan) pauseSeedsRun() int {
	n := 0
	for _, pt := range p.points {
		if s := p.pointSeq[pt]; s != nil {
			n += s.seeds
		}
	}
	return n
}
