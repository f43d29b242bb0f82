package charts

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// TimelineOptions bound and label a counterexample timeline.
type TimelineOptions struct {
	// Title defaults to the first violation's kind, time and clients.
	Title string
	// Caption lines are printed under the legend (e.g. the repro command).
	Caption []string
	// From and To (true time, ns) set the window explicitly; both 0: the
	// first violation's Since..T, widened by Margin on each side.
	From, To int64
	// Margin widens the violation's span on each side; 0: a quarter of
	// the span, at least 250 ms.
	Margin time.Duration
	// MaxLanes bounds the processes drawn (default 8): the violation's
	// clients first, then the storage, then other clients, nodes and
	// Sentinel with something in the window.
	MaxLanes int
	// Width defaults to 11 inches; the height follows from the lanes.
	Width vg.Length
}

// DefaultMaxLanes is TimelineOptions.MaxLanes's default.
const DefaultMaxLanes = 8

// Timeline draws the counterexample of r (its first violation) from h: one
// lane per process, the lock holds each client believed it had (from
// checker.Holds) with their validity deadlines, acquisition attempts,
// pauses, clock jumps and drift, network faults, crashes and restarts,
// failovers, and the storage's accepted and fenced writes with their
// tokens; the first violation is marked in red. Only a window around the
// violation is drawn, and at most MaxLanes processes.
//
// It returns an error when r has no violation and no window is given.
func Timeline(h checker.History, r checker.Result, o TimelineOptions) (Figure, error) {
	from, to := o.From, o.To
	if from == 0 && to == 0 {
		v := r.First
		if v == nil {
			return nil, fmt.Errorf("reports: timeline: the result has no violation and no window was given")
		}
		from, to = v.Since, v.T
		if v.Kind == checker.KindLeaseOverlap && r.FirstOverlap != nil {
			// Show the overlap itself, up to as long again as the lead-in.
			to = max(to, min(r.FirstOverlap.End, v.T+max(v.T-v.Since, int64(time.Second))))
		}
		margin := int64(o.Margin)
		if margin <= 0 {
			margin = max((to-from)/4, int64(250*time.Millisecond))
		}
		from, to = max(0, from-margin), to+margin
	}
	if to <= from {
		return nil, fmt.Errorf("reports: timeline: empty window [%d, %d]", from, to)
	}
	maxLanes := o.MaxLanes
	if maxLanes <= 0 {
		maxLanes = DefaultMaxLanes
	}
	tl := buildTimeline(h, r, from, to)
	lanes, omitted := tl.pickLanes(h, r, maxLanes)
	if len(lanes) == 0 {
		return nil, fmt.Errorf("reports: timeline: nothing happened in the window [%v, %v]", time.Duration(from), time.Duration(to))
	}
	title := o.Title
	if title == "" {
		title = defaultTitle(r, from, to)
	}
	var caption []string
	if r.First != nil {
		caption = append(caption, wrap(r.First.Detail, 150)...)
	}
	if omitted > 0 {
		caption = append(caption, fmt.Sprintf("%d more processes with events in this window are not shown (at most %d lanes)", omitted, maxLanes))
	}
	caption = append(caption, o.Caption...)
	return newTimelineFigure(tl, lanes, title, caption, o.Width), nil
}

func defaultTitle(r checker.Result, from, to int64) string {
	if r.First == nil {
		return fmt.Sprintf("timeline %v – %v", time.Duration(from), time.Duration(to))
	}
	v := r.First
	return fmt.Sprintf("first violation: %s at t=%s (%s)", v.Kind, fmtSeconds(v.T), strings.Join(v.Clients, ", "))
}

// Item kinds: each has a style (drawStyles) and a legend entry.
const (
	kHold      = "hold"      // believed it held the lock
	kAcquiring = "acquiring" // an acquisition in flight
	kPaused    = "paused"    // a process pause
	kDown      = "down"      // a crashed node
	kDrift     = "drift"     // clock drift
	kNet       = "net"       // partition, delay or loss touching the process
	kOverlap   = "overlap"   // two holds at once (the first overlap)
	kDeadline  = "deadline"  // a hold's validity deadline
	kAcqFail   = "acq-fail"
	kAcqUnk    = "acq-unknown"
	kWriteCall = "write"       // a client's write to the storage
	kStoreOK   = "store-ok"    // the storage accepted a write
	kStoreFenc = "store-fence" // the storage rejected a write (fenced)
	kCrash     = "crash"
	kRestart   = "restart"
	kFailover  = "failover"
	kJump      = "clock-jump"
	kViolation = "violation"
	kHeal      = "heal"
)

// span is an interval on one process's lane.
type span struct {
	proc       string
	start, end int64
	kind       string
	label      string
	// lo, hi: the vertical extent within the lane, as fractions of the
	// lane height around its centre (-0.5..0.5).
	lo, hi float64
	// group > 0 ties the spans of one fault on several lanes: only the
	// topmost drawn lane gets the label.
	group int
}

