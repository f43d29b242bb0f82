package run

import (
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// Outcome is what is kept of one judged run, computed once here
// (OutcomeOf) and carried as it is by the sweep's results lines (the
// fields after the job's identity, in that order), the result store and
// the report's cells, which count outcomes in a Tally.
type Outcome struct {
	Verdict             checker.Verdict `json:"verdict"`
	Class               checker.Class   `json:"class,omitempty"` // an unsafe run's class
	Claim               string          `json:"claim"`
	LeaseOverlaps       int             `json:"lease_overlaps"`
	ResourceViolations  int             `json:"resource_violations"`
	Porcupine           string          `json:"porcupine"`
	OwnershipViolations int             `json:"ownership_violations"`
	StaleSections       int             `json:"stale_sections"`
	StaleAccepted       int             `json:"stale_accepted"`
	FencedRejections    int             `json:"fenced_rejections"`
	Starved             int             `json:"starved"` // clients that made no progress after the heal (fairness)
	TraceSHA256         string          `json:"trace_sha256"`
	// Error is set when the simulator could not finish the run (an event
	// budget): the verdict is then unknown unless what ran was unsafe.
	Error string `json:"error,omitempty"`
	// PauseShort is set when a targeted client pause of the schedule did
	// not run in full inside the safety phase: its client never reached
	// the pause point in time, or the heal (which ends every fault) cut it
	// short. Such a run did not test the pause it was asked to; the pause
	// sweep's rates leave it out.
	PauseShort bool `json:"pause_short,omitempty"`
	// Unfired counts the targeted client pauses that were armed but never
	// fired (run.UnfiredPauses): the lock never reached their point. They
	// took no effect; a cell whose runs have them did not test what its
	// scenario asked for.
	Unfired int `json:"unfired,omitempty"`
	// Story is the first violation told in a sentence (run.Explain), for a
	// run drawn as a timeline (Request.Timeline) only.
	Story string `json:"story,omitempty"`
	// Minimal is the same violation as a minimal history (Minimal), for
	// a run drawn as a timeline only.
	Minimal *checker.MinimalHistory `json:"minimal,omitempty"`
	// Injected, Reached and Bit count the schedule's faults by how far
	// they got (run.Effects); ClockUnreached the clients whose clock was
	// set wrong (by the world or a fault) but never read by their lock.
	Injected       int `json:"faults_injected,omitempty"`
	Reached        int `json:"faults_reached,omitempty"`
	Bit            int `json:"faults_bit,omitempty"`
	ClockUnreached int `json:"clock_unreached,omitempty"`
	// A real run's largest stall of the harness and, when its unsafe
	// verdict may be the machine's, why (internal/realarm/realredis/stall.go); never set
	// by the simulator.
	StallMaxMS float64 `json:"stall_max_ms,omitempty"`
	Machine    string  `json:"machine_verdict,omitempty"`
	// CPU is the CPU time the run took where it ran (internal/sweep's CPUTime: the runner
	// process's user+system time across the judge call). It is measured,
	// not simulated: it never enters a trace, a verdict or a results line
	// (a sweep's results.jsonl stays byte-identical run to run).
	CPU time.Duration `json:"-"`
}

// OutcomeOf summarizes a judged run (nil: none).
func OutcomeOf(j *Judged) Outcome {
	if j == nil {
		return Outcome{Verdict: checker.VerdictUnknown, Porcupine: "skipped"}
	}
	c := j.Check
	o := Outcome{Verdict: c.Verdict, Claim: c.Claim, LeaseOverlaps: c.LeaseOverlaps, ResourceViolations: c.ResourceViolations,
		Porcupine: c.Porcupine, OwnershipViolations: c.OwnershipViolations,
		StaleSections: c.Stale.Sections, StaleAccepted: c.Stale.Accepted, FencedRejections: c.Stale.FencedRejections, Starved: len(c.Liveness.Starved),
		TraceSHA256: j.Result.TraceSHA256,
		PauseShort:  PauseShort(j.History), Unfired: len(UnfiredPauses(j.History))}
	o.Class = c.Class
	if es := Effects(j.History, j.Result, j.Job.Config); es != nil {
		n := Count(es)
		o.Injected, o.Reached, o.Bit = n.Injected, n.Reached, n.Bit
		for _, e := range es {
			if e.Injected && !e.Reached && (e.Fault.Kind == faults.ClockJump || e.Fault.Kind == faults.ClockDrift) && NeverReadClock(j.Result, e.Fault.Targets) {
				o.ClockUnreached++
			}
		}
	}
	for _, cr := range ClockReaches(j.Job.Config, j.Result) {
		if !cr.Reached {
			o.ClockUnreached++
		}
	}
	if j.Err != nil {
		o.Error = firstErrLine(j.Err.Error())
	}
	return o
}

func firstErrLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// PauseShort reports whether some targeted client pause of the schedule
// did not both begin and end inside the safety phase (see
// Outcome.PauseShort).
func PauseShort(h checker.History) bool {
	fired := map[int]int64{} // fault number → when its pause began
	for _, ev := range h.Events {
		if ev.Kind == event.KindPause && ev.Fault > 0 {
			if _, seen := fired[ev.Fault]; !seen {
				fired[ev.Fault] = ev.T
			}
		}
	}
	safetyEnd := h.Heal
	for i, f := range h.Faults {
		if f.Kind != faults.ClientPause || f.At == "" || int64(f.Start) >= safetyEnd {
			continue
		}
		t, ok := fired[i+1]
		if !ok || t+int64(f.Duration) > safetyEnd {
			return true
		}
	}
	return false
}

// Tally counts runs by outcome.
type Tally struct {
	Runs          int
	Unsafe        int
	Liveness      int
	Unknown       int
	Overlap       int // runs with a lease overlap
	Resource      int // runs with a resource violation
	Ownership     int // runs with an ownership violation
	Stale         int // runs with a stale section (a holder acted on a dead lease)
	StaleAccepted int // runs in which the storage accepted a stale write
	Fenced        int // runs in which the storage refused an operation
	Starved       int // runs in which a client made no progress after the heal
	Unfired       int // runs in which a targeted pause never fired
	// OwnershipOnly counts the unsafe runs of class ownership (no double
	// hold, the resource intact: checker.ClassOwnership).
	OwnershipOnly int
	// Injected, Reached and Bit sum the runs' faults by how far they got;
	// NoBite counts runs that injected faults none of which bit;
	// ClockUnreached runs with a client clock set wrong that the lock
	// never read (a library: one bubble has one clock).
	Injected, Reached, Bit int
	NoBite                 int
	ClockUnreached         int
	FirstUnsafe            uint64
	HasUnsafe              bool
	// CPU sums the runs' measured CPU time (Outcome.CPU).
	CPU time.Duration
}

// Add counts one run of the given seed.
func (t *Tally) Add(o Outcome, seed uint64) {
	t.Runs++
	t.CPU += o.CPU
	if o.StaleSections > 0 {
		t.Stale++
	}
	if o.StaleAccepted > 0 {
		t.StaleAccepted++
	}
	if o.FencedRejections > 0 {
		t.Fenced++
	}
	if o.Starved > 0 {
		t.Starved++
	}
	if o.Unfired > 0 {
		t.Unfired++
	}
	if o.Class == checker.ClassOwnership {
		t.OwnershipOnly++
	}
	t.Injected += o.Injected
	t.Reached += o.Reached
	t.Bit += o.Bit
	if o.Injected > 0 && o.Bit == 0 {
		t.NoBite++
	}
	if o.ClockUnreached > 0 {
		t.ClockUnreached++
	}
	switch o.Verdict {
	case checker.VerdictUnsafe:
		t.Unsafe++
		if !t.HasUnsafe || seed < t.FirstUnsafe {
			t.FirstUnsafe, t.HasUnsafe = seed, true
		}
	case checker.VerdictLiveness:
		t.Liveness++
	case checker.VerdictUnknown:
		t.Unknown++
	}
	if o.LeaseOverlaps > 0 {
		t.Overlap++
	}
	if o.ResourceViolations > 0 {
		t.Resource++
	}
	if o.OwnershipViolations > 0 {
		t.Ownership++
	}
}

// Untested says why a group of runs (a report's cell, or one run) does
// not test its scenario ("" when it does): in every run a client clock
// was wrong and the lock never read it, and no fault bit (a library
// reads time.Now: slow-client-clocks × a library); or faults were
// injected and none bit in any run. Only a safe verdict is drawn
// untested (reports.CellResult.Untested, the real arm's summary).
func Untested(runs, clockUnreachedRuns, injected, bit int) string {
	switch {
	case runs > 0 && clockUnreachedRuns == runs && bit == 0:
		return "client clock not reached"
	case injected > 0 && bit == 0:
		return "no fault bit"
	}
	return ""
}

// Untested is Untested of the group's runs.
func (t *Tally) Untested() string { return Untested(t.Runs, t.ClockUnreached, t.Injected, t.Bit) }

// Verdict is the group's verdict by the cell rule (checker.CellVerdict);
// the counts are always shown beside it.
func (t *Tally) Verdict() checker.Verdict {
	return checker.CellVerdict(checker.VerdictCounts{Safe: t.Runs - t.Unsafe - t.Liveness - t.Unknown, Unsafe: t.Unsafe, Liveness: t.Liveness, Unknown: t.Unknown})
}
