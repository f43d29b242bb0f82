package reports

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/risk"
	"github.com/locksim/locksim/sim"
)

// The full report estimates every design of perYearLocks; a report of
// some locks only those of them it has.
func TestPerYearDesigns(t *testing.T) {
	p, err := NewPlan(Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.perYearDesigns(); !slices.Equal(got, perYearLocks) {
		t.Fatalf("full report: %v, want %v", got, perYearLocks)
	}
	p, err = NewPlan(Options{Quick: true, Scenarios: []string{"no-faults"}, Locks: []string{"redlock", "set-nx-del"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.perYearDesigns(); !slices.Equal(got, []string{"redlock"}) {
		t.Fatalf("redlock and set-nx-del: %v, want [redlock]", got)
	}
	if res := p.Results(); res.PerYear != nil || res.PerHour != nil {
		t.Fatalf("before Run: per_year %+v, per_hour %+v", res.PerYear, res.PerHour)
	}
}

// saveTo draws figures into dir/img as the report does.
func saveTo(dir string) func(chartSpec, string) (string, string, error) {
	return func(spec chartSpec, name string) (string, string, error) {
		if err := os.MkdirAll(filepath.Join(dir, "img"), 0o755); err != nil {
			return "", "", err
		}
		f, err := spec.Figure()
		if err != nil {
			return "", "", err
		}
		paths, err := charts.SaveAll(f, filepath.Join(dir, "img", name))
		if err != nil {
			return "", "", err
		}
		return paths[0], paths[1], nil
	}
}

// The section's figures: the totals a row a design with each class's
// share, and the sensitivity chart with the profile printed a row a class.
func TestPerYearFigures(t *testing.T) {
	prof, err := risk.Default()
	if err != nil {
		t.Fatal(err)
	}
	cls := func(id string, perYear float64) risk.ClassResult {
		return risk.ClassResult{ID: id, Kind: risk.Pause, PerYear: perYear, PerYearCI95: [2]float64{perYear / 2, perYear*2 + 1}}
	}
	r := &PerYearResult{TTLNS: int64(PerYearTTL), Profile: prof.Name(), Seeds: 4, Locks: []*risk.Result{
		{Lock: "redlock", PerYear: 25, PerYearCI95: [2]float64{6, 430}, Classes: []risk.ClassResult{cls("process-pause", 20), cls("clock-step", 5), {ID: "failover", NA: "no Sentinel"}}},
		{Lock: "fencing", PerYearCI95: [2]float64{0, 300}, Classes: []risk.ClassResult{cls("process-pause", 0), cls("clock-step", 0), {ID: "failover", NA: "no Sentinel"}}},
	}}
	dir := t.TempDir()
	figs, err := perYearFigures(r, saveTo(dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 {
		t.Fatalf("%d figures, want the totals and the sensitivity", len(figs))
	}
	for _, f := range figs {
		if st, err := os.Stat(f.PNG); err != nil || st.Size() == 0 {
			t.Errorf("%s: PNG %q: %v", f.Title, f.PNG, err)
		}
	}
	tot := figs[0].Table
	if len(tot.Rows) != 2 || tot.Rows[0].Value != "redlock" || !slices.Contains(tot.Locks, "failover") || tot.Rows[0].Cells[2] != "n/a" ||
		tot.Rows[0].Cells[0] != "20 [10, 41]" || tot.Rows[0].Cells[3] != "25 [6, 430]" || tot.Rows[1].Cells[4] != "none measured" {
		t.Fatalf("totals table: %+v", tot)
	}
	if !strings.Contains(figs[0].Caption, "TTL 10s") || !strings.Contains(figs[0].Caption, "--ttl 10s --seeds 4") {
		t.Errorf("caption does not state the TTL and the command: %s", figs[0].Caption)
	}
	// Sensitivity: redlock's two classes with a share; fencing's none.
	sc := sensitivityChart(r)
	if len(sc.Bars) != 2 || sc.Bars[0].Hi != 25+9*20 || sc.Bars[1].Lo != 25-0.9*5 {
		t.Fatalf("sensitivity bars %+v", sc.Bars)
	}
	// Nothing broke anywhere: every class that applies, at zero.
	zero := &PerYearResult{TTLNS: r.TTLNS, Locks: r.Locks[1:]}
	if sc := sensitivityChart(zero); len(sc.Bars) != 2 {
		t.Fatalf("all zero: bars %+v, want the two classes that apply", sc.Bars)
	}
	// The profile, printed: the first design's classes with their sources.
	pt := figs[1].Table
	if len(pt.Rows) != 3 || pt.Rows[0].Value != "process-pause" || len(pt.Rows[0].Cells) != len(pt.Locks) {
		t.Fatalf("profile table: %+v", pt)
	}
}

// Run's per-year step estimates the report's designs with the default
// profile when Options.PerYear asks, and the report writes its figures
// (a one-design report; about 160 runs).
func TestPerYearRun(t *testing.T) {
	p, err := NewPlan(Options{Quick: true, Scenarios: []string{"no-faults"}, Locks: []string{"set-nx-cad"}})
	if err != nil {
		t.Fatal(err)
	}
	// Without Options.PerYear, none.
	if err := p.runPerYear(context.Background(), sim.TestBubble(t), io.Discard, nil); err != nil || p.perYear != nil {
		t.Fatalf("without PerYear: %v, %+v", err, p.perYear)
	}
	p.opt.PerYear = true
	if err := p.runPerYear(context.Background(), sim.TestBubble(t), io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	res := p.Results().PerYear
	if res == nil || len(res.Locks) != 1 || res.Locks[0].Lock != "set-nx-cad" || res.Seeds != perYearQuickSeeds || res.Locks[0].Runs == 0 ||
		!strings.Contains(res.ProfileYAML, "clock-step") {
		t.Fatalf("per_year: %+v", res)
	}
	figs, err := perYearFigures(res, saveTo(t.TempDir()))
	if err != nil || len(figs) != 2 {
		t.Fatalf("%d figures: %v", len(figs), err)
	}

	// With a result store, the estimate is kept, and the next report
	// takes it from there, the same.
	st, err := OpenStore(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var logs [2]strings.Builder
	var got [2]string
	for i := range logs {
		if err := p.runPerYear(context.Background(), sim.TestBubble(t), &logs[i], st); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(p.perYear)
		got[i] = string(b)
	}
	if strings.Contains(logs[0].String(), "from the result store") || !strings.Contains(logs[1].String(), "per-year estimate of set-nx-cad from the result store") {
		t.Errorf("first report's log %q, second's %q: want the second from the store", logs[0].String(), logs[1].String())
	}
	if got[0] != got[1] || st.Err() != nil {
		t.Errorf("the stored estimate differs from the one made (store error %v):\n%s\n%s", st.Err(), got[0], got[1])
	}
}