// mark is an instant on one process's lane.
type mark struct {
	proc  string
	t     int64
	kind  string
	label string
	hot   bool // part of the first violation: drawn with a red ring
}

// vline is an instant across every lane.
type vline struct {
	t     int64
	kind  string
	label string
}

type timeline struct {
	from, to int64
	spans    []span
	marks    []mark
	vlines   []vline
	clients  map[string]bool
	procs    []string // every process that has an item, in first-seen order
	links    []link
	faultSeq int
}

// link is a message drawn from one lane to another: a write from the
// client's call to the storage's decision.
type link struct {
	from, to string
	t0, t1   int64
	kind     string // the storage's decision: kStoreOK or kStoreFenc
}

func (tl *timeline) inWindow(a, b int64) bool { return b >= tl.from && a <= tl.to }

func (tl *timeline) addSpan(s span) {
	if s.end < s.start || !tl.inWindow(s.start, s.end) {
		return
	}
	tl.spans = append(tl.spans, s)
	tl.seen(s.proc)
}

func (tl *timeline) addMark(m mark) {
	if m.t < tl.from || m.t > tl.to {
		return
	}
	tl.marks = append(tl.marks, m)
	tl.seen(m.proc)
}

func (tl *timeline) seen(p string) {
	if !slices.Contains(tl.procs, p) {
		tl.procs = append(tl.procs, p)
	}
}

