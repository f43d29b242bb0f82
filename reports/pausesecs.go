package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

// The pause sweep in seconds: the same pause as the pause sweep (client c0
// stops once just before its first protected write at or after
// run.PauseStart, in the no-faults world with two clients), at absolute
// lengths, for every design of the report's no-faults row that has a
// lease. The pause sweep's multiples of each design's TTL cannot answer
// "which designs survive a 2 s pause?": with TTLs of 3 s, 10 s and 30 s a
// multiple is a different pause for each. The values: 0.5 s and 1 s, a
// long GC or VM pause that fits inside every lease; 2 s, the question the
// index answers; 5 s, past the 3 s leases; 10 s, at the 10 s leases; 30 s,
// at the 30 s (watchdog) leases. Runs whose pause did not run in full
// inside the safety phase are left out of the rates, as in the pause
// sweep. A point that is also a pause-sweep point (1.5 s for a 3 s lease)
// is the same run and comes from the result store.
var (
	pauseSecsValues = []float64{0.5, 1, 2, 5, 10, 30}
	pauseSecsQuick  = []float64{0.5, 2, 10}
	// pauseSecsAsked is the pause the index answers for every design.
	pauseSecsAsked = 2.0
)

const (
	pauseSecsID    = "pause_seconds_sweep"
	pauseSecsTitle = "Violation rate vs pause length in seconds"
)

// pauseSecsLocks are the designs the seconds sweep runs (the report's
// no-faults row, in column order) and those it leaves out, each with why:
// a design without a lease (a pause cannot outlast what never expires) and
// the consensus designs (their section is the real arm's; the pause sweep
// does not run them either).
func (p *Plan) pauseSecsLocks() (ids, left []string) {
	for _, c := range p.cells {
		if c.Scenario.ID != pauseSweepScenario {
			continue
		}
		id := c.Lock.ID
		switch {
		case isConsensusLock(id):
			left = append(left, id+" (consensus: the pause sweeps run lease locks only)")
		case c.Lock.TTL <= 0:
			left = append(left, id+" (no TTL: its key never expires)")
		default:
			ids = append(ids, id)
		}
	}
	return columnOrder(ids), left
}

// addPauseSecs lays out the seconds sweep as a curve whose short runs are
// left out (curve.pauseSweep).
func (p *Plan) addPauseSecs(values []float64) ([]job, error) {
	c := &curve{ID: pauseSecsID, Title: pauseSecsTitle, Scenario: pauseSweepScenario, XLabel: "pause (seconds)", Scale: 1, pauseSweep: true}
	ids, _ := p.pauseSecsLocks()
	c.Locks = ids
	var jobs []job
	for _, v := range values {
		for _, id := range ids {
			info, err := catalogue.Get(id)
			if err != nil {
				return nil, err
			}
			// The pause as the multiple of the TTL run.Spec.Pause takes
			// (12 digits: 2 s of a 3 s lease rounds back to 2 s).
			frac := roundX(v / info.TTL.Seconds())
			params := scenarios.Params{Clients: pauseSweepClients, Duration: run.PauseStart + pauseSweepSlack + time.Duration(frac*float64(info.TTL)) + info.TTL,
				Liveness: pauseSweepLiveness}
			spec := run.Spec{Scenario: pauseSweepScenario, Lock: id, Seed: 1, Params: params, Pause: &frac}
			if _, err := spec.Build(); err != nil {
				return nil, fmt.Errorf("pause sweep in seconds, lock %s, %v s: %w", id, v, err)
			}
			pt := &point{curve: c, lock: id, value: v, run: spec}
			c.points = append(c.points, pt)
			jobs = append(jobs, job{req: sweep.Request{Spec: spec}, point: pt})
		}
	}
	if len(jobs) > 0 {
		p.pauseSecs = c
	}
	return jobs, nil
}

// pauseCell is a point's reading: "0/50 (≤ 7.1%)" when no run was
// unsafe (the 95% upper bound), "12/50 [14.3%, 37.5%]" when some were.
func pauseCell(pt *point) string {
	if pt.Runs == 0 {
		return "no runs"
	}
	lo, hi := stats.Wilson(pt.Unsafe, pt.Runs)
	if pt.Unsafe == 0 {
		return fmt.Sprintf("0/%d (≤ %s)", pt.Runs, pct(hi))
	}
	return fmt.Sprintf("%d/%d [%s, %s]", pt.Unsafe, pt.Runs, pct(lo), pct(hi))
}

