package charts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/locksim/locksim/checker"
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
