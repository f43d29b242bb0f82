package reports

import (
	"strings"
	"testing"
)

// A cell is drawn untested only when its scenario was not tested at all:
// every run's client clock error missed the lock (slow-client-clocks × a
// library) or no fault bit; a cell where some clock faults missed a lock
// that keeps no time keeps its verdict's colour and says how many.
func TestUntestedCells(t *testing.T) {
	for _, c := range []struct {
		cell        CellResult
		untested    string
		markContain string
	}{
		{CellResult{Runs: 20, ClockUnreachedRuns: 20}, "client clock not reached", "client clock not reached"},
		{CellResult{Runs: 200, ClockUnreachedRuns: 13, Faults: CellFaults{Injected: 1558, Reached: 1490, Bit: 1007}}, "", "client clock not read by the lock in 13 runs"},
		{CellResult{Runs: 200, Faults: CellFaults{Injected: 600, Reached: 600}}, "no fault bit", "no fault bit"},
		{CellResult{Runs: 200, UnsafeRuns: 200, OwnershipOnlyRuns: 180, Faults: CellFaults{Injected: 200, Reached: 200, Bit: 200}}, "", "180 ownership only"},
	} {
		if got := c.cell.Untested(); got != c.untested {
			t.Errorf("%+v: Untested() = %q, want %q", c.cell, got, c.untested)
		}
		if m := marks(&c.cell); !strings.Contains(m, c.markContain) {
			t.Errorf("%+v: marks %q, want %q in it", c.cell, m, c.markContain)
		}
	}
}