// secsTable is the seconds sweep's numbers: a row a design (its TTL in
// seconds), a column a pause, so twenty designs stay inside the page.
func (c *curve) secsTable() *pauseTable {
	t := &pauseTable{XLabel: "design (TTL) \\ pause"}
	var vals []float64
	for _, pt := range c.points {
		if !slices.Contains(vals, pt.value) {
			vals = append(vals, pt.value)
		}
	}
	slices.Sort(vals)
	for _, v := range vals {
		t.Locks = append(t.Locks, run.FormatValue(v)+" s")
	}
	for _, id := range c.Locks {
		row := pauseRow{Value: fmt.Sprintf("%s (%s)", id, seconds(pauseTTL(id)))}
		for _, v := range vals {
			txt := ""
			for _, pt := range c.points {
				if pt.lock == id && pt.value == v {
					txt = pauseCell(pt)
					if pt.short > 0 {
						txt += fmt.Sprintf(" (%d short)", pt.short)
					}
				}
			}
			row.Cells = append(row.Cells, txt)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// pauseAnswer is the index's answer to "which designs survive a pause of
// 2 s?", from the seconds sweep: beside the per-design verdicts.
type pauseAnswer struct {
	Seconds string // "2 s"
	What    string // what the pause is
	Href    string // the seconds sweep's chart and table
	Range   string // the lengths it ran ("0.5 s to 30 s")
	// Safe are the designs with no unsafe run at that pause, Unsafe those
	// with some, each grouped by its counts. Left are the designs of the
	// report the sweep did not run, with why.
	Safe, Unsafe []answerGroup
	Left         []string
}

// answerGroup is the designs of one reading: "0 of 50 runs unsafe, at
// most 7.1% at 95%" and "set-nx-cad (TTL 3 s)", ...
type answerGroup struct {
	Counts  string
	Designs []string
}

// addTo puts a design into the group of its counts (in first-seen order).
func addTo(gs []answerGroup, counts, design string) []answerGroup {
	for i := range gs {
		if gs[i].Counts == counts {
			gs[i].Designs = append(gs[i].Designs, design)
			return gs
		}
	}
	return append(gs, answerGroup{Counts: counts, Designs: []string{design}})
}

// pauseAnswer reads the seconds sweep at pauseSecsAsked (nil when the
// sweep did not run that pause).
func (p *Plan) pauseAnswer() *pauseAnswer {
	c := p.pauseSecs
	if c == nil {
		return nil
	}
	a := &pauseAnswer{Seconds: run.FormatValue(pauseSecsAsked) + " s", Href: "#fig-" + slug(pauseSecsTitle),
		What: fmt.Sprintf("client c0 stops once, just before its write to the storage, while it holds the lock; %d clients, no other faults", pauseSweepClients)}
	found := false
	for _, id := range c.Locks {
		for _, pt := range c.points {
			if pt.lock != id || pt.value != pauseSecsAsked || pt.Runs == 0 {
				continue
			}
			found = true
			s := fmt.Sprintf("%s (TTL %s)", id, seconds(pauseTTL(id)))
			lo, hi := stats.Wilson(pt.Unsafe, pt.Runs)
			if pt.Unsafe > 0 {
				a.Unsafe = addTo(a.Unsafe, fmt.Sprintf("%d of %d runs unsafe, 95%% interval [%s, %s]", pt.Unsafe, pt.Runs, pct(lo), pct(hi)), s)
			} else {
				a.Safe = addTo(a.Safe, fmt.Sprintf("0 of %d runs unsafe, at most %s at 95%%", pt.Runs, pct(hi)), s)
			}
		}
	}
	if !found {
		return nil
	}
	_, a.Left = p.pauseSecsLocks()
	vals := secsValues(c)
	a.Range = vals[0] + " s to " + vals[len(vals)-1] + " s"
	return a
}

// zeroTop is the 95% upper bound of 0 unsafe runs of n.
func zeroTop(n int) float64 {
	_, hi := stats.Wilson(0, n)
	return hi
}

// pauseSecsCaption is the seconds chart's caption.
func (p *Plan) pauseSecsCaption() string {
	_, left := p.pauseSecsLocks()
	s := fmt.Sprintf("Scenario %s with %d clients; client c0 stops just before its first write to the storage at or after %v, once, for the given number of seconds (the same pause as the chart in multiples of the TTL, at the same lengths for every design). %s, less the runs where c0 did not pause in full inside the safety phase (counted as \"short\" in the table). Each marker is a measured point with its 95%% Wilson interval; no line joins them, since nothing was measured between them. The x axis is not linear (its label says how), so each length gets room. In the table, a 0 reads with its 95%% upper bound: 0/%d means at most %s of such runs, not none.",
		pauseSweepScenario, pauseSweepClients, run.PauseStart, p.perPoint(p.pauseSeeds), p.pauseSeeds, pct(zeroTop(p.pauseSeeds)))
	if len(left) > 0 {
		s += " Not run: " + strings.Join(left, ", ") + "."
	}
	return s
}

// secsValues are the seconds sweep's pauses, in order ("0.5", "2").
func secsValues(c *curve) []string {
	var vals []float64
	for _, pt := range c.points {
		if !slices.Contains(vals, pt.value) {
			vals = append(vals, pt.value)
		}
	}
	slices.Sort(vals)
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = run.FormatValue(v)
	}
	return out
}
