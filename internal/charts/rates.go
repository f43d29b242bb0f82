package charts

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locksim/locksim/internal/stats"
)

// RatePoint is a rate at one value of the swept parameter.
type RatePoint struct {
	X float64
	stats.Rate
}

// RateSeries is one lock's rates along the sweep.
type RateSeries struct {
	Name   string
	Points []RatePoint
}

// Mark is a labelled vertical line at X.
type Mark struct {
	X     float64
	Label string
}

// RateChart is violation rate against a swept parameter, one line per
// lock, each point with its 95% Wilson interval. A point of no runs (N =
// 0) is not drawn: its line has a gap there, and its series' legend names
// the values without runs.
type RateChart struct {
	Title  string
	XLabel string // the swept parameter, with its unit
	YLabel string // default "runs with a violation"
	Series []RateSeries
	// Band draws each interval as a shaded band instead of error bars.
	Band bool
	// Markers draws each measured point alone, without the line that
	// would join it to the next (a line implies rates between the points
	// that no run measured); the legend then shows the marker only.
	Markers bool
	// Marks are values of the x axis to draw as labelled vertical lines
	// (a claim's threshold: "Redlock's allowance", "pause = TTL").
	Marks []Mark
	// Width and Height default to 8 × 4.8 inches.
	Width, Height vg.Length
}

