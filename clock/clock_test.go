package clock

import (
	"testing"
	"time"
)

func TestModelDriftAndJumps(t *testing.T) {
	m, err := NewModel(0, 0, 100_000) // 10% fast
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Local(int64(10 * time.Second)); got != int64(11*time.Second) {
		t.Fatalf("10%% fast clock after 10s true: got %v want 11s", time.Duration(got))
	}
	// A 10 s local sleep on a 10% fast clock takes 10/1.1 s of true time.
	if got := m.TrueAfter(10 * time.Second); got < 9090909090 || got > 9090909092 {
		t.Fatalf("TrueAfter(10s) at +10%%: got %v", got)
	}
	m.Jump(int64(10*time.Second), -5*time.Second)
	if got := m.Local(int64(10 * time.Second)); got != int64(6*time.Second) {
		t.Fatalf("after -5s jump: got %v want 6s", time.Duration(got))
	}
	m.Resync(int64(20 * time.Second))
	if got := m.Local(int64(21 * time.Second)); got != int64(21*time.Second) {
		t.Fatalf("after resync: got %v", time.Duration(got))
	}
}

func TestTrueAfterNeverEarly(t *testing.T) {
	for _, ppm := range []int64{-500_000, -123_457, -1, 0, 1, 999, 333_333, 500_000} {
		m, _ := NewModel(0, 0, ppm)
		for _, d := range []time.Duration{1, 7, time.Millisecond, 3*time.Second + 1, time.Hour} {
			tr := m.TrueAfter(d)
			if m.Local(int64(tr)) < int64(d) {
				t.Fatalf("ppm %d: sleep %v ends early at true %v (local %v)", ppm, d, tr, m.Local(int64(tr)))
			}
			if tr > 0 && m.Local(int64(tr-1)) >= int64(d) {
				t.Fatalf("ppm %d: sleep %v ends late at true %v", ppm, d, tr)
			}
		}
	}
}

func TestCheckDrift(t *testing.T) {
	if _, err := NewModel(0, 0, 500_001); err == nil {
		t.Fatal("drift beyond +50% accepted")
	}
	if _, err := NewModel(0, 0, -500_000); err != nil {
		t.Fatalf("drift -50%% rejected: %v", err)
	}
}

// The monotonic reading runs at the drifted rate and is never stepped:
// jumps, drift changes and a resync move local time, not Mono.
func TestModelMono(t *testing.T) {
	s := int64(time.Second)
	m, err := NewModel(0, 7*time.Second, 100_000) // 7 s ahead, 10% fast
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Mono(10 * s); got != 11*s {
		t.Fatalf("Mono after 10 s true at +10%%: got %v want 11s", time.Duration(got))
	}
	m.Jump(10*s, -5*time.Second)
	if got := m.Mono(10 * s); got != 11*s {
		t.Fatalf("a -5 s jump stepped Mono: got %v want 11s", time.Duration(got))
	}
	if got := m.Local(10 * s); got != 13*s {
		t.Fatalf("local after the jump: got %v want 13s", time.Duration(got))
	}
	if err := m.SetDrift(12*s, 0); err != nil {
		t.Fatal(err)
	}
	if got := m.Mono(14 * s); got != 15200*int64(time.Millisecond) {
		t.Fatalf("Mono after 2 s fast and 2 s at rate: got %v want 15.2s", time.Duration(got))
	}
	m.Resync(20 * s)
	if got := m.Mono(21 * s); got != 22200*int64(time.Millisecond) {
		t.Fatalf("a resync stepped Mono: got %v want 22.2s", time.Duration(got))
	}
}

type wallOnly struct{ now time.Time }

func (c wallOnly) Now() time.Time        { return c.now }
func (c wallOnly) Sleep(d time.Duration) {}

func TestMonoFallback(t *testing.T) {
	c := wallOnly{now: time.Unix(3, 0)}
	if got := Mono(c); got != 3*time.Second {
		t.Fatalf("Mono of a wall-only clock: got %v want its Now's distance from the Unix epoch, 3s", got)
	}
	a := Mono(Real{})
	if b := Mono(Real{}); b < a {
		t.Fatalf("Real's monotonic reading went back: %v then %v", a, b)
	}
}

// nowOnly is a Clock without a monotonic reading of its own.
type nowOnly struct{ t time.Time }

func (c *nowOnly) Now() time.Time        { return c.t }
func (c *nowOnly) Sleep(d time.Duration) { c.t = c.t.Add(d) }

// Mono of a Clock that is not Monotonic falls back to Now's distance from
// a fixed origin: two readings differ by the time that passed between them.
func TestMonoFallbackMeasuresElapsed(t *testing.T) {
	c := &nowOnly{t: time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)}
	a := Mono(c)
	c.Sleep(1500 * time.Millisecond)
	if got := Mono(c) - a; got != 1500*time.Millisecond {
		t.Fatalf("Mono fallback measured %v across a 1.5s sleep", got)
	}
}
