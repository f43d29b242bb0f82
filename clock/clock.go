// Package clock is the time source every lock written for locksim uses.
//
// A Clock is a process's own view of time: its wall clock (Now), which
// offsets, drift and step jumps distort, and a way to wait (Sleep). Lock code
// never calls time.Now or time.Sleep directly; it is handed a Clock, so the
// simulator can give each process a clock of its own while the real-Redis
// arm hands it Real.
//
// Model is the pure arithmetic of a simulated clock: a piecewise-linear map
// from true time (the simulator's virtual nanoseconds) to local time. It has
// no goroutines and reads no clock; the simulator advances it.
package clock

import (
	"fmt"
	"time"
)

// Clock is a process's local time source.
type Clock interface {
	// Now is the process's local wall-clock time. Offsets, drift and step
	// jumps (forward and backward) all show here.
	Now() time.Time
	// Sleep blocks for d of local time. A process that is paused when the
	// sleep ends wakes when the pause ends.
	Sleep(d time.Duration)
}

// Monotonic is a Clock with a monotonic reading, as Go code measures
// elapsed time (time.Since on a time.Now reading, CLOCK_MONOTONIC): it
// runs at the clock's own rate, drift included (NTP slews a monotonic
// clock), and clock jumps never step it.
type Monotonic interface {
	Clock
	// Mono is the time elapsed since an origin fixed for the process: only
	// the difference of two readings means anything.
	Mono() time.Duration
}

// Mono reads c's monotonic clock: c.Mono() when c is Monotonic; for any
// other Clock, Now's distance from the Unix epoch (which a jump of Now
// steps, unless Now's readings carry Go's monotonic reading). The epoch,
// not the zero Time: time.Time.Sub saturates at about 292 years, so the
// zero Time would make every reading the same.
func Mono(c Clock) time.Duration {
	if m, ok := c.(Monotonic); ok {
		return m.Mono()
	}
	return c.Now().Sub(monoEpoch)
}

var monoEpoch = time.Unix(0, 0)

// Real is the machine's clock, for the real-Redis arm.
type Real struct{}

// realOrigin is Real's monotonic origin.
var realOrigin = time.Now()

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Mono is time.Since of a reading taken when the program started: Go's
// monotonic clock.
func (Real) Mono() time.Duration { return time.Since(realOrigin) }

// Sleep calls time.Sleep.
func (Real) Sleep(d time.Duration) { time.Sleep(d) }

// MaxDriftPPM bounds a clock's drift rate: ±50% (500,000 ppm). A clock
// slower than half speed or faster than 1.5× is a configuration error.
const MaxDriftPPM = 500_000

// Model maps true time to a process's local time:
//
//	local(t) = baseLocal + (t - baseTrue) * (1 + driftPPM/1e6)
//
// Jumps and drift changes re-base the line at the true time they happen, so
// local time is continuous except at jumps. All values are nanoseconds.
//
// Beside local time a Model keeps a monotonic reading (Mono): the same
// line at the same drift, which jumps and resyncs never step.
type Model struct {
	baseTrue  int64
	baseLocal int64
	driftPPM  int64
	baseMono  int64
}

// NewModel returns a clock whose local time is trueNow+offset at true time
// trueNow, running at 1+driftPPM/1e6 of true speed.
func NewModel(trueNow int64, offset time.Duration, driftPPM int64) (*Model, error) {
	if err := CheckDrift(driftPPM); err != nil {
		return nil, err
	}
	return &Model{baseTrue: trueNow, baseLocal: trueNow + int64(offset), driftPPM: driftPPM, baseMono: trueNow}, nil
}

// CheckDrift reports whether driftPPM is within ±MaxDriftPPM.
func CheckDrift(driftPPM int64) error {
	if driftPPM < -MaxDriftPPM || driftPPM > MaxDriftPPM {
		return fmt.Errorf("drift %d ppm out of range: allowed -%d..%d ppm (±50%%)", driftPPM, MaxDriftPPM, MaxDriftPPM)
	}
	return nil
}

// Local returns local time (ns since the simulation epoch) at true time t.
// t must not be earlier than the last re-base.
func (m *Model) Local(t int64) int64 {
	dt := t - m.baseTrue
	return m.baseLocal + dt + scale(dt, m.driftPPM)
}

// Mono returns the monotonic reading (ns) at true time t: it starts at
// the true time the Model was made, runs at the drifted rate, and is not
// stepped by Jump or Resync. t must not be earlier than the last re-base.
func (m *Model) Mono(t int64) int64 {
	dt := t - m.baseTrue
	return m.baseMono + dt + scale(dt, m.driftPPM)
}

// TrueAfter returns the true duration after which d of local time will have
// passed (ignoring future jumps): d / (1 + drift).
func (m *Model) TrueAfter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	// d * 1e6 / (1e6 + ppm), rounded up so a sleep never ends early.
	num := int64(d)
	den := int64(1_000_000 + m.driftPPM)
	q := mulDiv(num, 1_000_000, den)
	if local := q + scale(q, m.driftPPM); local < num {
		q++
	}
	return time.Duration(q)
}

// Jump steps the local clock by d at true time t (negative: backward).
func (m *Model) Jump(t int64, d time.Duration) {
	m.rebase(t)
	m.baseLocal += int64(d)
}

// SetDrift changes the drift rate from true time t on.
func (m *Model) SetDrift(t int64, driftPPM int64) error {
	if err := CheckDrift(driftPPM); err != nil {
		return err
	}
	m.rebase(t)
	m.driftPPM = driftPPM
	return nil
}

// Resync sets local time equal to true time t with no drift (the heal
// phase's NTP step).
func (m *Model) Resync(t int64) {
	m.baseMono = m.Mono(t)
	m.baseTrue, m.baseLocal, m.driftPPM = t, t, 0
}

// DriftPPM is the current drift rate.
func (m *Model) DriftPPM() int64 { return m.driftPPM }

func (m *Model) rebase(t int64) {
	m.baseLocal = m.Local(t)
	m.baseMono = m.Mono(t)
	m.baseTrue = t
}

// scale returns dt*ppm/1e6 without overflow for the durations a run uses.
func scale(dt, ppm int64) int64 {
	if ppm == 0 {
		return 0
	}
	return mulDiv(dt, ppm, 1_000_000)
}

// mulDiv computes floor(a*b/c) for c > 0, splitting a to avoid overflow for
// |a| up to ~292 years of nanoseconds and |b| ≤ 1.5e6. Flooring (not
// truncation) keeps local time monotone in true time at every drift rate.
func mulDiv(a, b, c int64) int64 {
	q, r := a/c, a%c
	if r < 0 {
		q, r = q-1, r+c
	}
	rb := r * b
	hi, lo := rb/c, rb%c
	if lo < 0 {
		hi--
	}
	return q*b + hi
}