// Figure lays the chart out.
func (c RateChart) Figure() (Figure, error) {
	ylabel := c.YLabel
	if ylabel == "" {
		ylabel = "runs with a violation"
	}
	xlabel := c.XLabel
	var legend []legendItem
	var xs []float64
	ymax := 0.0
	for _, s := range c.Series {
		for _, pt := range s.Points {
			if math.IsNaN(pt.X) || math.IsInf(pt.X, 0) {
				return nil, fmt.Errorf("reports: series %q: x is %v", s.Name, pt.X)
			}
			xs = append(xs, pt.X)
			if pt.Known() {
				_, hi := pt.Interval()
				ymax = max(ymax, hi)
			}
		}
	}
	if len(xs) == 0 {
		return nil, fmt.Errorf("reports: rate chart %q has no points", c.Title)
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	// A sweep whose values span more than a decade and a half (drift from
	// 0.5 % to 20 %) gets a symmetric-log axis, linear below its smallest
	// positive value: the small values, where the answer usually is, are
	// not crammed into a corner.
	tx, inv := func(v float64) float64 { return v }, func(u float64) float64 { return u }
	logX := false
	if minPos, ok := smallestPositive(xs); ok && xs[0] >= 0 && xs[len(xs)-1]/minPos >= 15 {
		tx = func(v float64) float64 { return math.Copysign(math.Log1p(math.Abs(v)/minPos), v) }
		inv = func(u float64) float64 { return math.Copysign(minPos*math.Expm1(math.Abs(u)), u) }
		logX = true
		// The axis is not linear: its label says so, and how.
		xlabel += fmt.Sprintf(" — non-linear axis: log(1 + x/%s)", trimFloat(minPos))
	}
	p := newPlot("", xlabel, ylabel+" (95% Wilson interval)")
	if logX {
		p.X.Scale = scaleFunc(tx)
	}
	step := 1.0 // the smallest gap between values, on the axis's scale
	if len(xs) > 1 {
		step = math.Inf(1)
		for i := 1; i < len(xs); i++ {
			step = min(step, tx(xs[i])-tx(xs[i-1]))
		}
	}
	// Dodge the series sideways so their points and intervals do not hide
	// one another (series with equal rates stay apart).
	n := len(c.Series)
	dodge := func(i int, x float64) float64 {
		if n < 2 {
			return x
		}
		return inv(tx(x) + (float64(i)-float64(n-1)/2)*step*0.45/float64(n))
	}
	for i, s := range c.Series {
		clr := paletteColor(i)
		pts := slices.Clone(s.Points)
		slices.SortStableFunc(pts, func(a, b RatePoint) int {
			switch {
			case a.X < b.X:
				return -1
			case a.X > b.X:
				return 1
			}
			return 0
		})
		if len(pts) == 0 {
			continue
		}
		// The runs of points with a rate, between the points without.
		var segs [][]RatePoint
		var none []string
		for j, pt := range pts {
			switch {
			case !pt.Known():
				none = append(none, trimFloat(pt.X))
			case j > 0 && pts[j-1].Known():
				segs[len(segs)-1] = append(segs[len(segs)-1], pt)
			default:
				segs = append(segs, []RatePoint{pt})
			}
		}
		var thumbs []plot.Thumbnailer
		for _, seg := range segs {
			xys := make(plotter.XYs, len(seg))
			errs := make(plotter.YErrors, len(seg))
			for j, pt := range seg {
				lo, hi := pt.Interval()
				xys[j] = plotter.XY{X: dodge(i, pt.X), Y: pt.P()}
				errs[j].Low, errs[j].High = pt.P()-lo, hi-pt.P()
			}
			if c.Band {
				var poly plotter.XYs
				for j, pt := range seg {
					lo, _ := pt.Interval()
					poly = append(poly, plotter.XY{X: xys[j].X, Y: lo})
				}
				for j := len(seg) - 1; j >= 0; j-- {
					_, hi := seg[j].Interval()
					poly = append(poly, plotter.XY{X: xys[j].X, Y: hi})
				}
				band, err := plotter.NewPolygon(poly)
				if err != nil {
					return nil, err
				}
				band.Color = withAlpha(clr, 48)
				band.LineStyle.Width = 0
				p.Add(band)
			} else {
				eb := &plotter.YErrorBars{XYs: xys, YErrors: errs, LineStyle: draw.LineStyle{Color: clr, Width: vg.Points(1)}, CapWidth: vg.Points(6)}
				p.Add(eb)
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, err
			}
			line.Color = clr
			line.Width = vg.Points(1.5)
			points.Color = clr
			points.Shape = glyphFor(i)
			points.Radius = vg.Points(3)
			if c.Markers {
				p.Add(points)
				if thumbs == nil {
					thumbs = []plot.Thumbnailer{points}
				}
				continue
			}
			p.Add(line, points)
			if thumbs == nil {
				thumbs = []plot.Thumbnailer{line, points}
			}
		}
		if thumbs == nil {
			thumbs = []plot.Thumbnailer{
				&plotter.Line{LineStyle: draw.LineStyle{Color: clr, Width: vg.Points(1.5)}},
				&plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: clr, Shape: glyphFor(i), Radius: vg.Points(3)}},
			}
		}
		name := s.Name
		if len(none) > 0 {
			name += " (no runs at " + strings.Join(none, ", ") + ")"
		}
		legend = append(legend, legendItem{name, thumbs})
	}
	p.Y.Min = 0
	p.Y.Max = niceCeil(max(ymax*1.08, 0.05))
	for i, m := range c.Marks {
		if math.IsNaN(m.X) || math.IsInf(m.X, 0) {
			return nil, fmt.Errorf("reports: mark %q: x is %v", m.Label, m.X)
		}
		xs = append(xs, m.X)
		line, err := plotter.NewLine(plotter.XYs{{X: m.X, Y: 0}, {X: m.X, Y: p.Y.Max}})
		if err != nil {
			return nil, err
		}
		line.Color = color.RGBA{A: 255, R: 90, G: 90, B: 90}
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		line.Width = vg.Points(1)
		// Labels stagger down from the top so neighbours do not collide.
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: m.X, Y: p.Y.Max * (0.97 - 0.07*float64(i))}}, Labels: []string{" " + m.Label}})
		if err != nil {
			return nil, err
		}
		for j := range lbl.TextStyle {
			lbl.TextStyle[j] = textStyle(vg.Points(8), color.RGBA{A: 255, R: 60, G: 60, B: 60})
		}
		p.Add(line, lbl)
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	p.Y.Tick.Marker = percentTicks{}
	pad := step * 0.5
	if len(xs) == 1 {
		pad = max(math.Abs(tx(xs[0]))*0.5, 0.5)
	}
	p.X.Min, p.X.Max = inv(tx(xs[0])-pad*0.4), inv(tx(xs[len(xs)-1])+pad*0.4)
	p.X.Tick.Marker = valueTicks(xs)
	p.Add(plotter.NewGrid())
	w, h := c.Width, c.Height
	if w == 0 {
		w = 8 * vg.Inch
	}
	if h == 0 {
		h = 4.8 * vg.Inch
	}
	return plotFigure{p: p, w: w, h: h, title: c.Title, legend: legend}, nil
}

// smallestPositive is the smallest value above zero in sorted xs.
func smallestPositive(xs []float64) (float64, bool) {
	for _, x := range xs {
		if x > 0 {
			return x, true
		}
	}
	return 0, false
}

// scaleFunc is an axis scale given by a monotone transform.
type scaleFunc func(float64) float64

func (f scaleFunc) Normalize(min, max, x float64) float64 {
	lo, hi := f(min), f(max)
	if hi == lo {
		return 0.5
	}
	return (f(x) - lo) / (hi - lo)
}

