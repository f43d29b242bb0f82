package charts

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
)

// TestTimelineLanes: the violation's clients come first, then the
// storage, then other clients in natural order (c2 before c10), nodes and
// Sentinel; beyond MaxLanes the rest are counted in the caption.
func TestTimelineLanes(t *testing.T) {
	ms := int64(1e6)
	h := checker.History{End: 10_000 * ms, Heal: 9_000 * ms}
	for i := 0; i < 12; i++ {
		c := fmt.Sprintf("c%d", i)
		h.Clients = append(h.Clients, c)
		h.Events = append(h.Events,
			checker.Event{T: int64(100+i) * ms, Proc: c, Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
			checker.Event{T: int64(200+i) * ms, Proc: c, Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Until: 2000 * ms})
	}
	h.Events = append(h.Events,
		checker.Event{T: 300 * ms, Proc: "store", Kind: event.KindStoreWrite, Peer: "c7", Value: 1, Result: event.ResultOK},
		checker.Event{T: 400 * ms, Proc: "n0", Kind: event.KindCrash},
		checker.Event{T: 500 * ms, Proc: "sentinel", Kind: event.KindFailover, Detail: "n0 -> n1"})
	slices.SortStableFunc(h.Events, func(a, b checker.Event) int { return int(a.T - b.T) })
	r := checker.Result{First: &checker.Violation{Kind: checker.KindLeaseOverlap, T: 300 * ms, Since: 100 * ms, Clients: []string{"c7", "c3"}, Detail: "x"}}

	fig, err := Timeline(h, r, TimelineOptions{MaxLanes: 6})
	if err != nil {
		t.Fatal(err)
	}
	tf := fig.(*timelineFigure)
	if want := []string{"c7", "c3", "store", "c0", "c1", "c2"}; !slices.Equal(tf.lanes, want) {
		t.Errorf("lanes %v, want %v", tf.lanes, want)
	}
	if !strings.Contains(strings.Join(tf.caption, "\n"), "9 more processes") {
		t.Errorf("caption does not count the 9 processes left out: %q", tf.caption)
	}
	fig, err = Timeline(h, r, TimelineOptions{MaxLanes: 20})
	if err != nil {
		t.Fatal(err)
	}
	tf = fig.(*timelineFigure)
	want := []string{"c7", "c3", "store", "c0", "c1", "c2", "c4", "c5", "c6", "c8", "c9", "c10", "c11", "n0", "sentinel"}
	if !slices.Equal(tf.lanes, want) {
		t.Errorf("lanes %v, want %v", tf.lanes, want)
	}
	// The window is the violation's span plus margins.
	if tf.tl.from > 100*ms || tf.tl.to < 300*ms || tf.tl.to > 1000*ms {
		t.Errorf("window [%d, %d] does not fit [100ms, 300ms] with margins", tf.tl.from, tf.tl.to)
	}
}

// TestTimelineDeadlines: a hold's validity deadline is drawn when the
// holder was still in it (released after the deadline, or never), not when
// it released first or a renewal moved the deadline on.
func TestTimelineDeadlines(t *testing.T) {
	ms := int64(1e6)
	h := checker.History{End: 10_000 * ms, Heal: 9_000 * ms, Clients: []string{"c0", "c1", "c2"}}
	ev := func(tt int64, proc string, kind event.Kind, op event.Op, id, until int64) checker.Event {
		return checker.Event{T: tt * ms, Proc: proc, Kind: kind, Op: op, OpID: id, Until: until * ms}
	}
	h.Events = []checker.Event{
		ev(100, "c0", "call", "acquire", 1, 0), ev(110, "c0", "ok", "acquire", 1, 3000), // released early: no deadline
		ev(120, "c1", "call", "acquire", 1, 0), ev(130, "c1", "ok", "acquire", 1, 1000), // released late: deadline at 1000
		ev(140, "c2", "call", "acquire", 1, 0), ev(150, "c2", "ok", "acquire", 1, 1000), // renewed to 4000, never released
		ev(500, "c0", "call", "release", 2, 0), ev(510, "c0", "ok", "release", 2, 0),
		ev(900, "c2", "renew", "acquire", 1, 4000),
		ev(1500, "c1", "call", "release", 2, 0), ev(1510, "c1", "ok", "release", 2, 0),
	}
	tl := buildTimeline(h, checker.Result{}, 0, h.End)
	var got []string
	for _, m := range tl.marks {
		if m.kind == kDeadline {
			got = append(got, fmt.Sprintf("%s@%d", m.proc, m.t/ms))
		}
	}
	slices.Sort(got)
	if want := []string{"c1@1000", "c2@4000"}; !slices.Equal(got, want) {
		t.Fatalf("deadlines drawn: %v, want %v", got, want)
	}
}

// TestTinyOverlapVisible: an overlap of 0.7 ms in a window of seconds is
// drawn 4 points wide in a strong red (at its true width it was a
// fraction of a pixel, invisible).
func TestTinyOverlapVisible(t *testing.T) {
	ms, us := int64(1e6), int64(1e3)
	h := checker.History{End: 12_000 * ms, Heal: 11_000 * ms, Clients: []string{"c0", "c1"}}
	h.Events = []checker.Event{
		{T: 1000 * ms, Proc: "c0", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		{T: 1001 * ms, Proc: "c0", Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Until: 5000*ms + 700*us},
		{T: 4990 * ms, Proc: "c1", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		{T: 5000 * ms, Proc: "c1", Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Until: 9000 * ms},
	}
	r := checker.Check(h, checker.Options{})
	if r.First == nil || r.LeaseOverlaps == 0 {
		t.Fatalf("no overlap found: %+v", r)
	}
	fig, err := Timeline(h, r, TimelineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var svg strings.Builder
	if err := Encode(&svg, fig, "svg"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "fill-opacity:0.66667") {
		t.Errorf("no strong-red band for the 0.7 ms overlap in the SVG")
	}
}

// TestStoreLabelsMatchLegend: a storage write is labelled writer→value
// ("c0→297"), with " #token" only when it carries a fencing token; the
// legend says so (it said "#token" alone, beside labels of pool values).
func TestStoreLabelsMatchLegend(t *testing.T) {
	ms := int64(1e6)
	h := checker.History{End: 1000 * ms, Heal: 900 * ms, Clients: []string{"c0", "c1"}, Events: []checker.Event{
		{T: 100 * ms, Proc: "store", Kind: event.KindStoreWrite, Peer: "c0", Value: 297, Result: event.ResultOK},
		{T: 200 * ms, Proc: "store", Kind: event.KindStoreWrite, Peer: "c1", Value: 296, Token: 7, Result: event.ResultOK},
	}}
	r := checker.Result{First: &checker.Violation{Kind: checker.KindResource, T: 200 * ms, Since: 100 * ms, Clients: []string{"c1", "c0"}, Detail: "x"}}
	tl := buildTimeline(h, r, 0, 1000*ms)
	var labels []string
	for _, m := range tl.marks {
		if m.kind == kStoreOK {
			labels = append(labels, m.label)
		}
	}
	if want := []string{"c0→297", "c1→296 #7"}; !slices.Equal(labels, want) {
		t.Errorf("store labels %q, want %q", labels, want)
	}
	for _, e := range legendEntries {
		if e.kind == kStoreOK && (!strings.Contains(e.text, "writer→value") || !strings.Contains(e.text, "#token")) {
			t.Errorf("legend %q does not say what a store label shows (writer→value, #token)", e.text)
		}
	}
}
