package charts

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/stats"
	"gonum.org/v1/plot/plotter"
)

// TestNoRunsIsNoPoint: a rate of no runs (every run of
// a sweep point left out) was printed "0/0 = 0.0%" and drawn at 0%, a
// line falling from 100% to a "safe" made of no runs. It is "n/a", the
// rate chart draws no point there (a gap, named in the legend) and does
// not stretch its axis for the point's [0, 1] interval; a bar chart draws
// no bar for it, only "no runs".
func TestNoRunsIsNoPoint(t *testing.T) {
	if got := (stats.Rate{}).String(); got != "0/0 = n/a" {
		t.Errorf("stats.Rate{K: 0, N: 0} = %q, want 0/0 = n/a", got)
	}
	if got := (stats.Rate{K: 1, N: 4}).String(); got != "1/4 = 25.0% [4.6%, 69.9%]" {
		t.Errorf("stats.Rate{K: 1, N: 4} = %q", got)
	}
	pts := func(rates ...stats.Rate) []RatePoint {
		var out []RatePoint
		for i, r := range rates {
			out = append(out, RatePoint{X: float64(i) * 0.5, Rate: r})
		}
		return out
	}
	rc := RateChart{Title: "t", XLabel: "pause", Series: []RateSeries{
		{Name: "set-nx-cad", Points: pts(stats.Rate{K: 0, N: 10}, stats.Rate{K: 0, N: 7}, stats.Rate{K: 0, N: 0}, stats.Rate{K: 1, N: 10}, stats.Rate{K: 0, N: 0})},
	}}
	fig, err := rc.Figure()
	if err != nil {
		t.Fatal(err)
	}
	pf := fig.(plotFigure)
	for _, b := range pf.p.GlyphBoxes(pf.p) {
		for _, x := range []float64{1, 2} {
			if math.Abs(b.X-pf.p.X.Norm(x)) < 1e-9 {
				t.Errorf("a glyph at x = %v, a point of no runs (y = %v)", x, b.Y)
			}
		}
	}
	if pf.p.Y.Max >= 1 {
		t.Errorf("y axis up to %v: stretched for a point of no runs", pf.p.Y.Max)
	}
	if len(pf.legend) != 1 || pf.legend[0].label != "set-nx-cad (no runs at 1, 2)" {
		t.Errorf("legend %+v", pf.legend)
	}

	fc := FencingChart{Title: "t", Groups: []FencingGroup{
		{Name: "a", Overlap: stats.Rate{K: 1, N: 10}, Resource: stats.Rate{K: 0, N: 10}},
		{Name: "b", Overlap: stats.Rate{K: 0, N: 0}, Resource: stats.Rate{K: 0, N: 0}},
	}}
	fig, err = fc.Figure()
	if err != nil {
		t.Fatal(err)
	}
	pf = fig.(plotFigure)
	var svg bytes.Buffer
	if err := Encode(&svg, fig, "svg"); err != nil {
		t.Fatal(err)
	}
	if got := svg.String(); strings.Count(got, ">no runs<") != 2 || strings.Contains(got, ">0/0<") || !strings.Contains(got, ">1/10<") {
		t.Errorf("the bars of no runs are not labelled \"no runs\" (or a 0/0 bar is drawn): %d, %v",
			strings.Count(got, ">no runs<"), strings.Contains(got, ">0/0<"))
	}
	if pf.p.X.Max >= 1 {
		t.Errorf("rate axis up to %v: stretched for a group of no runs", pf.p.X.Max)
	}
}

// TestMarkersAndAxisLabel: a Markers chart draws its measured points and
// no line between them (a line implied rates no run measured); a sweep
// drawn on the stretched axis says so in its x label, a linear one does
// not.
func TestMarkersAndAxisLabel(t *testing.T) {
	series := []RateSeries{{Name: "a", Points: []RatePoint{{X: 0.5, Rate: stats.Rate{K: 0, N: 10}}, {X: 2, Rate: stats.Rate{K: 5, N: 10}}, {X: 30, Rate: stats.Rate{K: 10, N: 10}}}}}
	lines := func(markers bool) (int, string) {
		fig, err := RateChart{Title: "t", XLabel: "pause (seconds)", Series: series, Markers: markers}.Figure()
		if err != nil {
			t.Fatal(err)
		}
		pf := fig.(plotFigure)
		n := 0 // the series' lines, as its legend shows them
		for _, th := range pf.legend[0].thumbs {
			if _, ok := th.(*plotter.Line); ok {
				n++
			}
		}
		return n, pf.p.X.Label.Text
	}
	if n, _ := lines(false); n == 0 {
		t.Errorf("a chart without Markers draws no line: the test cannot tell")
	}
	n, label := lines(true)
	if n != 0 {
		t.Errorf("a Markers chart draws %d lines", n)
	}
	if !strings.Contains(label, "non-linear axis: log(1 + x/0.5)") {
		t.Errorf("x label %q does not say the axis is not linear", label)
	}
	fig, err := RateChart{Title: "t", XLabel: "pause (× TTL)", Series: []RateSeries{{Name: "a", Points: []RatePoint{{X: 0, Rate: stats.Rate{N: 1}}, {X: 2, Rate: stats.Rate{N: 1}}}}}}.Figure()
	if err != nil {
		t.Fatal(err)
	}
	if got := fig.(plotFigure).p.X.Label.Text; got != "pause (× TTL)" {
		t.Errorf("a linear axis is labelled %q", got)
	}
}
