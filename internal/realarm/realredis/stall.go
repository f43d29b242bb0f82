package realredis

import (
	"fmt"
	"sync"
	"time"

	"github.com/locksim/locksim/checker"
)

// The stall detector. A real run's verdict can be made by the machine,
// not the lock: on a loaded 2-core machine the harness and the drivers
// went unscheduled for 0.4–0.5 s, and correct locks overlapped at a
// 500 ms TTL (docs/FINDINGS.md, the drivers table's no-faults). During every real run a
// goroutine of the harness sleeps StallPeriod again and again and records
// how late each wake-up was, on the run's true time (world.now). It sees
// the harness's own process only: a stall of one driver or one
// redis-server alone is not seen (a stall of the machine is).

// StallPeriod is how long the detector sleeps between readings.
const StallPeriod = 10 * time.Millisecond

// MaxKeptStalls is how many stalls over a quarter of the TTL a run keeps
// with their times (the first ones); later ones are only counted.
const MaxKeptStalls = 32

// Stall is one late wake-up: it ended at AtNS (true time) LateNS later
// than asked, so nothing of the harness ran, at worst, from AtNS-LateNS
// to AtNS.
type Stall struct {
	AtNS   int64 `json:"at_ns"`
	LateNS int64 `json:"late_ns"`
}

// Start is the true time the stall began (at the latest).
func (s Stall) Start() int64 { return s.AtNS - s.LateNS }

// Stalls is what the detector saw in one run: counters, the largest
// lateness and when, and the first MaxKeptStalls wake-ups later than
// OverNS (a quarter of the TTL).
type Stalls struct {
	PeriodNS int64 `json:"period_ns"`
	Wakeups  int64 `json:"wakeups"`
	MaxNS    int64 `json:"max_ns"`
	MaxAtNS  int64 `json:"max_at_ns"`
	// OverNS is a quarter of the TTL; Over counts the wake-ups later than
	// it, Kept the first MaxKeptStalls of them (time order), NotKept the
	// rest.
	OverNS  int64   `json:"over_ns"`
	Over    int     `json:"over"`
	Kept    []Stall `json:"kept,omitempty"`
	NotKept int     `json:"not_kept,omitempty"`
}

// stallDetector measures the lateness of its own wake-ups. Its clock
// (true time in ns) and its sleep are handed in: a test hands in a fake
// clock whose sleep is as late as the test says.
type stallDetector struct {
	now    func() int64
	sleep  func(time.Duration) bool // false: the run is over
	period time.Duration

	mu sync.Mutex
	s  Stalls
}

func newStallDetector(now func() int64, sleep func(time.Duration) bool, period, ttl time.Duration) *stallDetector {
	return &stallDetector{now: now, sleep: sleep, period: period, s: Stalls{PeriodNS: int64(period), OverNS: int64(ttl / 4)}}
}

// run sleeps and measures until sleep says the run is over.
func (d *stallDetector) run() {
	for {
		before := d.now()
		if !d.sleep(d.period) {
			return
		}
		after := d.now()
		d.observe(after, after-before-int64(d.period)) // late: past the period asked for
	}
}

// observe records one wake-up at true time at, late ns past its period.
func (d *stallDetector) observe(at, late int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.s.Wakeups++
	if late > d.s.MaxNS {
		d.s.MaxNS, d.s.MaxAtNS = late, at
	}
	if late > d.s.OverNS {
		d.s.Over++
		if len(d.s.Kept) < MaxKeptStalls {
			d.s.Kept = append(d.s.Kept, Stall{AtNS: at, LateNS: late})
		} else {
			d.s.NotKept++
		}
	}
}

// result is what it has seen so far (a copy).
func (d *stallDetector) result() Stalls {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.s
	s.Kept = append([]Stall(nil), d.s.Kept...)
	return s
}

// startStalls starts the run's detector on its true time; the returned
// function stops it and returns what it saw.
func (w *world) startStalls() (stop func() Stalls) {
	done := make(chan struct{})
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-done:
			return false
		}
	}
	det := newStallDetector(w.now, sleep, StallPeriod, w.job.TTL)
	ended := make(chan struct{})
	go func() { defer close(ended); det.run() }()
	return func() Stalls {
		close(done)
		<-ended
		return det.result()
	}
}

// MachineRule is the rule by which a real run's unsafe verdict is
// labelled as possibly the machine's: a stall of at least half the TTL
// that began before the first violation and ended no more than one TTL
// before it. Half the TTL because a correct lock leaves its holder at
// least TTL minus its critical section (a third of the TTL at most in the
// built-in workloads) between its check and its key's expiry, so a stall
// of half the TTL or more, there, can make that holder act on an expired
// lease by itself; within one TTL because a lease granted before that
// window has expired before it.
const MachineRule = "a stall ≥ TTL/2 that began before the first violation and ended no more than one TTL before it"

