package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
)

// A cell the scenario file expects unsafe that no run broke says how rare
// a violation may still be (the top of its 95% interval) and is framed
// "unseen", not "miss"; a cell that broke what the file expects safe is a
// plain miss.
func TestUnseenViolationSaysHowRare(t *testing.T) {
	p, err := NewPlan(Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	no, yes := false, true
	var res Results
	for _, c := range p.Cells() {
		j := CellResult{Scenario: c.Scenario.ID, Lock: c.Lock.ID, Verdict: checker.VerdictSafe, Runs: 20, MatchesExpected: &yes}
		switch {
		case c.Scenario.ID == "pause-after-check" && c.Lock.ID == "redisson-rw":
			j.Expected, j.MatchesExpected, j.UnsafeRateCI95 = &Expectation{Want: "unsafe"}, &no, [2]float64{0, 0.1611}
		case c.Scenario.ID == "pause-after-check" && c.Lock.ID == "fencing":
			j.Verdict, j.UnsafeRuns, j.Expected, j.MatchesExpected = checker.VerdictUnsafe, 3, &Expectation{Want: "safe"}, &no
		}
		res.Cells = append(res.Cells, j)
	}
	v := p.view(res, nil)
	var unseen, miss []matrixCell
	for _, r := range v.Matrix {
		for _, c := range r.Cells {
			switch {
			case strings.Contains(c.Class, "unseen"):
				unseen = append(unseen, c)
			case strings.Contains(c.Class, "miss"):
				miss = append(miss, c)
			}
		}
	}
	if len(unseen) != 1 || unseen[0].Anchor != "pause-after-check--redisson-rw" || unseen[0].Unseen != "not seen in 20 runs: below 16.1% at 95%" {
		t.Fatalf("unseen cells %+v", unseen)
	}
	if len(miss) != 1 || miss[0].Anchor != "pause-after-check--fencing" || miss[0].Unseen != "" {
		t.Fatalf("miss cells %+v", miss)
	}
	var md, page bytes.Buffer
	if err := mdTemplate.Execute(&md, v); err != nil {
		t.Fatal(err)
	}
	if err := htmlTemplate.Execute(&page, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "✗ (not seen in 20 runs: below 16.1% at 95%)") {
		t.Error("report.md does not say how rare the unseen violation may be")
	}
	if !strings.Contains(page.String(), `class="safe unseen"`) || !strings.Contains(page.String(), "not seen in 20 runs: below 16.1% at 95%") {
		t.Error("index.html does not frame the unseen cell or say how rare")
	}
}