// glyphFor gives series i a shape as well as a colour.
func glyphFor(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}
	return shapes[i%len(shapes)]
}

// niceCeil rounds a rate up to a tidy axis maximum.
func niceCeil(v float64) float64 {
	for _, m := range []float64{0.05, 0.1, 0.2, 0.25, 0.4, 0.5, 0.6, 0.8, 1} {
		if v <= m {
			return m
		}
	}
	return 1
}

// percentTicks labels a 0..1 axis in percent.
type percentTicks struct{}

func (percentTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Value > 1+1e-9 {
			ticks[i].Label = "" // room above 100% is for labels, not rates
		}
		if ticks[i].Label != "" {
			ticks[i].Label = trimFloat(ticks[i].Value*100) + "%"
		}
	}
	return ticks
}

// valueTicks puts a labelled tick at every swept value (at most 12; beyond
// that the default ticks).
func valueTicks(xs []float64) plot.Ticker {
	if len(xs) > 12 {
		return plot.DefaultTicks{}
	}
	ticks := make(plot.ConstantTicks, len(xs))
	for i, x := range xs {
		ticks[i] = plot.Tick{Value: x, Label: trimFloat(x)}
	}
	return ticks
}

// trimFloat formats v with at most 4 significant decimals, no trailing zeros.
func trimFloat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// FencingGroup is one lock (or lock in one scenario): how many runs had a
// lease overlap and how many a resource violation.
type FencingGroup struct {
	Name     string
	Overlap  stats.Rate // runs in which two clients believed they held the lock at once
	Resource stats.Rate // runs in which the protected resource lost an update or took a stale write
	// Stale: runs in which a holder read or wrote the resource after its
	// own lease ended (what fencing exists for; shown when N > 0).
	Stale stats.Rate
}

// FencingChart puts lease-overlap rate and resource-violation rate side by
// side per lock: the debate's central point in one picture. A lock whose
// resource fences stale writes shows overlaps with no resource violations;
// a lock without fencing turns overlaps into lost updates.
type FencingChart struct {
	Title  string
	Groups []FencingGroup
	// Width and Height default to 8 × 4.8 inches (wider with many groups).
	Width, Height vg.Length
}

// Colours of the two bars.
var (
	overlapColor  = color.RGBA{230, 159, 0, 255}  // orange
	resourceColor = color.RGBA{200, 30, 30, 255}  // red
	staleColor    = color.RGBA{86, 119, 180, 255} // blue
)

// Figure lays the chart out: one row of bars a group, the first group on
// top, the rate along the x axis. Rows keep their height whatever the
// number of groups (the figure grows down), so labels stay readable at the
// size the figure is shown.
func (c FencingChart) Figure() (Figure, error) {
	if len(c.Groups) == 0 {
		return nil, fmt.Errorf("reports: fencing chart %q has no groups", c.Title)
	}
	p := newPlot("", "runs (95% Wilson interval)", "")
	n := len(c.Groups)
	names := make([]string, n)
	bars := &groupedBars{horizontal: true}
	top := 0.0
	withStale := false
	for _, g := range c.Groups {
		withStale = withStale || g.Stale.N > 0
	}
	colors := []color.Color{overlapColor, resourceColor, staleColor}
	nb, step := 2, 0.38
	if withStale {
		nb, step = 3, 0.28
	}
	for i, g := range c.Groups {
		row := float64(n - 1 - i) // the first group on top
		names[n-1-i] = g.Name
		for j, r := range []stats.Rate{g.Overlap, g.Resource, g.Stale}[:nb] {
			y := row + (float64(nb-1)/2-float64(j))*step // first bar on top
			if !r.Known() {
				// No rate: no bar, no interval, a label saying so.
				bars.bars = append(bars.bars, bar{x: y, w: step - 0.04, none: true, label: "no runs", clr: colors[j]})
				continue
			}
			lo, hi := r.Interval()
			top = max(top, hi)
			bars.bars = append(bars.bars, bar{x: y, w: step - 0.04, p: r.P(), lo: lo, hi: hi, label: fmt.Sprintf("%d/%d", r.K, r.N), clr: colors[j]})
		}
	}
	p.Add(plotter.NewGrid(), bars)
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.X.Min = 0
	p.X.Max = 1.12 // room for the k/n labels right of full bars
	if top*1.15 < 1 {
		p.X.Max = niceCeil(max(top*1.15, 0.05))
	}
	p.X.Tick.Marker = percentTicks{}
	p.Y.Tick.Label.Font.Size = vg.Points(9)
	legend := []legendItem{
		{"lease overlap (two clients believed they held the lock)", []plot.Thumbnailer{swatch(overlapColor)}},
		{"resource violation (lost update or stale write accepted)", []plot.Thumbnailer{swatch(resourceColor)}},
	}
	if withStale {
		legend = append(legend, legendItem{"stale section (a holder touched the resource after its lease ended)", []plot.Thumbnailer{swatch(staleColor)}})
	}
	legend = append(legend, legendItem{"95% interval", []plot.Thumbnailer{whisker{}}})
	w, h := c.Width, c.Height
	if w == 0 {
		w = 8 * vg.Inch
	}
	if h == 0 {
		perGroup := 0.34 * vg.Inch
		if withStale {
			perGroup = 0.46 * vg.Inch
		}
		h = max(3*vg.Inch, 1.6*vg.Inch+vg.Length(n)*perGroup)
	}
	return plotFigure{p: p, w: w, h: h, title: c.Title, legend: legend}, nil
}