// buildTimeline turns the history into items, keeping those that touch
// [from, to].
func buildTimeline(h checker.History, r checker.Result, from, to int64) *timeline {
	tl := &timeline{from: from, to: to, clients: map[string]bool{}}
	for _, c := range h.Clients {
		tl.clients[c] = true
	}
	end := h.End
	if end <= 0 {
		end = to
	}

	// Holds and what they carried.
	type acqKey struct {
		proc string
		t    int64
	}
	tokens := map[acqKey]int64{}
	for _, e := range h.Events {
		if e.Op == event.OpAcquire && e.Kind == event.KindOK && e.Token != 0 {
			tokens[acqKey{e.Proc, e.T}] = e.Token
		}
	}
	for _, hd := range checker.Holds(h.LockOps(), end) {
		label := ""
		if tok, ok := tokens[acqKey{hd.Proc, hd.Start}]; ok {
			label = "token " + strconv.FormatInt(tok, 10)
		}
		tl.addSpan(span{proc: hd.Proc, start: hd.Start, end: hd.End, kind: kHold, label: label, lo: -0.22, hi: 0.22})
	}
	if ov := r.FirstOverlap; ov != nil && r.First != nil && r.First.Kind == checker.KindLeaseOverlap {
		for _, p := range []string{ov.A, ov.B} {
			tl.addSpan(span{proc: p, start: ov.Start, end: ov.End, kind: kOverlap, lo: -0.45, hi: 0.45})
		}
	}

	// Operations in flight, outcomes, deadlines.
	type opKey struct {
		proc string
		id   int64
	}
	calls := map[opKey]int64{}
	var hot *checker.Violation
	if r.First != nil {
		hot = r.First
	}
	var resourceHot *checker.ResourceViolation
	if hot != nil && hot.Kind == checker.KindResource {
		resourceHot = r.FirstResourceViolation
	}
	type writeCall struct {
		t     int64
		value int64
	}
	lastWrite := map[string]writeCall{}
	// A hold's validity deadline is drawn unless the hold ended (its
	// release was called) before it, or a renewal moved it: a deadline
	// nobody reached is noise, often inside a later hold's bar.
	deadline := map[string]int64{}
	endHold := func(proc string, at int64) {
		if d, ok := deadline[proc]; ok && d <= at {
			tl.addMark(mark{proc: proc, t: d, kind: kDeadline})
		}
		delete(deadline, proc)
	}
	var crashed = map[string]int64{}
	var crashOrder []string
	for _, e := range h.Events {
		switch {
		case e.Op == event.OpAcquire && e.Kind == event.KindCall:
			calls[opKey{e.Proc, e.OpID}] = e.T
		case e.Op == event.OpAcquire && (e.Kind == event.KindOK || e.Kind == event.KindFail || e.Kind == event.KindUnknown):
			if t0, ok := calls[opKey{e.Proc, e.OpID}]; ok {
				tl.addSpan(span{proc: e.Proc, start: t0, end: e.T, kind: kAcquiring, lo: -0.035, hi: 0.035})
				delete(calls, opKey{e.Proc, e.OpID})
			}
			switch e.Kind {
			case event.KindOK:
				if e.Until > 0 {
					deadline[e.Proc] = e.Until
				}
			case event.KindFail:
				tl.addMark(mark{proc: e.Proc, t: e.T, kind: kAcqFail})
			case event.KindUnknown:
				tl.addMark(mark{proc: e.Proc, t: e.T, kind: kAcqUnk, label: "?"})
			}
		case e.Op == event.OpAcquire && e.Kind == event.KindRenew:
			if e.Until > 0 {
				deadline[e.Proc] = e.Until
			}
		case e.Op == event.OpRelease && e.Kind == event.KindCall:
			endHold(e.Proc, e.T)
		case e.Op == event.OpWrite && e.Kind == event.KindCall:
			tl.addMark(mark{proc: e.Proc, t: e.T, kind: kWriteCall})
			lastWrite[e.Proc] = writeCall{t: e.T, value: e.Value}
		case e.Kind == event.KindStoreWrite:
			label := fmt.Sprintf("%s→%d", e.Peer, e.Value)
			if e.Token != 0 {
				label += fmt.Sprintf(" #%d", e.Token)
			}
			kind := kStoreOK
			if e.Result != event.ResultOK {
				kind = kStoreFenc
				label += " fenced"
			}
			isHot := resourceHot != nil && e.T == resourceHot.T && e.Peer == resourceHot.Client && e.Result == event.ResultOK
			tl.addMark(mark{proc: e.Proc, t: e.T, kind: kind, label: label, hot: isHot})
			if w, ok := lastWrite[e.Peer]; ok && w.value == e.Value && tl.inWindow(w.t, e.T) {
				tl.links = append(tl.links, link{from: e.Peer, to: e.Proc, t0: w.t, t1: e.T, kind: kind})
			}
		case e.Kind == event.KindPause && e.Op == "":
			if f, ok := h.FaultOf(e); ok {
				tl.addSpan(span{proc: e.Proc, start: e.T, end: e.T + int64(f.Duration), kind: kPaused, label: "paused " + fmtDur(f.Duration), lo: -0.45, hi: 0.45})
			}
		case e.Kind == event.KindCrash && e.Op == "":
			if _, down := crashed[e.Proc]; !down {
				crashOrder = append(crashOrder, e.Proc)
			}
			crashed[e.Proc] = e.T
			label := "crash"
			if e.Detail != "" {
				label += " (" + e.Detail + ")"
			}
			tl.addMark(mark{proc: e.Proc, t: e.T, kind: kCrash, label: label})
		case e.Kind == event.KindRestart && e.Op == "":
			if t0, ok := crashed[e.Proc]; ok {
				tl.addSpan(span{proc: e.Proc, start: t0, end: e.T, kind: kDown, lo: -0.3, hi: 0.3})
				delete(crashed, e.Proc)
			}
			tl.addMark(mark{proc: e.Proc, t: e.T, kind: kRestart, label: "restart"})
		case e.Kind == event.KindFailover:
			tl.addMark(mark{proc: e.Proc, t: e.T, kind: kFailover, label: "failover " + e.Detail})
		case e.Proc == "world" && e.Kind == event.KindFault:
			if f, ok := h.FaultOf(e); ok {
				tl.addFault(e.T, f, end)
			}
		case e.Proc == "world" && e.Kind == event.KindHeal:
			if e.T >= from && e.T <= to {
				tl.vlines = append(tl.vlines, vline{t: e.T, kind: kHeal, label: "heal"})
			}
		}
	}
	// Holds not released before the end: their deadlines stand, in a
	// fixed order.
	var holding []string
	for proc := range deadline {
		holding = append(holding, proc)
	}
	slices.Sort(holding)
	for _, proc := range holding {
		endHold(proc, math.MaxInt64)
	}
	// Acquisitions still in flight and nodes still down at the end.
	var open []opKey
	for k := range calls {
		open = append(open, k)
	}
	slices.SortFunc(open, func(a, b opKey) int {
		return cmp.Or(cmp.Compare(a.proc, b.proc), cmp.Compare(a.id, b.id))
	})
	for _, k := range open {
		tl.addSpan(span{proc: k.proc, start: calls[k], end: end, kind: kAcquiring, lo: -0.035, hi: 0.035})
	}
	for _, p := range crashOrder {
		if t0, ok := crashed[p]; ok {
			tl.addSpan(span{proc: p, start: t0, end: end, kind: kDown, lo: -0.3, hi: 0.3})
		}
	}
	if hot != nil && hot.T >= from && hot.T <= to {
		tl.vlines = append(tl.vlines, vline{t: hot.T, kind: kViolation, label: "first violation: " + string(hot.Kind)})
	}
	return tl
}

