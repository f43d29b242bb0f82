package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
)

// A counterexample opens with its minimal history (checker.Minimal): a
// few numbered events and a per-node timeline drawn inline as SVG, one
// lane a holder, a node and the storage; the long story, the full
// timeline picture and the trace hash are folded below it
// (templates/counterexample.html.tmpl).

// minimalView is a minimal history as the pages show it.
type minimalView struct {
	Events  []minimalLine
	Holders []string // "c0: n0, n1, n2"
	Omitted int
	Note    string
	SVG     *svgTimeline
}

type minimalLine struct{ T, Who, What string }

// svgTimeline is the per-node timeline's geometry, in SVG user units.
type svgTimeline struct {
	W, H, Left, Right, AxisY float64
	Lanes                    []svgLane
	Bars                     []svgBar
	Marks                    []svgMark
	Ticks                    []svgTick
	Legend                   []svgLegend
}

type svgLane struct {
	Y, Mid      float64
	Label, Kind string
	Shade       bool
}

type svgBar struct {
	X, Y, W, H       float64
	Fill, Stroke     string
	Opacity          float64
	Dash             bool
	Label, Title     string
	LabelX, LabelY   float64
	LabelFill        string
	LabelSmall, Fits bool
}

type svgMark struct {
	X, Y1, Y2, LabelX, LabelY float64
	Stroke, Label, Title      string
	Dot                       bool
	DotY                      float64
}

type svgTick struct {
	X     float64
	Label string
}

type svgLegend struct {
	X, DY      float64 // DY: its row's offset
	Fill, Text string
	Line       bool
}

// Timeline geometry.
const (
	svgWidth   = 1000.0
	svgLeft    = 74.0
	svgRight   = 12.0
	svgTop     = 6.0
	svgLaneH   = 30.0
	svgAxis    = 40.0
	svgLegendH = 20.0
)

// holderColours colour the first and second holder (and, on the nodes,
// their keys); anyone else is grey.
var holderColours = []string{"#2b6cb0", "#dd6b20"}

// crashColour draws a node down, from its crash to its restart.
const crashColour = "#1a202c"

// badStroke marks the stale or lost write.
const badStroke = "#c00"

func colourOf(m *checker.MinimalHistory, who string) string {
	for i, h := range m.Holders {
		if h.Client == who && i < len(holderColours) {
			return holderColours[i]
		}
	}
	return "#888"
}

// newMinimalView lays a minimal history out for the pages (nil: none).
func newMinimalView(m *checker.MinimalHistory) *minimalView {
	if m == nil || len(m.Events) == 0 {
		return nil
	}
	v := &minimalView{Omitted: m.Omitted, Note: m.Note}
	for _, e := range m.Events {
		v.Events = append(v.Events, minimalLine{T: seconds3(e.T), Who: e.Who, What: e.What})
	}
	for _, h := range m.Holders {
		nodes := strings.Join(h.Nodes, ", ")
		if nodes == "" {
			nodes = "nodes not known"
		}
		v.Holders = append(v.Holders, h.Client+": "+nodes)
	}
	if len(m.Lanes) > 0 && m.To > m.From {
		v.SVG = layout(m)
	}
	return v
}

// seconds3 is a true time in seconds to the millisecond ("23.953 s").
func seconds3(t int64) string { return fmt.Sprintf("%.3f s", float64(t)/1e9) }

