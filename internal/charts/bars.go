package charts

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bar is one named value with its interval.
type Bar struct {
	Name          string
	Value, Lo, Hi float64
}

// BarChart is one bar a name, each with its interval as an error bar
// (a quantity that is not a rate: violations per hour).
type BarChart struct {
	Title, YLabel string
	Bars          []Bar
	// Floor > 0 draws the values on a log scale from Floor up (values
	// below it, zeros included, are drawn at it).
	Floor float64
	// Width and Height default to 8 × 4.8 inches.
	Width, Height vg.Length
}

// Figure lays the chart out.
func (c BarChart) Figure() (Figure, error) {
	if len(c.Bars) == 0 {
		return nil, fmt.Errorf("reports: bar chart %q has no bars", c.Title)
	}
	p := newPlot("", "", c.YLabel)
	vals := make(plotter.Values, len(c.Bars))
	xys := make(plotter.XYs, len(c.Bars))
	errs := make(plotter.YErrors, len(c.Bars))
	names := make([]string, len(c.Bars))
	ymax := 0.0
	for i, b := range c.Bars {
		for _, v := range []float64{b.Value, b.Lo, b.Hi} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("reports: bar %q: value %v", b.Name, v)
			}
		}
		if b.Lo > b.Value || b.Value > b.Hi {
			return nil, fmt.Errorf("reports: bar %q: %v outside its interval [%v, %v]", b.Name, b.Value, b.Lo, b.Hi)
		}
		v, lo, hi := b.Value, b.Lo, b.Hi
		if c.Floor > 0 {
			v, lo, hi = max(v, c.Floor), max(lo, c.Floor), max(hi, c.Floor)
		}
		vals[i], names[i] = v, b.Name
		xys[i] = plotter.XY{X: float64(i), Y: v}
		errs[i].Low, errs[i].High = v-lo, hi-v
		ymax = max(ymax, hi)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return nil, err
	}
	bars.Color = withAlpha(paletteColor(0), 200)
	bars.LineStyle.Width = 0
	eb := &plotter.YErrorBars{XYs: xys, YErrors: errs, LineStyle: draw.LineStyle{Color: paletteColor(1), Width: vg.Points(1.2)}, CapWidth: vg.Points(10)}
	p.Add(plotter.NewGrid(), bars, eb)
	p.NominalX(names...)
	p.Y.Min = 0
	if ymax > 0 {
		p.Y.Max = ymax * 1.08
	} else {
		p.Y.Max = 1
	}
	if c.Floor > 0 {
		// Bars rise from the floor (log 0 is not on the axis): stacked on
		// an undrawn chart of floors.
		floors := make(plotter.Values, len(vals))
		for i := range floors {
			floors[i] = c.Floor
			bars.Values[i] -= c.Floor
		}
		base, err := plotter.NewBarChart(floors, bars.Width)
		if err != nil {
			return nil, err
		}
		bars.StackOn(base)
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = c.Floor, max(ymax*2, c.Floor*10)
	}
	w, h := c.Width, c.Height
	if w == 0 {
		w = 8 * vg.Inch
	}
	if h == 0 {
		h = 4.8 * vg.Inch
	}
	return plotFigure{p: p, w: w, h: h, title: c.Title}, nil
}
