package reports

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/run"
)

// TestCurvePointOfNoRuns: a point of the pause sweep
// whose runs were all left out (c0 did not pause in full in time) reads
// "0/0 = n/a" in the report's table, not 0.0%, and its chart is drawn
// (without a point there: internal/charts).
func TestCurvePointOfNoRuns(t *testing.T) {
	c := &curve{Locks: []string{"set-nx-cad"}, pauseSweep: true} // short runs left out, as the pause sweeps do
	c.points = []*point{
		{curve: c, lock: "set-nx-cad", value: 1.5, Tally: run.Tally{Runs: 4, Unsafe: 4}, short: 6},
		{curve: c, lock: "set-nx-cad", value: 2, short: 10},
	}
	tab := c.table("pause (× TTL)")
	if len(tab.Rows) != 2 || tab.Rows[1].Cells[0] != "0/0 = n/a (10 short)" {
		t.Errorf("table %+v; want the point of no runs to read 0/0 = n/a (10 short)", tab.Rows)
	}
	for _, r := range tab.Rows {
		if strings.Contains(r.Cells[0], "0/0 = 0") {
			t.Errorf("row %s: %q", r.Value, r.Cells[0])
		}
	}
	if _, err := c.chart().Figure(); err != nil {
		t.Error(err)
	}
}