func layout(m *checker.MinimalHistory) *svgTimeline {
	s := &svgTimeline{W: svgWidth, Left: svgLeft, Right: svgWidth - svgRight}
	x := func(t int64) float64 {
		return math.Round(10*(svgLeft+(s.Right-svgLeft)*float64(t-m.From)/float64(m.To-m.From))) / 10
	}
	lane := map[string]int{}
	for i, l := range m.Lanes {
		lane[l] = i
		kind := "node"
		switch {
		case l == "storage":
			kind = "storage"
		case isHolder(m, l) || !isNode(m, l):
			kind = "client"
		}
		y := svgTop + float64(i)*svgLaneH
		s.Lanes = append(s.Lanes, svgLane{Y: y, Mid: y + svgLaneH/2 + 4, Label: l, Kind: kind, Shade: i%2 == 1})
	}
	bottom := svgTop + float64(len(m.Lanes))*svgLaneH
	s.AxisY = bottom
	s.H = bottom + svgAxis + svgLegendH
	for _, sp := range m.Spans {
		x0, x1 := x(sp.From), x(sp.To)
		title := fmt.Sprintf("%s %s–%s", sp.Label, seconds3(sp.From), seconds3(sp.To))
		if sp.Kind == checker.SpanViolation {
			if x1-x0 < 2 {
				s.Marks = append(s.Marks, svgMark{X: x0, Y1: svgTop, Y2: bottom, Stroke: "#c00", Title: sp.Label + " at " + seconds3(sp.From)})
				continue
			}
			s.Bars = append(s.Bars, svgBar{X: x0, Y: svgTop, W: x1 - x0, H: bottom - svgTop, Fill: "#e53e3e", Opacity: 0.12, Title: title})
			continue
		}
		i, ok := lane[sp.Lane]
		if !ok {
			continue
		}
		y := svgTop + float64(i)*svgLaneH
		switch sp.Kind {
		case checker.SpanHold, checker.SpanKey:
			if x1-x0 < 1 {
				s.Marks = append(s.Marks, svgMark{X: x0, Y1: y + 6, Y2: y + svgLaneH - 6, Stroke: colourOf(m, sp.Who), Label: sp.Label, LabelX: x0 + 3, LabelY: y + 12, Title: title})
				continue
			}
			op := 0.9
			if sp.Kind == checker.SpanKey {
				op = 0.55
			}
			b := svgBar{X: x0, Y: y + 7, W: x1 - x0, H: svgLaneH - 14, Fill: colourOf(m, sp.Who), Opacity: op, Title: title,
				Label: sp.Label, LabelX: x0 + 4, LabelY: y + svgLaneH/2 + 4, LabelFill: "#fff"}
			b.Fits = float64(len(sp.Label))*6.2+8 < b.W
			if !b.Fits { // beside the bar, in the lane's colour
				b.LabelX, b.LabelFill, b.Fits = x1+3, colourOf(m, sp.Who), x1+3+float64(len(sp.Label))*6.2 < s.Right
			}
			s.Bars = append(s.Bars, b)
		case checker.SpanAcquiring:
			s.Bars = append(s.Bars, svgBar{X: x0, Y: y + svgLaneH/2 - 1.5, W: max(x1-x0, 1), H: 3, Fill: "#999", Opacity: 1, Title: "acquiring " + title})
		case checker.SpanPause:
			b := svgBar{X: x0, Y: y + 3, W: max(x1-x0, 2), H: svgLaneH - 6, Fill: "#777", Opacity: 0.25, Stroke: "#555", Dash: true, Title: title,
				Label: sp.Label, LabelX: x0 + 4, LabelY: y + 12, LabelFill: "#333", LabelSmall: true}
			b.Fits = true
			s.Bars = append(s.Bars, b)
		case checker.SpanCut:
			b := svgBar{X: x0, Y: y + 2, W: max(x1-x0, 2), H: svgLaneH - 4, Fill: "#e53e3e", Opacity: 0.08, Stroke: "#c53030", Dash: true, Title: title,
				Label: "✂ " + sp.Label, LabelX: x0 + 4, LabelY: y + 11, LabelFill: "#9b2c2c", LabelSmall: true}
			b.Fits = true
			s.Bars = append(s.Bars, b)
		case checker.SpanFault:
			if x1-x0 < 2 {
				s.Marks = append(s.Marks, svgMark{X: x0, Y1: y + 1, Y2: y + svgLaneH - 1, Stroke: "#6b46c1", Label: "⚡ " + sp.Label, LabelX: x0 + 3, LabelY: y + 11, Title: title})
				continue
			}
			b := svgBar{X: x0, Y: y + 3, W: x1 - x0, H: svgLaneH - 6, Fill: "#6b46c1", Opacity: 0.15, Stroke: "#6b46c1", Dash: true, Title: title,
				Label: sp.Label, LabelX: x0 + 4, LabelY: y + 11, LabelFill: "#44337a", LabelSmall: true, Fits: true}
			s.Bars = append(s.Bars, b)
		case checker.SpanCrash: // labelled short; its title tells the rest
			if x1-x0 < 2 {
				s.Marks = append(s.Marks, svgMark{X: x0, Y1: y + 1, Y2: y + svgLaneH - 1, Stroke: crashColour, Label: "✖ down", LabelX: x0 + 3, LabelY: y + 11, Title: "down: " + title})
				continue
			}
			s.Bars = append(s.Bars, svgBar{X: x0, Y: y + 2, W: x1 - x0, H: svgLaneH - 4, Fill: crashColour, Opacity: 0.3, Stroke: crashColour, Title: "down: " + title,
				Label: "✖ down", LabelX: x0 + 4, LabelY: y + 11, LabelFill: crashColour, LabelSmall: true, Fits: true})
		case checker.SpanWrite:
			stroke := colourOf(m, sp.Who)
			label := sp.Label
			if sp.Bad {
				stroke = badStroke
				if !strings.HasSuffix(label, " stale") {
					label += " ✗"
				}
			}
			s.Marks = append(s.Marks, svgMark{X: x0, Y1: y + 4, Y2: y + svgLaneH - 4, Stroke: stroke, Label: label, LabelX: x0 + 5, LabelY: y + 12,
				Dot: true, DotY: y + svgLaneH/2, Title: fmt.Sprintf("%s accepted at %s", sp.Label, seconds3(sp.From))})
		}
	}
	// The faults' bars (crashes, cuts, pauses) lie under the holds' and
	// keys', whose labels they would otherwise dim.
	slices.SortStableFunc(s.Bars, func(a, b svgBar) int {
		return cmpBool(!a.LabelSmall || a.Label == "", !b.LabelSmall || b.Label == "")
	})
	placeLabels(s)
	for _, t := range ticks(m.From, m.To) {
		s.Ticks = append(s.Ticks, svgTick{X: x(t), Label: strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", float64(t)/1e9), "0"), ".") + " s"})
	}
	lx, ly := svgLeft, 0.0
	legend := func(fill, text string, line bool) {
		w := 30 + 6.2*float64(len([]rune(text)))
		if lx+w > s.Right {
			lx, ly = svgLeft, ly+16
		}
		s.Legend = append(s.Legend, svgLegend{X: lx, DY: ly, Fill: fill, Text: text, Line: line})
		lx += w
	}
	for i, h := range m.Holders {
		if i < len(holderColours) {
			legend(holderColours[i], h.Client+" holds / "+h.Client+"'s key on a node", false)
		}
	}
	legend("#e53e3e", "both hold / the violation", false)
	for _, k := range []struct {
		kind       checker.SpanKind
		fill, text string
	}{{checker.SpanCut, "#c53030", "✂ partition: the lane is cut from those named"}, {checker.SpanCrash, crashColour, "✖ node down: from its crash to its restart"}, {checker.SpanFault, "#6b46c1", "⚡ clock or node fault"}, {checker.SpanPause, "#555", "paused"}} {
		if has(m, k.kind) {
			legend(k.fill, k.text, k.kind != checker.SpanCrash)
		}
	}
	s.H += ly
	return s
}

// has reports whether m draws a span of kind k.
func has(m *checker.MinimalHistory, k checker.SpanKind) bool {
	for _, s := range m.Spans {
		if s.Kind == k {
			return true
		}
	}
	return false
}

func isHolder(m *checker.MinimalHistory, l string) bool {
	for _, h := range m.Holders {
		if h.Client == l {
			return true
		}
	}
	return false
}

func isNode(m *checker.MinimalHistory, l string) bool {
	for _, n := range m.Nodes {
		if n == l {
			return true
		}
	}
	return false
}

// ticks are round instants between from and to, 4 to 10 of them.
func ticks(from, to int64) []int64 {
	span := float64(to-from) / 1e9
	step := 0.001
	for _, s := range []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600} {
		step = s
		if span/s <= 10 {
			break
		}
	}
	st := int64(step * float64(time.Second))
	var out []int64
	for t := int64(math.Ceil(float64(from)/float64(st))) * st; t <= to && len(out) < 12; t += st {
		out = append(out, t)
	}
	return out
}

// svgFuncs do the timeline's small sums in the template.
var svgFuncs = map[string]any{
	"add": func(a, b float64) float64 { return a + b },
	"sub": func(a, b float64) float64 { return a - b },
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
