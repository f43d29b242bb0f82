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
	return fmt.Sprintf("CPU %v in all; dearest cells: %s", roundCost(p.TotalCPU()), strings.Join(parts, ", "))
}

// The cost model, for runs the result store has not measured: a run's CPU
// is about modelPerClientSecond × its clients × its virtual seconds
// (safety and liveness phases) × (1 + its nodes / 3). What a run costs is
// mostly its Redis commands (plan.go), which grow with the clients polling
// the lock, the time they poll for and the nodes each command reaches.
// Fitted to the --quick report's measured cells on the project's machine
// kind (see modelPerClientSecond); a rough guide to where the cost goes,
// not a promise of seconds: the store's measured costs replace it.
const modelPerClientSecond = 400 * time.Microsecond

// modelCost is the model's CPU for one run of spec (0 if it does not build).
func modelCost(spec run.Spec) time.Duration {
	job, err := spec.Build()
	if err != nil {
		return 0
	}
	c := job.Config
	vsec := (c.Duration + c.Liveness).Seconds()
	return time.Duration(float64(modelPerClientSecond) * float64(c.Clients) * vsec * (1 + float64(len(c.Nodes))/3))
}

// Expect is what each cell is expected to cost, in the report's order:
// the store's measured CPU for the runs it holds (nil store: none), the
// cost model's for the others. It runs nothing; the other runs (the pause
// sweep, the curves) are summed into rest.
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
	for _, j := range p.jobs {
		cc := &rest
		if j.cell != nil {
			cc = byCell[j.cell]
		}
		cc.Runs++
		if cpu, ok := st.measured(j.req); ok {
			cc.CPU += cpu
			cc.Measured++
			continue
		}
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

// measured is the CPU the store's entry for req says its run took.
func (s *Store) measured(req sweep.Request) (time.Duration, bool) {
	if s == nil {
		return 0, false
	}
	key := s.key(req)
	if key == "" {
		return 0, false
	}
	o, ok := s.get(key, req)
	return o.CPU, ok
}

// WritePlan writes the dry run: every cell with its runs and expected
// cost, the rest of the runs, the total, and the ten dearest cells.
func (p *Plan) WritePlan(w io.Writer, st *Store, workers int) {
	cells, rest := p.Expect(st)
	var total time.Duration
	measured, runs := rest.Measured, rest.Runs
	fmt.Fprintf(w, "plan: %d cells, %d runs (timeline reruns of the unsafe cells come after)\n", len(cells), p.Runs())
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
	workers = max(1, workers)
	fmt.Fprintf(w, "expected CPU %v in all (about %v of wall time on %d workers); %d of the %d runs' costs measured (in the result store, which will not rerun them), the rest from the cost model\n",
		roundCost(total), roundCost(total/time.Duration(workers)), workers, measured, runs)
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
