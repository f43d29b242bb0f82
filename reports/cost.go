package reports

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
)

// CellCost is a cell's cost: measured (the CPU its runs took) or
// expected (Plan.Expect).
type CellCost struct {
	Scenario, Lock string
	Runs           int
	CPU            time.Duration
	// Measured counts the runs whose cost was measured (a result store's
	// entries; after Run, every run); the rest are the cost model's.
	Measured int
}

// String is "scenario × lock 12.3s (200 runs)".
func (c CellCost) String() string {
	return fmt.Sprintf("%s × %s %v (%d runs)", c.Scenario, c.Lock, roundCost(c.CPU), c.Runs)
}

// roundCost rounds a cost for people: 3 significant digits or so.
func roundCost(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Second:
		return d.Round(time.Second)
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// Dearest are the n cells whose runs took the most CPU (after Run), dearest
// first; ties in the report's order.
func (p *Plan) Dearest(n int) []CellCost {
	var out []CellCost
	for _, c := range p.cells {
		out = append(out, CellCost{Scenario: c.Scenario.ID, Lock: c.Lock.ID, Runs: c.Runs, CPU: c.CPU, Measured: c.Runs})
	}
	return dearest(out, n)
}

func dearest(cs []CellCost, n int) []CellCost {
	slices.SortStableFunc(cs, func(a, b CellCost) int { return cmp.Compare(b.CPU, a.CPU) })
	return cs[:min(n, len(cs))]
}

// TotalCPU is the CPU all the plan's runs took (after Run): cells, the
// pause sweep and the curves, not the timeline reruns.
func (p *Plan) TotalCPU() time.Duration { return p.cpu }

// CostLine says, in one line, what the plan's runs cost and where it went.
func (p *Plan) CostLine(n int) string {
	var parts []string
	for _, c := range p.Dearest(n) {
		parts = append(parts, c.String())
	}
	seq := ""
	if !p.opt.Fixed && p.skipped+p.overrun > 0 {
		seq = fmt.Sprintf("sequential: %d of the fixed plan's %d runs counted, %d started past a settled cell's stop; ", len(p.jobs)-p.skipped-p.overrun, len(p.jobs), p.overrun)
	}
	return fmt.Sprintf("%sCPU %v in all; dearest cells: %s", seq, roundCost(p.TotalCPU()), strings.Join(parts, ", "))
}

// The cost model, for runs the result store has not measured: a run's CPU
// is its lock's rate (µs of CPU per client per virtual second, lockRate)
// × its clients × its virtual seconds (safety and liveness phases) × its
// scenario's factor (scenarioFactor: how busy its faults keep the clients
// beyond that). What a run costs is mostly its Redis commands (plan.go).
// Both tables were fitted (geometric means) to the --quick report's
// measured cells, 20 runs each, on the project's machine kind shared with
// other work (2026-11-27): in that sample the model is within 0.53–1.77×
// of the measured cost for 80% of the cells and has 8 of the 10 dearest
// (lock rate alone: 0.32–2.8×, 4 of 10). An in-sample fit: a guide to
// where the cost goes, not a promise of seconds; the store's measured
// costs replace it run by run. A lock or scenario not in the tables gets
// modelDefaultRate or 1.
var (
	lockRate = map[string]float64{ // µs per client-second
		"fencing": 31, "fencing-strict": 30, "getset-expiry": 75, "gocron": 42, "primary-replica": 40, "redislock": 73, "redisson-fair": 62, "redisson-lock": 17, "redisson-multilock": 74, "redisson-rw": 20, "redlock": 113, "redsync": 196, "set-nx-cad": 27, "set-nx-del": 20, "set-nx-getdel": 26, "setnx-del": 71, "setnx-expire": 21, "spin-retry": 56, "token-cas": 28, "version-cas": 91, "watchdog": 17, "zk-fencing": 532, "zk-lock": 535,
	}
	scenarioFactor = map[string]float64{
		"bonus-pool": 3.48, "clock-jump": 0.39, "default": 1.84, "delayed-restart": 0.76, "delayed-restart-jump": 0.52, "delayed-write": 2.03, "drift": 0.39, "failover": 0.87, "failover-wait": 0.88, "foreign-release": 1.36, "member-crashes": 0.85, "multilock-bare-majority": 2.31, "multilock-silent-group": 1.63, "multilock-silent-last-group": 2.42, "no-faults": 1.63, "pause-after-check": 1.62, "pause-during-acquire": 1.61, "redlock-2-of-5": 1.43, "redlock-all-up": 8.31, "restart-fsync-always": 0.57, "restart-no-persistence": 0.49, "slow-client-clocks": 0.32, "split-brain": 3.12, "token-regression": 0.9, "watchdog-starved": 0.41,
	}
)

const modelDefaultRate = 50 // µs per client-second: about the tables' median

// modelCost is the model's CPU for one run of spec (0 if it does not build).
func modelCost(spec run.Spec) time.Duration {
	job, err := spec.Build()
	if err != nil {
		return 0
	}
	c := job.Config
	rate, ok := lockRate[spec.Lock]
	if !ok {
		rate = modelDefaultRate
	}
	f, ok := scenarioFactor[spec.ScenarioID()]
	if !ok {
		f = 1
	}
	vsec := (c.Duration + c.Liveness).Seconds()
	return time.Duration(rate * float64(time.Microsecond) * float64(c.Clients) * vsec * f)
}

// Expect is what each cell is expected to cost, in the report's order:
// the store's measured CPU for the runs it holds (nil store: none), the
// cost model's for the others. It runs nothing; the other runs (the pause
// sweep, the curves) are summed into rest. The sequential rule is applied
// to the store's outcomes, seed by seed, while they last: a cell the
// store settles counts its runs up to its stop; from the first seed the
// store lacks, every seed up to the cap counts (at most).
func (p *Plan) Expect(st *Store) (cells []CellCost, rest CellCost) {
	model := map[string]time.Duration{} // by spec with seed 0
	byCell := map[*Cell]*CellCost{}
	for _, c := range p.cells {
		cells = append(cells, CellCost{Scenario: c.Scenario.ID, Lock: c.Lock.ID})
	}
	for i, c := range p.cells {
		byCell[c] = &cells[i]
	}
	rest.Scenario, rest.Lock = "pause sweep and curves", ""
	type replay struct {
		t       run.Tally
		seeds   int
		stop    string
		unknown bool // a seed the store lacks: the rule cannot go on
	}
	replays := map[*seqState]*replay{}
	for _, j := range p.jobs {
		cc := &rest
		if j.cell != nil {
			cc = byCell[j.cell]
		}
		rp := replays[j.seq]
		if rp == nil {
			rp = &replay{}
			replays[j.seq] = rp
		}
		if rp.stop != "" {
			continue
		}
		cc.Runs++
		if o, ok := st.outcome(j.req); ok {
			cc.CPU += o.CPU
			cc.Measured++
			if !rp.unknown {
				if j.point == nil || !j.point.leavesShortOut() || !o.PauseShort {
					rp.t.Add(o, j.req.Spec.Seed)
				}
				rp.seeds++
				rp.stop = stopReason(&rp.t, rp.seeds, j.seq.cap, p.opt.Fixed)
			}
			continue
		}
		rp.unknown = true
		s := j.req.Spec
		s.Seed = 0
		b, _ := json.Marshal(s)
		m, ok := model[string(b)]
		if !ok {
			s.Seed = 1
			m = modelCost(s)
			model[string(b)] = m
		}
		cc.CPU += m
	}
	return cells, rest
}

// outcome is the store's entry for req (its CPU: what its run took).
func (s *Store) outcome(req sweep.Request) (run.Outcome, bool) {
	if s == nil {
		return run.Outcome{}, false
	}
	key := s.key(req)
	if key == "" {
		return run.Outcome{}, false
	}
	return s.get(key, req)
}

// WritePlan writes the dry run: every cell with its runs and expected
// cost, the rest of the runs, the total, and the ten dearest cells.
func (p *Plan) WritePlan(w io.Writer, st *Store, workers int) {
	cells, rest := p.Expect(st)
	var total, toRun time.Duration // toRun: the model's part (the store holds the rest)
	measured, runs := rest.Measured, rest.Runs
	runsAll := rest.Runs
	for _, c := range cells {
		runsAll += c.Runs
	}
	how := "the fixed plan (--fixed): every seed"
	if !p.opt.Fixed {
		how = fmt.Sprintf("sequential: at most; a cell stops once settled, and the %d the fixed plan would run shrink as the result store learns where", p.Runs())
	}
	fmt.Fprintf(w, "plan: %d cells, %d runs (%s; timeline reruns of the unsafe cells come after)\n", len(cells), runsAll, how)
	for _, c := range cells {
		fmt.Fprintf(w, "  %s × %s: %d runs, expected CPU %v%s\n", c.Scenario, c.Lock, c.Runs, roundCost(c.CPU), measuredNote(c))
		total += c.CPU
		measured += c.Measured
		runs += c.Runs
	}
	if rest.Runs > 0 {
		fmt.Fprintf(w, "  %s: %d runs, expected CPU %v%s\n", rest.Scenario, rest.Runs, roundCost(rest.CPU), measuredNote(rest))
		total += rest.CPU
	}
	for _, c := range append(cells, rest) {
		if c.Runs > 0 {
			toRun += time.Duration(float64(c.CPU) * float64(c.Runs-c.Measured) / float64(c.Runs)) // about: the cell's mean
		}
	}
	workers = max(1, workers)
	fmt.Fprintf(w, "expected CPU %v in all; %d of the %d runs' costs measured (in the result store: they will not run again), the rest from the cost model; to run: about %v of CPU, %v of wall time on %d workers of an idle machine\n",
		roundCost(total), measured, runs, roundCost(toRun), roundCost(toRun/time.Duration(workers)), workers)
	fmt.Fprintf(w, "the ten dearest cells:\n")
	for _, c := range dearest(cells, 10) {
		fmt.Fprintf(w, "  %s\n", c)
	}
}

func measuredNote(c CellCost) string {
	switch c.Measured {
	case 0:
		return " (model)"
	case c.Runs:
		return " (measured, in the store)"
	}
	return fmt.Sprintf(" (%d runs measured, in the store)", c.Measured)
}