// addFault turns one injected fault into items on its targets' lanes.
func (tl *timeline) addFault(t int64, f faults.Fault, end int64) {
	stop := min(t+int64(f.Duration), end)
	switch f.Kind {
	case faults.ClientPause:
		if f.At != "" {
			return // armed: drawn when it fires (its "pause" event)
		}
		for _, p := range f.Targets {
			tl.addSpan(span{proc: p, start: t, end: stop, kind: kPaused, label: "paused " + fmtDur(f.Duration), lo: -0.45, hi: 0.45})
		}
	case faults.NodePause:
		for _, p := range f.Targets {
			tl.addSpan(span{proc: p, start: t, end: stop, kind: kPaused, label: "paused " + fmtDur(f.Duration), lo: -0.45, hi: 0.45})
		}
	case faults.ClockJump:
		for _, p := range f.Targets {
			tl.addMark(mark{proc: p, t: t, kind: kJump, label: "clock " + f.Param()})
		}
	case faults.ClockDrift:
		for _, p := range f.Targets {
			tl.addSpan(span{proc: p, start: t, end: stop, kind: kDrift, label: "drift " + f.Param(), lo: 0.3, hi: 0.45})
		}
	case faults.Partition, faults.Delay, faults.Loss:
		label := string(f.Kind)
		if x := f.Param(); x != "" {
			label += " " + x
		}
		var procs []string
		for _, p := range append(slices.Clone(f.From), f.To...) {
			if !slices.Contains(procs, p) {
				procs = append(procs, p)
			}
		}
		tl.faultSeq++
		for _, p := range procs {
			tl.addSpan(span{proc: p, start: t, end: stop, kind: kNet, label: label, group: tl.faultSeq, lo: -0.45, hi: -0.32})
		}
	}
}

// pickLanes orders the processes: the violation's clients, the storage,
// other clients, nodes, Sentinel; at most max of them. It returns the
// lanes and how many processes with items were left out.
func (tl *timeline) pickLanes(h checker.History, r checker.Result, max int) (lanes []string, omitted int) {
	has := map[string]bool{}
	for _, s := range tl.spans {
		if s.kind != kNet || tl.clients[s.proc] { // a node's lane with only network bands says little
			has[s.proc] = true
		}
	}
	for _, m := range tl.marks {
		has[m.proc] = true
	}
	add := func(p string) {
		if !slices.Contains(lanes, p) {
			lanes = append(lanes, p)
		}
	}
	if r.First != nil {
		for _, c := range r.First.Clients {
			add(c)
		}
	}
	rank := func(p string) int {
		switch {
		case p == "store":
			return 0
		case tl.clients[p]:
			return 1
		case p == "sentinel":
			return 3
		}
		return 2
	}
	var rest []string
	for _, p := range tl.procs {
		if has[p] && !slices.Contains(lanes, p) && p != "world" {
			rest = append(rest, p)
		}
	}
	slices.SortStableFunc(rest, func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), naturalCompare(a, b))
	})
	for _, p := range rest {
		add(p)
	}
	if len(lanes) > max {
		omitted = len(lanes) - max
		lanes = lanes[:max]
	}
	return lanes, omitted
}

// naturalCompare orders "c2" before "c10".
func naturalCompare(a, b string) int {
	pa, na := splitNum(a)
	pb, nb := splitNum(b)
	return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(na, nb), cmp.Compare(a, b))
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, err := strconv.Atoi(s[i:])
	if err != nil {
		return s, -1
	}
	return s[:i], n
}

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
	{kStoreOK, "storage accepts a write (#token)"},
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
			if x1-x0 < vg.Points(1) {
				x1 = x0 + vg.Points(1)
			}
			fillRect(&c, spanColors[kind], x0, yAt(s.proc, s.lo), x1, yAt(s.proc, s.hi))
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

func seconds(ns int64) float64 { return float64(ns) / 1e9 }

func fmtSeconds(ns int64) string { return strconv.FormatFloat(seconds(ns), 'f', 3, 64) + "s" }

// fmtDur prints a duration with millisecond precision.
func fmtDur(d time.Duration) string {
	return d.Round(time.Millisecond).String()
}

// wrap splits s into lines of at most width runes, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	var cur strings.Builder
	for _, w := range strings.Fields(s) {
		if cur.Len() > 0 && len([]rune(cur.String()))+1+len([]rune(w)) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(w)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// labelSlots remembers where labels were written, per lane and level.
type labelSlots map[string][][2]vg.Length

func (l labelSlots) key(proc string, level int) string { return proc + "\x00" + strconv.Itoa(level) }

func (l labelSlots) overlaps(proc string, level int, x0, x1 vg.Length) bool {
	for _, iv := range l[l.key(proc, level)] {
		if x0 < iv[1]+vg.Points(2) && iv[0] < x1+vg.Points(2) {
			return true
		}
	}
	return false
}

func (l labelSlots) add(proc string, level int, x0, x1 vg.Length) {
	k := l.key(proc, level)
	l[k] = append(l[k], [2]vg.Length{x0, x1})
}
