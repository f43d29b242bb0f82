package charts

import (
	"cmp"
	"fmt"
	"image/color"
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
	// Whisker names the error bars in the legend ["95% interval"] (a
	// sensitivity chart's are a range of totals).
	Whisker string
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
	// Each bar says its value, so a zero (no bar) is read as zero, not as
	// missing.
	lbls := make([]string, len(c.Bars))
	lxys := make(plotter.XYs, len(c.Bars))
	for i, b := range c.Bars {
		lbls[i] = trimFloat(b.Value)
		if b.Value == 0 {
			lbls[i] = "0 (none seen)"
		}
		lxys[i] = plotter.XY{X: float64(i), Y: xys[i].Y + errs[i].High}
	}
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: lxys, Labels: lbls})
	if err != nil {
		return nil, err
	}
	for j := range labels.TextStyle {
		labels.TextStyle[j] = textStyle(vg.Points(8), color.Black)
		labels.TextStyle[j].XAlign = draw.XCenter
	}
	labels.Offset = vg.Point{Y: vg.Points(3)}
	p.Add(plotter.NewGrid(), bars, eb, labels)
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
	legend := []legendItem{
		{"estimate", []plot.Thumbnailer{swatch(withAlphaRGBA(paletteColor(0), 200))}},
		{cmp.Or(c.Whisker, "95% interval"), []plot.Thumbnailer{whisker{paletteColor(1)}}},
	}
	return plotFigure{p: p, w: w, h: h, title: c.Title, legend: legend}, nil
}

// withAlphaRGBA is clr at alpha a, premultiplied (a swatch's colour).
func withAlphaRGBA(clr color.RGBA, a uint8) color.RGBA {
	return color.RGBA{R: uint8(uint16(clr.R) * uint16(a) / 255), G: uint8(uint16(clr.G) * uint16(a) / 255), B: uint8(uint16(clr.B) * uint16(a) / 255), A: a}
}
