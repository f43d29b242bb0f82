package charts

// Drawing a timeline: the styles, the legend, the figure and its lanes.

import (
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Styles.
var (
	holdColor      = color.RGBA{0, 114, 178, 255}
	acquiringColor = color.RGBA{175, 175, 175, 255}
	pausedColor    = color.NRGBA{90, 90, 90, 90}
	downColor      = color.RGBA{60, 60, 60, 255}
	driftColor     = color.NRGBA{230, 159, 0, 150}
	netColor       = color.NRGBA{150, 90, 200, 150}
	overlapFill    = color.NRGBA{220, 0, 0, 60}
	violationColor = color.RGBA{210, 0, 0, 255}
	okColor        = color.RGBA{0, 150, 90, 255}
	healColor      = color.RGBA{0, 150, 90, 255}
	unknownColor   = color.RGBA{230, 140, 0, 255}
	failoverColor  = color.RGBA{150, 60, 180, 255}
)

var spanColors = map[string]color.Color{
	kHold: holdColor, kAcquiring: acquiringColor, kPaused: pausedColor, kDown: downColor,
	kDrift: driftColor, kNet: netColor, kOverlap: overlapFill,
}

// spanOrder is the drawing order of spans (later on top).
var spanOrder = []string{kNet, kDrift, kOverlap, kAcquiring, kHold, kDown, kPaused}

// markStyle draws a mark's glyph.
func markGlyph(kind string) draw.GlyphStyle {
	r := vg.Points(3.2)
	switch kind {
	case kAcqFail:
		return draw.GlyphStyle{Color: acquiringColor, Radius: vg.Points(2.5), Shape: draw.CrossGlyph{}}
	case kAcqUnk:
		return draw.GlyphStyle{Color: unknownColor, Radius: vg.Points(2.8), Shape: draw.RingGlyph{}}
	case kWriteCall:
		return draw.GlyphStyle{Color: color.Black, Radius: vg.Points(2.6), Shape: draw.TriangleGlyph{}}
	case kStoreOK:
		return draw.GlyphStyle{Color: okColor, Radius: r, Shape: draw.CircleGlyph{}}
	case kStoreFenc:
		return draw.GlyphStyle{Color: violationColor, Radius: r, Shape: draw.CrossGlyph{}}
	case kCrash:
		return draw.GlyphStyle{Color: violationColor, Radius: vg.Points(4), Shape: draw.CrossGlyph{}}
	case kRestart:
		return draw.GlyphStyle{Color: okColor, Radius: vg.Points(3.5), Shape: draw.TriangleGlyph{}}
	case kFailover:
		return draw.GlyphStyle{Color: failoverColor, Radius: vg.Points(4), Shape: draw.PlusGlyph{}}
	case kJump:
		return draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3.5), Shape: draw.PyramidGlyph{}}
	}
	return draw.GlyphStyle{Color: color.Black, Radius: r, Shape: draw.CircleGlyph{}}
}

// legendEntries are the legend's rows, in order; only kinds present are shown.
var legendEntries = []struct {
	kind, text string
}{
	{kHold, "holds the lock (its belief)"},
	{kDeadline, "validity deadline"},
	{kAcquiring, "acquiring"},
	{kAcqFail, "acquire failed"},
	{kAcqUnk, "acquire outcome unknown"},
	{kOverlap, "lease overlap"},
	{kPaused, "paused"},
	{kJump, "clock jump"},
	{kDrift, "clock drift"},
	{kNet, "partition / delay / loss"},
	{kWriteCall, "client sends a write"},
	{kStoreOK, "storage accepts writer→value (#token)"},
	{kStoreFenc, "storage fences a write"},
	{kCrash, "crash"},
	{kDown, "down"},
	{kRestart, "restart"},
	{kFailover, "failover"},
	{kHeal, "heal"},
	{kViolation, "first violation"},
}

// timelineFigure draws the lanes, a legend strip and the caption.
type timelineFigure struct {
	tl      *timeline
	lanes   []string
	p       *plot.Plot
	caption []string
	w, h    vg.Length
	legendH vg.Length
	kinds   map[string]bool
}

