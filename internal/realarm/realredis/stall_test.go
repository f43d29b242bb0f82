package realredis

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
)

// fakeSleeper is a detector's clock and sleep: each sleep advances the
// clock by the period plus the next lateness of its script, and the run
// ends when the script does.
type fakeSleeper struct {
	t    int64
	late []time.Duration
}

func (f *fakeSleeper) now() int64 { return f.t }

func (f *fakeSleeper) sleep(d time.Duration) bool {
	if len(f.late) == 0 {
		return false
	}
	f.t += int64(d + f.late[0])
	f.late = f.late[1:]
	return true
}

func detect(ttl time.Duration, late ...time.Duration) Stalls {
	f := &fakeSleeper{late: late}
	d := newStallDetector(f.now, f.sleep, StallPeriod, ttl)
	d.run()
	return d.result()
}

// TestStallDetectorSeesAStall: a wake-up 300 ms late, among others on
// time, is the run's largest, at the time it ended, counted and kept with
// its start; one of 50 ms (under TTL/4) is neither counted nor kept.
func TestStallDetectorSeesAStall(t *testing.T) {
	ms := time.Millisecond
	s := detect(500*ms, 0, 0, 300*ms, 0, 50*ms, 0)
	if s.Wakeups != 6 {
		t.Errorf("wake-ups %d, want 6", s.Wakeups)
	}
	// The third wake-up ended at 3 periods + 300 ms.
	at := int64(3*StallPeriod + 300*ms)
	if s.MaxNS != int64(300*ms) || s.MaxAtNS != at {
		t.Errorf("largest %v at %v, want 300ms at %v", time.Duration(s.MaxNS), time.Duration(s.MaxAtNS), time.Duration(at))
	}
	if s.OverNS != int64(125*ms) || s.Over != 1 || len(s.Kept) != 1 || s.Kept[0] != (Stall{AtNS: at, LateNS: int64(300 * ms)}) {
		t.Errorf("over TTL/4 (%v): %d, kept %+v; want the one stall of 300ms", time.Duration(s.OverNS), s.Over, s.Kept)
	}
	if got, want := s.Kept[0].Start(), int64(3*StallPeriod); got != want {
		t.Errorf("the stall began at %v, want %v", time.Duration(got), time.Duration(want))
	}
	if !strings.Contains(s.String(), "largest 300ms at 0.330 s; 1 of 6 wake-ups") {
		t.Errorf("summary line %q does not say the stall", s)
	}
}

// TestStallDetectorQuiet: wake-ups on time give no stall.
func TestStallDetectorQuiet(t *testing.T) {
	s := detect(500*time.Millisecond, 0, 0, 0, 0)
	if s.Wakeups != 4 || s.MaxNS != 0 || s.Over != 0 || len(s.Kept) != 0 || s.NotKept != 0 {
		t.Errorf("a quiet run: %+v, want 4 wake-ups and no stall", s)
	}
	if got := s.MachineVerdict(unsafeAt(time.Second), 500*time.Millisecond); got != "" {
		t.Errorf("a quiet run's unsafe verdict labelled %q", got)
	}
}

// TestStallDetectorBounded: past MaxKeptStalls stalls over TTL/4 are
// counted, not kept.
func TestStallDetectorBounded(t *testing.T) {
	late := make([]time.Duration, MaxKeptStalls+8)
	for i := range late {
		late[i] = 200 * time.Millisecond
	}
	s := detect(500*time.Millisecond, late...)
	if s.Over != MaxKeptStalls+8 || len(s.Kept) != MaxKeptStalls || s.NotKept != 8 {
		t.Errorf("over %d, kept %d, not kept %d; want %d, %d, 8", s.Over, len(s.Kept), s.NotKept, MaxKeptStalls+8, MaxKeptStalls)
	}
}

func unsafeAt(t time.Duration) checker.Result {
	return checker.Result{Verdict: checker.VerdictUnsafe, First: &checker.Violation{T: int64(t)}}
}

// TestMachineVerdict: the label applies to an unsafe run with a stall of
// at least TTL/2 that began before the first violation and ended within
// one TTL before it, and to nothing else.
func TestMachineVerdict(t *testing.T) {
	ms := time.Millisecond
	ttl := 500 * ms
	stall := Stalls{Kept: []Stall{{AtNS: int64(2868 * ms), LateNS: int64(440 * ms)}}, MaxNS: int64(440 * ms)}
	for _, c := range []struct {
		name  string
		s     Stalls
		check checker.Result
		want  bool
	}{
		{"unsafe 160ms after the stall", stall, unsafeAt(3028 * ms), true},
		{"unsafe during the stall", stall, unsafeAt(2600 * ms), true},
		{"unsafe before the stall", stall, unsafeAt(2400 * ms), false},
		{"unsafe more than a TTL after it", stall, unsafeAt(3400 * ms), false},
		{"a stall under TTL/2", Stalls{Kept: []Stall{{AtNS: int64(2868 * ms), LateNS: int64(240 * ms)}}}, unsafeAt(3028 * ms), false},
		{"safe", stall, checker.Result{Verdict: checker.VerdictSafe}, false},
		{"the largest not kept, just before the violation", Stalls{NotKept: 3, MaxNS: int64(300 * ms), MaxAtNS: int64(8800 * ms), Kept: []Stall{{AtNS: int64(ms), LateNS: int64(130 * ms)}}}, unsafeAt(9 * time.Second), true},
		{"the largest not kept, long before the violation", Stalls{NotKept: 3, MaxNS: int64(300 * ms), MaxAtNS: int64(2 * time.Second), Kept: []Stall{{AtNS: int64(ms), LateNS: int64(130 * ms)}}}, unsafeAt(9 * time.Second), false},
	} {
		got := c.s.MachineVerdict(c.check, ttl)
		if (got != "") != c.want {
			t.Errorf("%s: label %q, want one: %v", c.name, got, c.want)
		}
		if got != "" && !strings.HasPrefix(got, "this verdict may be the machine's: ") {
			t.Errorf("%s: label %q", c.name, got)
		}
		f := c.s.Fields(c.check, ttl)
		if _, ok := f["machine_verdict"]; ok != c.want {
			t.Errorf("%s: --json machine_verdict present %v, want %v", c.name, ok, c.want)
		}
	}
}

// TestStartStallsStops: the run's detector runs on the world's clock with
// its TTL, and stopping it ends its goroutine.
func TestStartStallsStops(t *testing.T) {
	w := &world{job: &Job{TTL: 400 * time.Millisecond}, start: time.Now()}
	s := w.startStalls()()
	if s.PeriodNS != int64(StallPeriod) || s.OverNS != int64(100*time.Millisecond) {
		t.Errorf("period %v, over %v; want %v and TTL/4 = 100ms", time.Duration(s.PeriodNS), time.Duration(s.OverNS), StallPeriod)
	}
}
