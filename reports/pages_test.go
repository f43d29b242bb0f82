package reports

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
)

// The findings say the report's answer in sentences: sizes, verdicts, the
// locks never broken and those broken most widely, and the cells that
// differ by name (at most maxDiffer, then how many more); the heat map
// shades unsafe cells by their rate and groups the columns by family.
func TestFindingsAndHeat(t *testing.T) {
	p, err := NewPlan(Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	no, yes := false, true
	var res Results
	for _, c := range p.Cells() {
		j := CellResult{Scenario: c.Scenario.ID, Lock: c.Lock.ID, Verdict: checker.VerdictSafe, Runs: 20, MatchesExpected: &yes}
		if c.Lock.ID == "redlock" {
			j.Verdict, j.UnsafeRuns, j.UnsafeRate = checker.VerdictUnsafe, 3, 0.15
			j.Expected, j.MatchesExpected = &Expectation{Want: "safe"}, &no
		}
		res.Cells = append(res.Cells, j)
	}
	f := p.findings(res)
	text := strings.Join(f.Lines, "\n")
	for _, want := range []string{"Never unsafe in any scenario here: ", "Broken most widely: redlock (unsafe in ", "cells differ from the expectation of their scenario files"} {
		if !strings.Contains(text, want) {
			t.Errorf("findings lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Never unsafe in any scenario here: redlock") || strings.Contains(text, ", redlock,") {
		t.Errorf("redlock listed as never unsafe:\n%s", text)
	}
	unsafeCells := 0
	for _, c := range res.Cells {
		if c.Verdict == checker.VerdictUnsafe {
			unsafeCells++
		}
	}
	if len(f.Differ) != min(unsafeCells, maxDiffer) || f.More != max(0, unsafeCells-maxDiffer) {
		t.Errorf("%d differing cells named, %d more; want %d in all", len(f.Differ), f.More, unsafeCells)
	}
	results := map[string]*CellResult{}
	for i := range res.Cells {
		results[anchor(res.Cells[i].Scenario, res.Cells[i].Lock)] = &res.Cells[i]
	}
	h := p.heat(results)
	span := 0
	for _, g := range h.Groups {
		span += g.Span
	}
	if span != len(h.Columns) || len(h.Groups) < 4 {
		t.Errorf("groups %+v do not cover the %d columns", h.Groups, len(h.Columns))
	}
	for _, r := range h.Rows {
		for i, c := range r.Cells {
			if c.Empty {
				continue
			}
			switch h.Columns[i].ID {
			case "redlock":
				if c.Class != "u1 miss" || c.Text != "15" {
					t.Errorf("%s × redlock: class %q, text %q; want u1 miss, 15", r.ID, c.Class, c.Text)
				}
			default:
				if c.Class != "safe" || c.Text != "0" {
					t.Errorf("%s × %s: class %q, text %q", r.ID, h.Columns[i].ID, c.Class, c.Text)
				}
			}
		}
	}
}
