package locktest

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
)

// fakeClock is a wall clock the test moves and a ticker it ticks by hand.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	ticks   chan time.Time
	every   time.Duration
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC), ticks: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.every = d
	return c.ticks, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stopped = true
	}
}

// tick moves the clock by d and delivers a tick; it returns once the
// progress goroutine took it (the channel is unbuffered).
func (c *fakeClock) tick(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	c.mu.Unlock()
	c.ticks <- now
}

// lines collects logged lines on a channel.
type lines chan string

func (l lines) logf(format string, args ...any) { l <- fmt.Sprintf(format, args...) }

func TestProgressLine(t *testing.T) {
	clk := newFakeClock()
	out := make(lines, 10)
	p := newSearchProgress(out.logf, clk, 100, false)
	p.run()
	if clk.every != progressEvery || progressEvery > 10*time.Second {
		t.Fatalf("ticker every %v, want progressEvery (%v, at most 10 s)", clk.every, progressEvery)
	}
	p.runs.Store(38) // the 38th world is running
	clk.tick(10 * time.Second)
	if got, want := <-out, "locktest: progress: 37/100 schedules done, 0 unsafe so far, 10s elapsed"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	p.unsafe.Store(40)
	p.shrinkFrom.Store(40)
	p.runs.Store(52)
	clk.tick(10*time.Second + 400*time.Millisecond)
	if got, want := <-out, "locktest: progress: 40/100 schedules done, 1 unsafe (schedule 40); shrinking it: 12 runs so far, 20s elapsed"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	p.stop()
	if !clk.stopped {
		t.Error("stop left the ticker running")
	}
	select {
	case clk.ticks <- clk.Now():
		t.Error("a tick was taken after stop")
	default:
	}
	if len(out) != 0 {
		t.Errorf("lines after stop: %q", <-out)
	}
}

// Determinism runs each schedule twice: the line counts schedules.
func TestProgressLineDeterminism(t *testing.T) {
	clk := newFakeClock()
	out := make(lines, 1)
	p := newSearchProgress(out.logf, clk, 20, true)
	p.run()
	defer p.stop()
	p.runs.Store(7) // schedules 1-3 ran twice, the 4th's first run is running
	clk.tick(time.Second)
	if got, want := <-out, "locktest: progress: 3/20 schedules done, 0 unsafe so far, 1s elapsed"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}

var (
	searchLine = regexp.MustCompile(`^locktest: progress: (\d+)/(\d+) schedules done, 0 unsafe so far, \d+s elapsed$`)
	shrinkLine = regexp.MustCompile(`^locktest: progress: (\d+)/50 schedules done, 1 unsafe \(schedule (\d+)\); shrinking it: (\d+) runs so far, \d+s elapsed$`)
)

// Find wires the progress line to its own runs: a tick during every world
// (sent by the lock's factory) logs one line, counting the schedules, then
// the shrinking of the one found unsafe; no line comes after Find returns.
func TestFindLogsProgress(t *testing.T) {
	clk := newFakeClock()
	out := make(lines, 10_000)
	savedClock, savedLog := progressClock, progressLog
	progressClock = clk
	progressLog = func(*testing.T) func(string, ...any) { return out.logf }
	t.Cleanup(func() { progressClock, progressLog = savedClock, savedLog })
	var got []string
	inner := Library("canary-no-owner-release") // a plain DEL release
	worlds := 0
	f := func(env locks.Env) (locks.Lock, error) {
		if env.Client == "c0" {
			worlds++
			clk.tick(time.Second)    // taken by the progress goroutine,
			got = append(got, <-out) // which logs its line before this world goes on
		}
		return inner(env)
	}
	o := Options{Duration: 10 * time.Second, Liveness: 5 * time.Second, Kinds: []faults.Kind{faults.Delay}, Checks: 50, Seed: 1}
	found := Find(t, f, o)
	if found == nil {
		t.Fatal("no delay schedule of 50 found a plain-DEL release unsafe")
	}
	close(out) // Find's progress goroutine has ended: a late line would panic here
	for l := range out {
		t.Errorf("a line no tick asked for: %q", l)
	}
	if len(got) != worlds {
		t.Fatalf("%d lines for %d worlds (one tick each):\n%q", len(got), worlds, got)
	}
	for i, l := range got {
		if i < found.Tried {
			m := searchLine.FindStringSubmatch(l)
			if m == nil || m[1] != strconv.Itoa(i) || m[2] != "50" {
				t.Fatalf("line %d during the search: %q, want %d/50 schedules done", i, l, i)
			}
			continue
		}
		m := shrinkLine.FindStringSubmatch(l)
		if m == nil || m[1] != strconv.Itoa(found.Tried) || m[2] != m[1] || m[3] != strconv.Itoa(i-found.Tried+1) {
			t.Fatalf("line %d while shrinking: %q, want schedule %d and %d runs", i, l, found.Tried, i-found.Tried+1)
		}
	}
	if worlds <= found.Tried {
		t.Fatalf("%d worlds, the search alone took %d: no shrinking run", worlds, found.Tried)
	}
	t.Logf("%d lines: %d schedules searched, %d shrinking runs; the last: %s", len(got), found.Tried, worlds-found.Tried, got[len(got)-1])
}
