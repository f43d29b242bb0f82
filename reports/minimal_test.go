package reports

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/sim"
)

// TestCounterexamplesOpenWithMinimalHistory renders the pages of a small
// report (redlock and set-nx-cad under a node clock jump and a pause
// after the check) and reads every counterexample on them: each starts
// with a minimal history of 1..8 events that names the nodes each holder
// locked, then a per-node timeline whose lanes are those nodes, and only
// then, folded, the long story.
func TestCounterexamplesOpenWithMinimalHistory(t *testing.T) {
	p, err := NewPlan(Options{Seeds: 2, Scenarios: []string{"clock-jump", "pause-after-check"}, Locks: []string{"redlock", "set-nx-cad"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Stage(filepath.Join(t.TempDir(), "report"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Discard()
	dir := out.Dir()
	if err := p.Run(context.Background(), sim.TestBubble(t), dir, Exec{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := p.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cells {
		t.Logf("%s × %s: %s %d/%d", c.Scenario, c.Lock, c.Verdict, c.UnsafeRuns, c.Runs)
	}
	seen := map[string]bool{}
	section := regexp.MustCompile(`^([a-z0-9-]+)">`)
	holders := regexp.MustCompile(`Nodes each holder locked: (.*?)\.`)
	holder := regexp.MustCompile(`<b>(c\d+): ([^<]*)</b>`)
	for _, s := range []string{"clock-jump", "pause-after-check"} {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(scenarioHref(s))))
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range strings.Split(string(data), `<h3 id="timeline-`)[1:] {
			m := section.FindStringSubmatch(body)
			if m == nil {
				t.Fatalf("a counterexample heading without a lock: %.80s", body)
			}
			lock := m[1]
			if !strings.Contains(string(data), `<a class="small" href="#timeline-`+lock+`">counterexample ↓</a>`) {
				t.Errorf("%s × %s: the table row does not link down to its counterexample", s, lock)
			}
			seen[s+"/"+lock] = true
			where := s + " × " + lock
			mh, details := strings.Index(body, `class="minhist"`), strings.Index(body, `<details class="long">`)
			if mh < 0 || details < 0 || mh > details || strings.Index(body, `class="story"`) < details {
				t.Errorf("%s: the minimal history does not come first, the story folded after it:\n%s", where, body)
				continue
			}
			if n := strings.Count(body[:details], "<li>"); n < 1 || n > 8 {
				t.Errorf("%s: %d events in the minimal history, want 1..8", where, n)
			}
			hm := holders.FindStringSubmatch(body)
			if hm == nil {
				t.Errorf("%s: no holders named:\n%s", where, body[:details])
				continue
			}
			hs := holder.FindAllStringSubmatch(hm[1], -1)
			if len(hs) != 2 {
				t.Errorf("%s: holders %q, want two", where, hm[1])
			}
			svg := body[strings.Index(body, "<svg"):max(strings.Index(body, "</svg>"), 0)]
			for _, h := range hs {
				if !strings.Contains(svg, ">"+h[1]+"</text>") {
					t.Errorf("%s: the timeline has no lane for holder %s", where, h[1])
				}
				for _, n := range strings.Split(h[2], ", ") {
					if !regexp.MustCompile(`^n\d+$`).MatchString(n) {
						t.Errorf("%s: %s's nodes %q are not node names", where, h[1], h[2])
						continue
					}
					if !strings.Contains(svg, `class="lane node">`+n+"</text>") {
						t.Errorf("%s: the timeline has no lane for %s's node %s", where, h[1], n)
					}
					if !strings.Contains(body[:details], h[1]+"</b> acquired the lock on "+n) && !strings.Contains(body[:details], ", "+n) {
						t.Errorf("%s: the events do not say where %s acquired", where, h[1])
					}
				}
			}
		}
	}
	for _, want := range []string{"clock-jump/redlock", "pause-after-check/set-nx-cad"} {
		if !seen[want] {
			t.Errorf("no counterexample for %s; saw %v", want, seen)
		}
	}
	for _, id := range []string{"redlock", "set-nx-cad"} {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(lockHref(id))))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `class="minhist"`) || !strings.Contains(string(data), "Nodes each holder locked: <b>c") {
			t.Errorf("lock page %s: its worst counterexample has no minimal history", id)
		}
	}
}

// TestValidMinimal: a stored timeline entry's minimal history is checked
// like the rest of the entry; one missing, empty, past its bounds or with
// a span outside its window is not taken (the run is drawn again).
func TestValidMinimal(t *testing.T) {
	good := func() *checker.MinimalHistory {
		return &checker.MinimalHistory{From: 10, To: 100, Events: []checker.MinimalEvent{{T: 20, Who: "c0", What: "acquired the lock on n0"}},
			Spans: []checker.MinimalSpan{{Lane: "c0", From: 20, To: 90, Kind: checker.SpanHold}}}
	}
	if err := validMinimal(good()); err != nil {
		t.Fatalf("a sound minimal history refused: %v", err)
	}
	for name, bad := range map[string]func(*checker.MinimalHistory){
		"no events":       func(m *checker.MinimalHistory) { m.Events = nil },
		"too many events": func(m *checker.MinimalHistory) { m.Events = make([]checker.MinimalEvent, checker.MaxMinimalEvents+1) },
		"too many spans":  func(m *checker.MinimalHistory) { m.Spans = make([]checker.MinimalSpan, checker.MaxMinimalSpans+1) },
		"window reversed": func(m *checker.MinimalHistory) { m.From, m.To = 100, 10 },
		"negative start":  func(m *checker.MinimalHistory) { m.From = -1 },
		"span outside":    func(m *checker.MinimalHistory) { m.Spans[0].To = 200 },
		"unknown kind":    func(m *checker.MinimalHistory) { m.Spans[0].Kind = "holds" },
	} {
		m := good()
		bad(m)
		if validMinimal(m) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if validMinimal(nil) == nil {
		t.Error("a missing minimal history accepted")
	}
}

// TestTimelineLabelsDoNotOverlap: writes accepted within a few
// milliseconds of one another, and a node's key taken at the instant its
// clock jumps, once drew their labels over one another (several
// "c0→297" at one x). No two labels drawn overlap, each stays inside the
// picture, and a label left out is still in its mark's title.
func TestTimelineLabelsDoNotOverlap(t *testing.T) {
	const s = int64(1e9)
	m := &checker.MinimalHistory{From: 0, To: 10 * s, Lanes: []string{"c0", "c1", "n0", "storage"}, Nodes: []string{"n0"},
		Holders: []checker.MinimalHolder{{Client: "c0", OK: s}, {Client: "c1", OK: 5 * s}},
		Events:  []checker.MinimalEvent{{T: s, Who: "c0", What: "acquired the lock on n0"}}}
	span := func(lane string, from, to int64, k checker.SpanKind, who, label string, bad bool) {
		m.Spans = append(m.Spans, checker.MinimalSpan{Lane: lane, From: from, To: to, Kind: k, Who: who, Label: label, Bad: bad})
	}
	span("c0", s, 6*s, checker.SpanHold, "c0", "holds n0", false)
	span("c1", 5*s, 10*s, checker.SpanHold, "c1", "holds n0", false)
	span("n0", s, 5*s, checker.SpanKey, "c0", "c0", false)
	span("n0", 5*s, 5*s, checker.SpanKey, "c1", "c1", false)
	span("n0", 5*s, 5*s, checker.SpanFault, "", "clock jumps +20s", false)
	span("n0", 5*s+s/100, 5*s+s/10, checker.SpanCrash, "", "crashed (persistence none)", false)
	for i := range int64(6) {
		span("storage", 5*s+i*s/100, 5*s+i*s/100, checker.SpanWrite, []string{"c0", "c1"}[i%2], fmt.Sprintf("c%d→%d", i%2, 297+i), i == 5)
	}
	span("storage", 9*s+9*s/10, 9*s+9*s/10, checker.SpanWrite, "c1", "c1→400", true) // at the right edge
	l := layout(m)
	type box struct {
		x0, x1, y0, y1 float64
		text           string
	}
	width := func(text string, px float64) float64 { // generous: wide glyphs a full em
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
	var boxes []box
	drawn := 0
	for _, mk := range l.Marks {
		if mk.Label == "" {
			continue
		}
		drawn++
		boxes = append(boxes, box{mk.LabelX, mk.LabelX + width(mk.Label, 11), mk.LabelY - 9, mk.LabelY + 2, mk.Label})
	}
	for _, b := range l.Bars {
		if b.Label == "" || !b.Fits {
			continue
		}
		px := 12.0
		if b.LabelSmall {
			px = 11
		}
		boxes = append(boxes, box{b.LabelX, b.LabelX + width(b.Label, px), b.LabelY - 9, b.LabelY + 2, b.Label})
	}
	for i, a := range boxes {
		if a.x0 < 0 || a.x1 > l.W {
			t.Errorf("label %q at %.1f..%.1f runs out of the picture (0..%.0f)", a.text, a.x0, a.x1, l.W)
		}
		for _, b := range boxes[:i] {
			if a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 {
				t.Errorf("labels %q (%.1f..%.1f, y %.0f) and %q (%.1f..%.1f, y %.0f) overlap", a.text, a.x0, a.x1, a.y1, b.text, b.x0, b.x1, b.y1)
			}
		}
	}
	for _, mk := range l.Marks {
		if mk.Label == "" && mk.Title == "" {
			t.Errorf("a mark at %.1f without label or title", mk.X)
		}
	}
	if drawn < 4 {
		t.Errorf("only %d mark labels drawn: the layout drops too many", drawn)
	}
	bad := 0
	for _, mk := range l.Marks {
		if strings.HasPrefix(mk.Label, "c1→302") || strings.HasPrefix(mk.Label, "c1→400") {
			bad++
		}
	}
	if bad != 2 {
		t.Errorf("the bad writes' labels: %d drawn, want both", bad)
	}
}

// TestLayoutDrawsEverySpanKind: a span of each kind is drawn (a node's
// crash, once dropped, among them), and the kinds drawn apart have their
// legend.
func TestLayoutDrawsEverySpanKind(t *testing.T) {
	const s = int64(1e9)
	for _, k := range checker.SpanKinds {
		m := &checker.MinimalHistory{From: 0, To: 10 * s, Lanes: []string{"c0", "n0", "storage"}, Nodes: []string{"n0"},
			Holders: []checker.MinimalHolder{{Client: "c0", OK: s}}}
		lane := map[checker.SpanKind]string{checker.SpanKey: "n0", checker.SpanCrash: "n0", checker.SpanWrite: "storage", checker.SpanViolation: ""}[k]
		if _, ok := map[checker.SpanKind]bool{checker.SpanKey: true, checker.SpanCrash: true, checker.SpanWrite: true, checker.SpanViolation: true}[k]; !ok {
			lane = "c0"
		}
		m.Spans = []checker.MinimalSpan{{Lane: lane, From: 2 * s, To: 4 * s, Kind: k, Who: "c0", Label: "x" + string(k)}}
		if k == checker.SpanWrite {
			m.Spans[0].To = m.Spans[0].From
		}
		l := layout(m)
		if len(l.Bars)+len(l.Marks) != 1 {
			t.Errorf("a %s span: %d bars and %d marks drawn, want one", k, len(l.Bars), len(l.Marks))
		}
		if k == checker.SpanCrash {
			legend := false
			for _, g := range l.Legend {
				legend = legend || strings.Contains(g.Text, "crash")
			}
			if !legend || len(l.Bars) != 1 || !strings.Contains(l.Bars[0].Label, "down") || !strings.Contains(l.Bars[0].Title, "xcrash") {
				t.Errorf("a crash: bars %+v, legend %+v", l.Bars, l.Legend)
			}
		}
	}
}
