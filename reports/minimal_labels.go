package reports

import "slices"

// The timeline's labels (layout, minimal.go) are placed so that no two
// overlap, between the lane names and the right edge: a mark's label
// beside its mark, right or left, at its lane's head or foot, a place
// that crosses no other mark preferred; a fault bar's label inside its
// start or just before it, else inside it after another bar or label, at
// its lane's head or foot; a place over no hold's or key's bar preferred. A label with no free
// place is left out: its mark's or bar's title (the hover text) still
// says it. The labels that matter most are placed first: those inside
// the holds' and keys' bars, then the bad writes', then the other marks',
// then the faults' bars'.

// labelBox is the room a label takes, in SVG user units.
type labelBox struct{ x0, x1, y0, y1 float64 }

func (a labelBox) hits(b labelBox) bool {
	const gap = 3
	return a.x0 < b.x1+gap && b.x0 < a.x1+gap && a.y0 < b.y1 && b.y0 < a.y1
}

// textWidth is a label's width at font size px: an ASCII character about
// 0.58 em, any other (an arrow, ✗, ✂, ⚡, ✖) a whole em.
func textWidth(text string, px float64) float64 {
	w := 0.0
	for _, r := range text {
		if r < 128 {
			w += 0.58 * px
		} else {
			w += px
		}
	}
	return w
}

// boxAt is the box of a label whose baseline starts at (x, y).
func boxAt(x, y, w float64) labelBox { return labelBox{x, x + w, y - 9, y + 2} }

// placeLabels moves or leaves out the timeline's labels so that none
// overlaps another (s.Marks and s.Bars as layout drew them).
func placeLabels(s *svgTimeline) {
	var taken []labelBox
	free := func(b labelBox) bool {
		if b.x0 < svgLeft || b.x1 > s.Right+svgRight/2 {
			return false
		}
		for _, t := range taken {
			if t.hits(b) {
				return false
			}
		}
		return true
	}
	// crosses: b covers a mark's line other than the one at x (the
	// violation's, across every lane, is crossed by anything near it).
	crosses := func(b labelBox, x float64) bool {
		for _, mk := range s.Marks {
			if mk.X != x && mk.X > b.x0-2 && mk.X < b.x1+2 && mk.Y1 < b.y1 && b.y0 < mk.Y2 && mk.Y2-mk.Y1 < svgLaneH {
				return true
			}
		}
		return false
	}
	// overBar: b lies over a hold's, a key's or an acquisition's bar
	// other than its own (at x0).
	overBar := func(b labelBox, own float64) bool {
		for _, r := range s.Bars {
			if r.Opacity >= 0.5 && r.X != own && r.X < b.x1 && b.x0 < r.X+r.W && r.Y < b.y1 && b.y0 < r.Y+r.H {
				return true
			}
		}
		return false
	}
	inBar := func(b *svgBar) bool { return b.Label != "" && b.Fits && b.LabelFill == "#fff" }
	barPx := func(b *svgBar) float64 {
		if b.LabelSmall {
			return 11
		}
		return 12
	}
	// 1. The labels inside the holds' and keys' bars (or beside them).
	for i := range s.Bars {
		b := &s.Bars[i]
		if b.Label == "" || !b.Fits || b.LabelSmall {
			continue
		}
		box := boxAt(b.LabelX, b.LabelY, textWidth(b.Label, barPx(b)))
		if !free(box) && !inBar(b) {
			b.Fits = false
			continue
		}
		taken = append(taken, box)
	}
	// 2, 3. The marks': bad writes first, then the rest in time order.
	order := make([]int, 0, len(s.Marks))
	for i, mk := range s.Marks {
		if mk.Label != "" {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, pb := s.Marks[a].Stroke == badStroke, s.Marks[b].Stroke == badStroke
		switch {
		case pa && !pb:
			return -1
		case pb && !pa:
			return 1
		}
		return 0
	})
	for _, i := range order {
		mk := &s.Marks[i]
		w := textWidth(mk.Label, 11)
		right := mk.LabelX - mk.X // its gap from the mark, as drawn
		head, foot := mk.LabelY, mk.LabelY+svgLaneH-16
		var places []labelBox
		for _, y := range []float64{head, foot} {
			places = append(places, boxAt(mk.X+right, y, w), boxAt(mk.X-3-w, y, w))
		}
		placed := false
		for _, strict := range []bool{true, false} {
			for _, p := range places {
				if placed || !free(p) || strict && (crosses(p, mk.X) || overBar(p, -1)) {
					continue
				}
				mk.LabelX, mk.LabelY, placed = p.x0, p.y1-2, true
				taken = append(taken, p)
			}
		}
		if !placed {
			mk.Label = "" // its title says it
		}
	}
	// 4. The faults' bars' labels (pauses, cuts, crashes, clock faults).
	for i := range s.Bars {
		b := &s.Bars[i]
		if b.Label == "" || !b.Fits || !b.LabelSmall {
			continue
		}
		w := textWidth(b.Label, 11)
		// Inside its start or just before it; else, inside it, after
		// another bar or label on its lane.
		xs := []float64{b.LabelX, b.X - 3 - w}
		for _, r := range s.Bars {
			if r.Y < b.Y+b.H && b.Y < r.Y+r.H {
				xs = append(xs, r.X+r.W+4)
			}
		}
		for _, t := range taken {
			if t.y0 < b.Y+b.H && b.Y < t.y1 {
				xs = append(xs, t.x1+4)
			}
		}
		placed := false
		for _, strict := range []bool{true, false} {
			for i, x := range xs {
				if i >= 2 && (x < b.X || x+w > b.X+b.W) {
					continue
				}
				for _, y := range []float64{b.LabelY, b.Y + b.H - 3} {
					p := boxAt(x, y, w)
					if placed || !free(p) || strict && overBar(p, b.X) {
						continue
					}
					b.LabelX, b.LabelY, placed = x, y, true
					taken = append(taken, p)
				}
			}
		}
		b.Fits = placed // else its title says it
	}
}