// MachineVerdict says why an unsafe verdict may be the machine's (""
// when the rule finds no such stall, or the run is not unsafe). It never
// changes the verdict.
func (s Stalls) MachineVerdict(check checker.Result, ttl time.Duration) string {
	if check.Verdict != checker.VerdictUnsafe || check.First == nil {
		return ""
	}
	v := check.First.T
	for _, st := range s.Kept {
		if st.LateNS >= int64(ttl/2) && st.Start() < v && st.AtNS >= v-int64(ttl) {
			return fmt.Sprintf("this verdict may be the machine's: the harness was not scheduled for %v from %s to %s, within one TTL before the first violation at %s (%s); the verdict stands",
				ms(st.LateNS), sec(st.Start()), sec(st.AtNS), sec(v), MachineRule)
		}
	}
	// The largest stall is known with its time even when it was not
	// kept: the same rule, on it.
	if s.NotKept > 0 && s.MaxNS >= int64(ttl/2) && s.MaxAtNS-s.MaxNS < v && s.MaxAtNS >= v-int64(ttl) {
		return fmt.Sprintf("this verdict may be the machine's: the harness was not scheduled for %v until %s, within one TTL before the first violation at %s (%s; %d stalls over TTL/4 were not kept with their times); the verdict stands",
			ms(s.MaxNS), sec(s.MaxAtNS), sec(v), MachineRule, s.NotKept)
	}
	return ""
}

// String is the summary's stalls: line.
func (s Stalls) String() string {
	if s.Wakeups == 0 {
		return "none measured"
	}
	return fmt.Sprintf("largest %v at %s; %d of %d wake-ups later than TTL/4 = %v (measured every %v on the harness's own goroutine: a stall of a driver or a server alone is not seen)",
		ms(s.MaxNS), sec(s.MaxAtNS), s.Over, s.Wakeups, ms(s.OverNS), time.Duration(s.PeriodNS))
}

// Fields are the stall's fields of a real run's --json object.
func (s Stalls) Fields(check checker.Result, ttl time.Duration) map[string]any {
	m := map[string]any{
		"stall_max_ms":        float64(s.MaxNS) / 1e6,
		"stall_max_at_ms":     float64(s.MaxAtNS) / 1e6,
		"stalls_over_ttl_4":   s.Over,
		"stall_wakeups":       s.Wakeups,
		"stall_period_ms":     float64(s.PeriodNS) / 1e6,
		"stalls":              s,
		"machine_verdict":     s.MachineVerdict(check, ttl),
		"machine_verdict_why": MachineRule,
	}
	if m["machine_verdict"] == "" {
		delete(m, "machine_verdict")
		delete(m, "machine_verdict_why")
	}
	return m
}

func ms(ns int64) time.Duration { return time.Duration(ns).Round(100 * time.Microsecond) }

func sec(ns int64) string { return fmt.Sprintf("%.3f s", float64(ns)/1e9) }

// MachineVerdict is the run's label (Stalls.MachineVerdict): "" unless its
// unsafe verdict may be the machine's.
func (jd *Judged) MachineVerdict() string {
	return jd.Info.Stalls.MachineVerdict(jd.Check, jd.Real.TTL)
}

// JSONFields are the real arm's own fields of the run's --json object:
// the stall detector's, and trace_cut when its trace was cut.
func (jd *Judged) JSONFields() map[string]any {
	m := jd.Info.Stalls.Fields(jd.Check, jd.Real.TTL)
	m["fault_reach"] = jd.FaultReach() // reach.go
	if u := jd.Untested(); u != "" {
		m["untested"] = u // effects.go: a safe run no fault of which bit
	}
	if n := jd.Judged.Outcome().ClockUnreached; n > 0 {
		m["clock_unreached"] = n // clients whose clock was set wrong and never read (a cell's untested rule)
	}
	if jd.TraceCut != nil {
		m["trace_cut"] = jd.TraceCut.String()
	}
	if len(jd.Info.Drivers) > 0 {
		m["driver_stderr"] = jd.Info.Drivers // driver_stderr.go
	}
	return m
}

// writeStalls writes the summary's stalls: line, and the label when the
// verdict may be the machine's.
func (jd *Judged) writeStalls(line func(key, format string, a ...any)) {
	line("stalls", "%s", jd.Info.Stalls)
	if mv := jd.MachineVerdict(); mv != "" {
		line("machine", "%s", mv)
	}
}
