package reports

import (
	"context"
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
