package locktest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksim/locksim/locks"
)

// A long search says how far it got: every progressEvery of wall time,
// Find logs one line through t.Logf (streamed by go test -v) with the
// schedules run, the total, the unsafe ones so far and the time elapsed,
// and, once it found one, how far shrinking got.
//
// The line is the harness's feedback, not part of any run: the ticker and
// the wall clock are read outside the bubble, by a goroutine of the test's
// own, and nothing of them reaches a world, a trace or an Outcome. Inside
// a run only the factory's wrapper (below) runs: it counts, and reads no
// clock.
const progressEvery = 10 * time.Second

// progressClock is where the progress line reads wall time and gets its
// ticker; tests replace it (progress_test.go) to tick by hand.
var progressClock wallClock = realClock{}

// progressLog is where a Find on t logs its progress lines: t.Logf,
// which go test -v streams; tests replace it to read the lines.
var progressLog = func(t *testing.T) func(format string, args ...any) { return t.Logf }

// wallClock is the wall clock and the ticker a progress line reads.
type wallClock interface {
	Now() time.Time
	// NewTicker returns a channel that delivers a tick every d, and a
	// function that stops it.
	NewTicker(d time.Duration) (<-chan time.Time, func())
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	tk := time.NewTicker(d)
	return tk.C, tk.Stop
}

// searchProgress follows one Find call.
type searchProgress struct {
	logf  func(format string, args ...any)
	clock wallClock
	start time.Time
	// total is the number of schedules the search runs when none fails;
	// perSchedule the runs each costs (2 with Options.Determinism).
	total, perSchedule int
	// runs counts the worlds started (a world's client c0 built its
	// lock); shrinkFrom is runs when the first unsafe schedule was known,
	// 0 before, and unsafe that schedule's number.
	runs       atomic.Int64
	shrinkFrom atomic.Int64
	unsafe     atomic.Int64

	stopTicker func()
	quit       chan struct{}
	wg         sync.WaitGroup
}

// watchSearch starts following a Find call on t: it wraps *f so that every
// world it builds is counted, and reads *found (the search's first unsafe
// outcome, set by Find between runs) when the next world starts. Find
// calls it once, deferring stop:
//
//	defer watchSearch(t, &f, o, &found).stop()
func watchSearch(t *testing.T, f *Factory, o Options, found **Outcome) *searchProgress {
	p := newSearchProgress(progressLog(t), progressClock, checks(o), o.Determinism)
	inner := *f
	*f = func(env locks.Env) (locks.Lock, error) {
		if env.Client == "c0" { // one c0 a world
			// Find set *found, if at all, before it started this world
			// (the run's goroutines start after): no race.
			if fo := *found; fo != nil && p.shrinkFrom.Load() == 0 {
				p.unsafe.Store(int64(fo.Tried))
				p.shrinkFrom.Store(p.runs.Load())
			}
			p.runs.Add(1)
		}
		return inner(env)
	}
	p.run()
	return p
}

func newSearchProgress(logf func(string, ...any), clock wallClock, total int, determinism bool) *searchProgress {
	p := &searchProgress{logf: logf, clock: clock, start: clock.Now(), total: total, perSchedule: 1, quit: make(chan struct{})}
	if determinism {
		p.perSchedule = 2
	}
	return p
}

// run starts the goroutine that logs a line at every tick.
func (p *searchProgress) run() {
	ticks, stop := p.clock.NewTicker(progressEvery)
	p.stopTicker = stop
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			select {
			case <-p.quit:
				return
			case <-ticks:
				p.logf("%s", p.line())
			}
		}
	}()
}

// stop ends the ticker and waits for its goroutine: no line is logged
// after Find returns.
func (p *searchProgress) stop() {
	p.stopTicker()
	close(p.quit)
	p.wg.Wait()
}

// line is the progress line as of now.
func (p *searchProgress) line() string {
	elapsed := p.clock.Now().Sub(p.start).Round(time.Second)
	runs := p.runs.Load()
	if from := p.shrinkFrom.Load(); from > 0 {
		return fmt.Sprintf("locktest: progress: %d/%d schedules done, 1 unsafe (schedule %d); shrinking it: %d runs so far, %v elapsed",
			p.unsafe.Load(), p.total, p.unsafe.Load(), runs-from, elapsed)
	}
	// The world running now is not done yet.
	done := max(runs-1, 0) / int64(p.perSchedule)
	return fmt.Sprintf("locktest: progress: %d/%d schedules done, 0 unsafe so far, %v elapsed", done, p.total, elapsed)
}
