package charts_test

import (
	"bytes"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

func TestWilson(t *testing.T) {
	cases := []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 0, 0, 1},
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{5, 10, 0.2366, 0.7634},
		{1, 200, 0.00088, 0.02775},
		{100, 200, 0.4314, 0.5686},
	}
	for _, c := range cases {
		lo, hi := stats.Wilson(c.k, c.n)
		if math.Abs(lo-c.lo) > 5e-4 || math.Abs(hi-c.hi) > 5e-4 {
			t.Errorf("stats.Wilson(%d, %d) = [%.5f, %.5f], want [%.4f, %.4f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
		if lo < 0 || hi > 1 || lo > hi {
			t.Errorf("stats.Wilson(%d, %d) = [%v, %v] is not inside [0, 1]", c.k, c.n, lo, hi)
		}
		if c.n > 0 {
			if p := float64(c.k) / float64(c.n); p < lo || p > hi {
				t.Errorf("stats.Wilson(%d, %d) = [%v, %v] does not contain %v", c.k, c.n, lo, hi, p)
			}
		}
	}
}

func rateChart() charts.RateChart {
	mk := func(name string, ks ...int) charts.RateSeries {
		s := charts.RateSeries{Name: name}
		for i, k := range ks {
			s.Points = append(s.Points, charts.RatePoint{X: float64(i) * 0.5, Rate: stats.Rate{K: k, N: 50}})
		}
		return s
	}
	return charts.RateChart{Title: "pause before the write", XLabel: "pause (× TTL)", Width: 5 * vg.Inch, Height: 3 * vg.Inch,
		Series: []charts.RateSeries{mk("set-nx-cad", 0, 0, 40, 45, 48), mk("redlock", 0, 1, 35, 50, 50), mk("fencing", 0, 0, 0, 0, 0)}}
}

func fencingChart() charts.FencingChart {
	return charts.FencingChart{Title: "lease overlap vs resource violation", Width: 5 * vg.Inch, Height: 3 * vg.Inch, Groups: []charts.FencingGroup{
		{Name: "set-nx-cad", Overlap: stats.Rate{K: 40, N: 200}, Resource: stats.Rate{K: 38, N: 200}},
		{Name: "fencing", Overlap: stats.Rate{K: 35, N: 200}, Resource: stats.Rate{K: 0, N: 200}},
	}}
}

// history is a small hand-made counterexample: c0 holds with token 1,
// pauses past its deadline, c1 takes the lock with token 2 and writes,
// then c0's stale write is fenced; node n0 crashes and restarts.
func history() (checker.History, checker.Result) {
	ms := int64(1e6)
	h := checker.History{Clients: []string{"c0", "c1", "c2"}, Heal: 10_000 * ms, End: 12_000 * ms, Fencing: "max-token", Resource: "pool", Initial: 300}
	ev := func(t int64, p string, k event.Kind, op event.Op, id int64, f func(*checker.Event)) {
		e := checker.Event{T: t * ms, Proc: p, Kind: k, Op: op, OpID: id}
		if f != nil {
			f(&e)
		}
		h.Events = append(h.Events, e)
	}
	ev(100, "c0", "call", "acquire", 1, nil)
	ev(120, "c0", "ok", "acquire", 1, func(e *checker.Event) { e.Until, e.Token = 3120*ms, 1 })
	h.Faults = []faults.Fault{
		{Kind: faults.ClientPause, Start: 100 * time.Millisecond, Duration: 5 * time.Second, Targets: []string{"c0"}, At: "before-write"},
		{Kind: faults.ClockJump, Start: 500 * time.Millisecond, Targets: []string{"n0"}, Jump: 2 * time.Second},
		{Kind: faults.Partition, Start: 600 * time.Millisecond, Duration: time.Second, From: []string{"c2"}, To: []string{"n0"}, OneWay: true},
	}
	fault := func(i int) func(*checker.Event) {
		return func(e *checker.Event) { e.Fault, e.Detail = i, h.Faults[i-1].String() }
	}
	ev(130, "c0", "pause", "", 0, fault(1))
	ev(500, "world", "fault", "", 0, fault(2))
	ev(600, "world", "fault", "", 0, fault(3))
	ev(1000, "n0", "crash", "", 0, func(e *checker.Event) { e.Detail = "none" })
	ev(1500, "n0", "restart", "", 0, nil)
	ev(3200, "c1", "call", "acquire", 1, nil)
	ev(3300, "c1", "ok", "acquire", 1, func(e *checker.Event) { e.Until, e.Token = 6300*ms, 2 })
	ev(3400, "c1", "call", "write", 2, func(e *checker.Event) { e.Value, e.Token = 299, 2 })
	ev(3410, "store", "store-write", "", 0, func(e *checker.Event) { e.Peer, e.Value, e.Token, e.Result = "c1", 299, 2, "ok" })
	ev(3420, "c1", "ok", "write", 2, nil)
	ev(5130, "c0", "call", "write", 2, func(e *checker.Event) { e.Value, e.Token = 299, 1 })
	ev(5140, "store", "store-write", "", 0, func(e *checker.Event) { e.Peer, e.Value, e.Token, e.Result = "c0", 299, 1, "fenced" })
	ev(5150, "c0", "fail", "write", 2, nil)
	ev(5200, "c2", "call", "acquire", 1, nil)
	ev(5250, "c2", "fail", "acquire", 1, nil)
	r := checker.Check(h, checker.Options{SkipPorcupine: true})
	// Draw it as if it were a violation (fencing made it safe).
	r.First = &checker.Violation{Kind: checker.KindLeaseOverlap, T: 3300 * ms, Since: 100 * ms, Clients: []string{"c0", "c1"}, Detail: "test violation"}
	return h, r
}

// renderAll renders every figure kind into dir and returns the paths.
func renderAll(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	for name, mk := range map[string]func() (charts.Figure, error){
		"rates":   rateChart().Figure,
		"band":    func() (charts.Figure, error) { c := rateChart(); c.Band = true; return c.Figure() },
		"fencing": fencingChart().Figure,
		"timeline": func() (charts.Figure, error) {
			h, r := history()
			return charts.Timeline(h, r, charts.TimelineOptions{Caption: []string{"repro: x"}, Width: 6 * vg.Inch})
		},
	} {
		fig, err := mk()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, err := charts.SaveAll(fig, filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		paths = append(paths, p...)
	}
	return paths
}

// TestRenderFiles renders every figure as PNG and SVG twice: the files
// exist, are not empty, PNGs decode, SVGs carry their font, and the second
// rendering gives the same bytes.
func TestRenderFiles(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	paths := renderAll(t, a)
	renderAll(t, b)
	if len(paths) != 8 {
		t.Fatalf("%d files, want 8: %v", len(paths), paths)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			t.Errorf("%s is empty", p)
		}
		switch filepath.Ext(p) {
		case ".png":
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Errorf("%s: not a PNG: %v", p, err)
			} else if r := img.Bounds(); r.Dx() < 300 || r.Dy() < 200 {
				t.Errorf("%s: %v is too small", p, r)
			}
		case ".svg":
			s := string(data)
			if !strings.HasPrefix(s, "<?xml") || !strings.Contains(s, "<svg") || !strings.Contains(s, "@font-face") {
				t.Errorf("%s: not an SVG with an embedded font", p)
			}
		}
		again, err := os.ReadFile(filepath.Join(b, filepath.Base(p)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, again) {
			t.Errorf("%s: a second rendering gave different bytes", filepath.Base(p))
		}
	}
}

func TestEncodeUnknownFormat(t *testing.T) {
	fig, err := fencingChart().Figure()
	if err != nil {
		t.Fatal(err)
	}
	if err := charts.Encode(&bytes.Buffer{}, fig, "pdf"); err == nil {
		t.Error("pdf: no error")
	}
	if err := charts.Save(fig, filepath.Join(t.TempDir(), "x.gif")); err == nil {
		t.Error("x.gif: no error")
	}
}

func TestFigureErrors(t *testing.T) {
	if _, err := (charts.RateChart{Title: "empty"}).Figure(); err == nil {
		t.Error("a rate chart with no points: no error")
	}
	if _, err := (charts.FencingChart{}).Figure(); err == nil {
		t.Error("a fencing chart with no groups: no error")
	}
	h, r := history()
	r.First = nil
	if _, err := charts.Timeline(h, r, charts.TimelineOptions{}); err == nil {
		t.Error("a timeline with no violation and no window: no error")
	}
	if _, err := charts.Timeline(h, r, charts.TimelineOptions{From: 1e9, To: 2e9}); err != nil {
		t.Errorf("a timeline with an explicit window: %v", err)
	}
}

// TestTimelineOfARealRun draws the counterexample of a real run (set-nx-cad
// paused after its check for longer than the TTL) and checks it renders
// the same twice.
func TestTimelineOfARealRun(t *testing.T) {
	info, err := catalogue.Get("set-nx-cad")
	if err != nil {
		t.Fatal(err)
	}
	scenario := "pause-after-check"
	if _, err := scenarios.Get(scenario); err != nil {
		scenario = "default"
	}
	var j *run.Judged
	for seed := uint64(1); seed <= 30 && (j == nil || j.Check.First == nil); seed++ {
		job, err := run.Spec{Scenario: scenario, Lock: info.ID, Seed: seed}.Build()
		if err != nil {
			t.Fatal(err)
		}
		job.Check.SkipPorcupine = true
		j, err = job.Run(sim.TestBubble(t))
		if err != nil {
			t.Fatal(err)
		}
	}
	if j.Check.First == nil {
		t.Skipf("no unsafe seed of %s × set-nx-cad in 1..30", scenario)
	}
	var out [2]bytes.Buffer
	for i := range out {
		fig, err := charts.Timeline(j.History, j.Check, charts.TimelineOptions{Caption: []string{fmt.Sprintf("repro: locksim run --scenario %s --lock set-nx-cad --seed %d", scenario, j.Job.Config.Seed)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := charts.Encode(&out[i], fig, "png"); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
		t.Error("two renderings of the same run differ")
	}
	if _, err := png.Decode(bytes.NewReader(out[0].Bytes())); err != nil {
		t.Error(err)
	}
	if dir := os.Getenv("LOCKSIM_TIMELINE_OUT"); dir != "" {
		os.WriteFile(filepath.Join(dir, "timeline-real.png"), out[0].Bytes(), 0o644)
	}
}
