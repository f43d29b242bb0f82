package parity

import (
	"fmt"
	"io"
	"time"
)

// WriteTable writes the table people read: a row a scenario, a column an
// arm ("k/n verdict", then "!" when it is not the expectation).
func (r *DriversResult) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-24s", "scenario")
	for _, a := range r.Arms {
		fmt.Fprintf(w, " %-26s", a.Name)
	}
	fmt.Fprintln(w)
	var unsupported []string
	for _, sc := range r.scenarios() {
		fmt.Fprintf(w, "%-24s", sc)
		for _, a := range r.Arms {
			fmt.Fprintf(w, " %-26s", r.cellText(sc, a.Name, &unsupported))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nreal unsafe runs k/n and the cell's verdict (expected in brackets; ! where it differs); the Go arm also: sim k/n.\n")
	for _, a := range r.Arms {
		if a.Driver != "" && !r.hasExpectation(a.Name) {
			why := "no " + ExpectFileName + " in its folder"
			if a.Expectations != "" {
				why = a.Expectations + " names none of these cells"
			}
			fmt.Fprintf(w, "%s: no expectation (%s): its cells show the measured verdict, [-], never !.\n", a.Name, why)
		}
	}
	for _, c := range r.Cells {
		if c.Untested != "" {
			untestedFootnote(w)
			break
		}
	}
	if len(r.Control) > 0 {
		fmt.Fprintf(w, "\nthe control (python-set-nx-cad) against Go set-nx-cad (same verdict, overlapping 95%% Wilson intervals):\n")
		for _, c := range r.Control {
			fmt.Fprintf(w, "  %-24s go real %-14s go sim %-14s python %-14s agree real %v, sim %v\n", c.Scenario, c.Go, c.GoSim, c.Python, c.Agree, c.AgreeSim)
		}
	}
	for _, sc := range r.scenarios() {
		for _, c := range r.Cells {
			if c.Scenario == sc && (c.Lock != "" || c.TTLNS != 0) {
				fmt.Fprintf(w, "\n%s runs in %s's world (Sentinel-managed when replicated), TTL %v", sc, orDash(c.Lock), c.ttl(time.Duration(r.TTLNS)))
				break
			}
		}
	}
	r.writeTraces(w)
	r.writeMachine(w) // stall.go
	for _, u := range unsupported {
		fmt.Fprintf(w, "\nnot supported: %s", u)
	}
	fmt.Fprintf(w, "\nTTL %v; %s; %d real runs at once, %v in all. %s.\n", time.Duration(r.TTLNS), orDash(r.Redis), r.Jobs, time.Duration(r.WallNS).Round(time.Second), r.Note)
}

// hasExpectation: some cell of arm has an expectation.
func (r *DriversResult) hasExpectation(arm string) bool {
	for _, c := range r.Cells {
		if c.Arm == arm && c.Expected != "" {
			return true
		}
	}
	return false
}

func (r *DriversResult) scenarios() []string {
	var out []string
	for _, c := range r.Cells {
		if len(out) == 0 || out[len(out)-1] != c.Scenario {
			out = append(out, c.Scenario)
		}
	}
	return out
}

// Cell is scenario × arm's cell (nil if the table has none).
func (r *DriversResult) Cell(scenario, arm string) *DriverCell {
	for i := range r.Cells {
		if r.Cells[i].Scenario == scenario && r.Cells[i].Arm == arm {
			return &r.Cells[i]
		}
	}
	return nil
}

func (r *DriversResult) cellText(sc, arm string, unsupported *[]string) string {
	c := r.Cell(sc, arm)
	switch {
	case c == nil:
		return "-"
	case c.NotSupported != "":
		*unsupported = append(*unsupported, sc+" × "+arm+": "+c.NotSupported)
		return "not supported"
	}
	s := rate(c.Unsafe, c.Runs, c.Verdict) + " [" + orDash(c.Expected) + "]"
	if c.Untested != "" {
		s += UntestedMark
	}
	if !c.AsExpected && c.Expected != "" {
		s += " !"
	}
	if c.Fenced > 0 {
		s += fmt.Sprintf(" (%d fenced)", c.Fenced)
	}
	if c.SimRuns > 0 {
		s += fmt.Sprintf(" sim %d/%d", c.SimUnsafe, c.SimRuns)
	}
	return s + c.machineMark()
}
