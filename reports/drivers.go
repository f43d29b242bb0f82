package reports

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/realarm/parity"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
)

// driversView is the report's "lock libraries in other languages"
// section, from a parity folder's drivers.json ('locksim parity
// --drivers'; docs/DRIVERS.md). Its templates are drivers.html.tmpl and
// drivers.md.tmpl.
type driversView struct {
	Title, ID   string
	Intro       string
	Arms        []parity.Arm
	Rows        []driversRow
	Expect      []driversExpect
	Control     []parity.ControlCheck
	Unsupported []string
	Unexpected  []string
}

type driversRow struct {
	Scenario string
	Cells    []driversCell
}

type driversCell struct {
	Text, Expected, Class string
}

type driversExpect struct {
	Arm, Scenario, Why string
	Verdict            checker.Verdict
}

// readDrivers reads every drivers table the folder has (an input error
// if one cannot be read).
func readDrivers(dir string) ([]*parity.DriversResult, error) {
	r, err := parity.ReadAllDrivers(dir)
	if err != nil {
		return nil, &sweep.InputError{Field: "parity", Err: fmt.Errorf("%s: %v (write it with 'locksim parity --drivers drivers --out %s')", dir, run.UnwrapPathError(err), dir)}
	}
	return r, nil
}

// hasParityJSON says whether a parity folder holds parity.json (a folder
// of the drivers table only has none).
func hasParityJSON(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, parity.JSONFile))
	return !errors.Is(err, os.ErrNotExist)
}

// driversViews builds a section a drivers table (none without one).
func (p *Plan) driversViews() []*driversView {
	var out []*driversView
	for _, r := range p.drivers {
		out = append(out, driversViewOf(r))
	}
	return out
}

func driversViewOf(r *parity.DriversResult) *driversView {
	world := r.World
	if world == "" {
		world = parity.DriverWorld
	}
	runs := 0
	for _, c := range r.Cells {
		runs = max(runs, c.Runs)
	}
	v := &driversView{Arms: r.Arms, Control: r.Control, Title: "Lock libraries in other languages", ID: "drivers",
		Intro: fmt.Sprintf("Lock libraries in other languages run as driver processes (docs/DRIVERS.md) on the real arm: real redis-server on loopback (%s), "+
			"every driver in %s's world (its nodes, TTL %v, the scenario's faults for %s; a client pause is SIGSTOP of the driver, a client clock fault is libfaketime in it), "+
			"up to %d real runs a cell (seeds 1..%d), %d at once, %v in all. Each cell reads k/n unsafe runs and the cell's verdict, beside the expectation written from the library's code before measuring. "+
			"The real arm's seed fixes the fault schedule and the workload's choices, not the interleaving: a real run is not replayable, and the same seed in two arms is not the same run.",
			orDash(r.Redis), world, time.Duration(r.TTLNS), world, runs, runs, r.Jobs, time.Duration(r.WallNS).Round(time.Second))}
	if world != parity.DriverWorld {
		v.Title, v.ID = "Lock libraries in other languages: "+world+"'s world", "drivers-"+world
	}
	kept := 0
	noted := map[string]bool{}
	for _, c := range r.Cells {
		kept += len(c.Traces)
		if (c.Lock != "" || c.TTLNS != 0) && !noted[c.Scenario] {
			noted[c.Scenario] = true
			ttl := time.Duration(r.TTLNS)
			if c.TTLNS != 0 {
				ttl = time.Duration(c.TTLNS)
			}
			v.Intro += fmt.Sprintf(" %s runs in %s's world (a primary and its replicas, through Sentinel when replicated), TTL %v.", c.Scenario, orDash(c.Lock), ttl)
		}
	}
	if kept > 0 {
		v.Intro += fmt.Sprintf(" The traces of %d runs whose verdict is not their cell's expectation or most of its runs' are kept in the parity folder (named below).", kept)
	}
	seen := map[string]bool{}
	for _, c := range r.Cells {
		if seen[c.Scenario] {
			continue
		}
		seen[c.Scenario] = true
		row := driversRow{Scenario: c.Scenario}
		for _, a := range r.Arms {
			row.Cells = append(row.Cells, driverCellView(r.Cell(c.Scenario, a.Name), &v.Unsupported, &v.Unexpected))
		}
		v.Rows = append(v.Rows, row)
	}
	for _, a := range r.Arms {
		if a.Driver == "" {
			continue
		}
		for _, c := range r.Cells {
			if c.Arm == a.Name && c.Expected != "" {
				v.Expect = append(v.Expect, driversExpect{Arm: a.Name, Scenario: c.Scenario, Verdict: c.Expected, Why: c.ExpectedWhy})
			}
		}
	}
	return v
}

func driverCellView(c *parity.DriverCell, unsupported, unexpected *[]string) driversCell {
	switch {
	case c == nil:
		return driversCell{Text: "-", Expected: "-"}
	case c.NotSupported != "":
		*unsupported = append(*unsupported, c.Scenario+" × "+c.Arm+": "+c.NotSupported)
		return driversCell{Text: "not supported", Expected: orDash(c.Expected)}
	}
	d := driversCell{Text: fmt.Sprintf("%d/%d %s", c.Unsafe, c.Runs, c.Verdict), Expected: orDash(c.Expected), Class: "safe"}
	if c.Fenced > 0 {
		d.Text += fmt.Sprintf(", %d operations fenced", c.Fenced)
	}
	if c.SimRuns > 0 {
		d.Text += fmt.Sprintf(" (sim %d/%d)", c.SimUnsafe, c.SimRuns)
	}
	if c.Expected != "" && !c.AsExpected {
		d.Class = "unsafe"
		*unexpected = append(*unexpected, fmt.Sprintf("%s × %s: %d/%d unsafe (%s), expected %s%s", c.Scenario, c.Arm, c.Unsafe, c.Runs, c.Verdict, c.Expected, tracesNote(c)))
	} else if len(c.Traces) > 0 {
		*unexpected = append(*unexpected, fmt.Sprintf("%s × %s: as expected (%s), with runs that were not%s", c.Scenario, c.Arm, c.Verdict, tracesNote(c)))
	}
	return d
}

// tracesNote names a cell's kept traces.
func tracesNote(c *parity.DriverCell) string {
	if len(c.Traces) == 0 {
		return ""
	}
	s := "; traces kept:"
	for i, t := range c.Traces {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(" seed %d (%s) %s", t.Seed, t.Verdict, t.File)
	}
	return s
}
