package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
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