type bar struct {
	x, w, p, lo, hi float64 // x: the bar's place on the category axis
	none            bool    // no runs: only the label is drawn
	label           string
	clr             color.Color
}

// groupedBars draws bars (in data units) with an interval whisker and a
// k/n label on each; horizontal bars grow along x from a category on y.
type groupedBars struct {
	bars       []bar
	horizontal bool
}

func (g *groupedBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
	lab := textStyle(vg.Points(8), color.Black)
	capW := vg.Points(4)
	if g.horizontal {
		lab.YAlign = draw.YCenter
		for _, b := range g.bars {
			y := trY(b.x)
			if b.none {
				c.FillText(lab, vg.Point{X: trX(0) + vg.Points(3), Y: y}, b.label)
				continue
			}
			y0, y1 := trY(b.x-b.w/2), trY(b.x+b.w/2)
			x0, x1 := trX(0), trX(b.p)
			if x1-x0 < vg.Points(1.5) && b.p > 0 {
				x1 = x0 + vg.Points(1.5) // the smallest rate stays visible
			}
			c.FillPolygon(b.clr, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
			xlo, xhi := trX(b.lo), trX(b.hi)
			c.StrokeLine2(ls, xlo, y, xhi, y)
			c.StrokeLine2(ls, xlo, y-capW/2, xlo, y+capW/2)
			c.StrokeLine2(ls, xhi, y-capW/2, xhi, y+capW/2)
			c.FillText(lab, vg.Point{X: xhi + vg.Points(3), Y: y}, b.label)
		}
		return
	}
	lab.XAlign = draw.XCenter
	for _, b := range g.bars {
		if b.none {
			c.FillText(lab, vg.Point{X: trX(b.x), Y: trY(0) + vg.Points(2)}, b.label)
			continue
		}
		x0, x1 := trX(b.x-b.w/2), trX(b.x+b.w/2)
		y0, y1 := trY(0), trY(b.p)
		if y1-y0 < vg.Points(1) && b.p > 0 {
			y1 = y0 + vg.Points(1)
		}
		c.FillPolygon(b.clr, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		xm := trX(b.x)
		ylo, yhi := trY(b.lo), trY(b.hi)
		c.StrokeLine2(ls, xm, ylo, xm, yhi)
		c.StrokeLine2(ls, xm-capW, ylo, xm+capW, ylo)
		c.StrokeLine2(ls, xm-capW, yhi, xm+capW, yhi)
		c.FillText(lab, vg.Point{X: xm, Y: yhi + vg.Points(2)}, b.label)
	}
}

func (g *groupedBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	cmin, cmax, vmax := math.Inf(1), math.Inf(-1), 0.0
	for _, b := range g.bars {
		cmin, cmax = min(cmin, b.x-b.w/2), max(cmax, b.x+b.w/2)
		vmax = max(vmax, b.hi)
	}
	if g.horizontal {
		return 0, vmax, cmin, cmax
	}
	return cmin, cmax, 0, vmax
}

// whisker is an interval's legend thumbnail: a line with end caps (black
// when clr is nil).
type whisker struct{ clr color.Color }

func (w whisker) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	clr := w.clr
	if clr == nil {
		clr = color.Black
	}
	ls := draw.LineStyle{Color: clr, Width: vg.Points(1)}
	y := (r.Min.Y + r.Max.Y) / 2
	c.StrokeLine2(ls, r.Min.X, y, r.Max.X, y)
	c.StrokeLine2(ls, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y)
	c.StrokeLine2(ls, r.Max.X, r.Min.Y, r.Max.X, r.Max.Y)
}

// swatch is a filled-square legend thumbnail.
type swatch color.RGBA

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(color.RGBA(s), []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}
