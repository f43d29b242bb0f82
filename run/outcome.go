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

// OutcomeOf summarizes a judged run (nil: none): j.Outcome().
func OutcomeOf(j *Judged) Outcome {
	if j == nil {
		return Outcome{Verdict: checker.VerdictUnknown, Porcupine: "skipped"}
	}
	return j.Outcome()
}

// outcomeOf computes the outcome of the judged run j (Judged.Outcome).
func outcomeOf(j *Judged) Outcome {
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
		o.Error = FirstLine(j.Err.Error())
	}
	return o
}

// FirstLine is s up to its first newline: an error as one line of a
// results file or a worker's reply.
func FirstLine(s string) string {
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