const (
	laneHeight   = 0.52 * vg.Inch
	legendRowH   = 13 // points
	captionLineH = 12 // points
)

func newTimelineFigure(tl *timeline, lanes []string, title string, caption []string, width vg.Length) *timelineFigure {
	if width <= 0 {
		width = 11 * vg.Inch
	}
	f := &timelineFigure{tl: tl, lanes: lanes, caption: caption, w: width, kinds: map[string]bool{}}
	p := newPlot(title, "true time (s)", "")
	p.Title.TextStyle.Font.Size = vg.Points(12)
	rev := slices.Clone(lanes)
	slices.Reverse(rev)
	p.NominalY(rev...)
	p.Y.Min, p.Y.Max = -0.6, float64(len(lanes))-0.4
	p.X.Min, p.X.Max = seconds(tl.from), seconds(tl.to)
	p.X.Tick.Marker = secondTicks{}
	grid := plotter.NewGrid()
	grid.Horizontal.Color = color.Gray{Y: 235}
	p.Add(grid, &laneDrawer{f: f})
	f.p = p
	inLane := map[string]bool{}
	for _, l := range lanes {
		inLane[l] = true
	}
	for _, s := range tl.spans {
		if inLane[s.proc] {
			f.kinds[s.kind] = true
		}
	}
	for _, m := range tl.marks {
		if inLane[m.proc] {
			f.kinds[m.kind] = true
		}
	}
	for _, v := range tl.vlines {
		f.kinds[v.kind] = true
	}
	n := 0
	for _, e := range legendEntries {
		if f.kinds[e.kind] {
			n++
		}
	}
	perRow := 4
	rows := (n + perRow - 1) / perRow
	f.legendH = vg.Points(float64(rows*legendRowH + len(caption)*captionLineH + 10))
	plotH := vg.Inch*1.1 + laneHeight*vg.Length(len(lanes))
	f.h = plotH + f.legendH
	return f
}

func (f *timelineFigure) Size() (vg.Length, vg.Length) { return f.w, f.h }

func (f *timelineFigure) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	f.p.Draw(draw.Crop(c, 0, 0, f.legendH, 0))
	// Legend strip, then the caption, under the plot.
	bottom := draw.Crop(c, vg.Points(10), -vg.Points(10), 0, -(c.Size().Y - f.legendH))
	lab := textStyle(vg.Points(9), color.Black)
	lab.YAlign = draw.YCenter
	perRow := 4
	colW := (bottom.Max.X - bottom.Min.X) / vg.Length(perRow)
	i := 0
	y0 := bottom.Max.Y - vg.Points(legendRowH)/2 - vg.Points(2)
	for _, e := range legendEntries {
		if !f.kinds[e.kind] {
			continue
		}
		x := bottom.Min.X + colW*vg.Length(i%perRow)
		y := y0 - vg.Points(legendRowH)*vg.Length(i/perRow)
		thumb := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: y - vg.Points(4)}, Max: vg.Point{X: x + vg.Points(18), Y: y + vg.Points(4)}}}
		drawThumb(&thumb, e.kind)
		c.FillText(lab, vg.Point{X: x + vg.Points(23), Y: y}, e.text)
		i++
	}
	rows := (i + perRow - 1) / perRow
	capStyle := textStyle(vg.Points(8.5), color.Gray{Y: 40})
	capStyle.YAlign = draw.YCenter
	for j, line := range f.caption {
		y := y0 - vg.Points(legendRowH)*vg.Length(rows) - vg.Points(captionLineH)*vg.Length(j) - vg.Points(2)
		c.FillText(capStyle, vg.Point{X: bottom.Min.X, Y: y}, line)
	}
}

// drawThumb draws a legend thumbnail for kind in c's rectangle.
func drawThumb(c *draw.Canvas, kind string) {
	r := c.Rectangle
	mid := vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: (r.Min.Y + r.Max.Y) / 2}
	switch kind {
	case kHold, kAcquiring, kPaused, kDown, kDrift, kNet, kOverlap:
		h := (r.Max.Y - r.Min.Y) / 2
		if kind == kAcquiring {
			h = vg.Points(1)
		}
		fillRect(c, spanColors[kind], r.Min.X, mid.Y-h, r.Max.X, mid.Y+h)
	case kDeadline:
		c.StrokeLine2(draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)}, mid.X, r.Min.Y, mid.X, r.Max.Y)
	case kViolation:
		c.StrokeLine2(draw.LineStyle{Color: violationColor, Width: vg.Points(2)}, mid.X, r.Min.Y-vg.Points(2), mid.X, r.Max.Y+vg.Points(2))
	case kHeal:
		c.StrokeLine2(draw.LineStyle{Color: healColor, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}, mid.X, r.Min.Y-vg.Points(2), mid.X, r.Max.Y+vg.Points(2))
	default:
		c.DrawGlyphNoClip(markGlyph(kind), mid)
	}
}

func fillRect(c *draw.Canvas, clr color.Color, x0, y0, x1, y1 vg.Length) {
	c.FillPolygon(clr, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
}

// laneDrawer is the plotter that draws the items.
type laneDrawer struct{ f *timelineFigure }

func (d *laneDrawer) Plot(c draw.Canvas, p *plot.Plot) {
	f := d.f
	trX, trY := p.Transforms(&c)
	lane := map[string]int{}
	for i, l := range f.lanes {
		lane[l] = len(f.lanes) - 1 - i
	}
	yAt := func(proc string, frac float64) vg.Length {
		return trY(float64(lane[proc]) + frac)
	}
	clipX := func(t int64) vg.Length {
		return trX(seconds(min(max(t, f.tl.from), f.tl.to)))
	}
	small := textStyle(vg.Points(7.5), color.Black)
	small.XAlign = draw.XCenter
	small.YAlign = draw.YBottom
	left := textStyle(vg.Points(7.5), color.Black)
	left.YAlign = draw.YCenter

	// Writes in flight: from the client's call to the storage's decision.
	for _, l := range f.tl.links {
		if _, ok := lane[l.from]; !ok {
			continue
		}
		if _, ok := lane[l.to]; !ok {
			continue
		}
		clr := color.Color(color.RGBA{0, 150, 90, 200})
		if l.kind == kStoreFenc {
			clr = violationColor
		}
		ls := draw.LineStyle{Color: clr, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
		pts := []vg.Point{{X: trX(seconds(l.t0)), Y: yAt(l.from, 0)}, {X: trX(seconds(l.t1)), Y: yAt(l.to, 0)}}
		for _, seg := range c.ClipLinesXY(pts) {
			c.StrokeLines(ls, seg)
		}
	}
	// The topmost shown lane of each multi-lane fault carries its label.
	labelLane := map[int]int{}
	for _, s := range f.tl.spans {
		if s.group == 0 {
			continue
		}
		if i, ok := lane[s.proc]; ok {
			if j, seen := labelLane[s.group]; !seen || i > j {
				labelLane[s.group] = i
			}
		}
	}
	// Spans, by kind, in drawing order.
	labelled := map[string]bool{} // proc+label already written (one label per run of equal spans)
	for _, kind := range spanOrder {
		for _, s := range f.tl.spans {
			if s.kind != kind {
				continue
			}
			if _, ok := lane[s.proc]; !ok {
				continue
			}
			x0, x1 := clipX(s.start), clipX(s.end)
			clr := spanColors[kind]
			if kind == kOverlap && x1-x0 < vg.Points(4) {
				// The smallest overlap (0.7 ms in a 10 s window) stays
				// visible: 4 points wide, in a stronger red.
				mid := (x0 + x1) / 2
				x0, x1, clr = mid-vg.Points(2), mid+vg.Points(2), color.NRGBA{220, 0, 0, 170}
			}
			if x1-x0 < vg.Points(1) {
				x1 = x0 + vg.Points(1)
			}
			fillRect(&c, clr, x0, yAt(s.proc, s.lo), x1, yAt(s.proc, s.hi))
			if s.label == "" || (s.group > 0 && labelLane[s.group] != lane[s.proc]) {
				continue
			}
			key := s.proc + "\x00" + s.label + "\x00" + strconv.FormatInt(s.start, 10)
			if labelled[key] {
				continue
			}
			labelled[key] = true
			switch kind {
			case kHold:
				st := left
				st.Color = color.White
				c.FillText(st, vg.Point{X: x0 + vg.Points(3), Y: yAt(s.proc, 0)}, s.label)
			case kNet:
				st := left
				st.Color = color.RGBA{110, 50, 160, 255}
				st.YAlign = draw.YBottom
				c.FillText(st, vg.Point{X: x0 + vg.Points(2), Y: yAt(s.proc, s.lo) + vg.Points(0.5)}, s.label)
			case kDrift:
				st := left
				st.Color = color.RGBA{150, 90, 0, 255}
				st.YAlign = draw.YBottom
				c.FillText(st, vg.Point{X: x0 + vg.Points(2), Y: yAt(s.proc, s.hi)}, s.label)
			default:
				st := left
				st.YAlign = draw.YTop
				c.FillText(st, vg.Point{X: x0 + vg.Points(2), Y: yAt(s.proc, s.hi) - vg.Points(1)}, s.label)
			}
		}
	}
	// Marks.
	tick := draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)}
	placed := labelSlots{}
	for _, m := range f.tl.marks {
		if _, ok := lane[m.proc]; !ok {
			continue
		}
		x := trX(seconds(m.t))
		y := yAt(m.proc, 0)
		if m.kind == kDeadline {
			c.StrokeLine2(tick, x, yAt(m.proc, -0.3), x, yAt(m.proc, 0.3))
			continue
		}
		g := markGlyph(m.kind)
		c.DrawGlyph(g, vg.Point{X: x, Y: y})
		if m.hot {
			c.DrawGlyph(draw.GlyphStyle{Color: violationColor, Radius: vg.Points(7), Shape: draw.RingGlyph{}}, vg.Point{X: x, Y: y})
		}
		if m.label != "" && m.kind != kAcqUnk {
			st := small
			if m.hot {
				st.Color = violationColor
			}
			w := st.Width(m.label)
			// Above the glyph, else below it, else higher up: the first
			// level where the label does not run into another.
			offsets := []vg.Length{g.Radius + vg.Points(2), -g.Radius - vg.Points(2) - st.Height(m.label), g.Radius + vg.Points(11)}
			level := 0
			for ; level < len(offsets)-1; level++ {
				if !placed.overlaps(m.proc, level, x-w/2, x+w/2) {
					break
				}
			}
			if !m.hot && placed.overlaps(m.proc, level, x-w/2, x+w/2) {
				// A busy lane: no free level, so the label is left out
				// (its glyph stays); the violation's own label never is.
				continue
			}
			placed.add(m.proc, level, x-w/2, x+w/2)
			c.FillText(st, vg.Point{X: x, Y: y + offsets[level]}, m.label)
		}
	}
	// Lines across every lane.
	top := c.Max.Y
	for _, v := range f.tl.vlines {
		x := trX(seconds(v.t))
		ls := draw.LineStyle{Color: violationColor, Width: vg.Points(2)}
		st := textStyle(vg.Points(8.5), violationColor)
		if v.kind == kHeal {
			ls = draw.LineStyle{Color: healColor, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
			st.Color = healColor
		}
		c.StrokeLine2(ls, x, c.Min.Y, x, top)
		st.XAlign = draw.XLeft
		st.YAlign = draw.YTop
		c.FillText(st, vg.Point{X: x + vg.Points(3), Y: top - vg.Points(1)}, v.label)
	}
}

func (d *laneDrawer) DataRange() (xmin, xmax, ymin, ymax float64) {
	f := d.f
	return seconds(f.tl.from), seconds(f.tl.to), -0.6, float64(len(f.lanes)) - 0.4
}

// secondTicks are the default ticks, labelled in seconds with enough
// digits to tell them apart.
type secondTicks struct{}

func (secondTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	step := math.Inf(1)
	prev := math.NaN()
	for _, t := range ticks {
		if t.Label == "" {
			continue
		}
		if !math.IsNaN(prev) {
			step = min(step, t.Value-prev)
		}
		prev = t.Value
	}
	digits := 0
	if !math.IsInf(step, 1) && step > 0 {
		digits = max(0, int(math.Ceil(-math.Log10(step)+1e-9)))
	}
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', digits, 64)
		}
	}
	return ticks
}
