package run

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// TestJudge checks the verdict rules on hand-made histories.
func TestJudge(t *testing.T) {
	info, _ := catalogue.Get("set-nx-cad")
	sec := int64(time.Second)
	cfg := sim.Config{Seed: 9, Clients: 2, Duration: 10 * time.Second, Liveness: 5 * time.Second, Nodes: make([]sim.NodeConfig, 1)}
	job := NewJob("default", info, cfg, checker.Options{})
	repro := "locksim run --scenario default --lock set-nx-cad --seed 9"
	acq := func(t int64, p string, until int64) sim.Event {
		return sim.Event{T: t, Proc: p, Kind: event.KindOK, Op: event.OpAcquire, Until: until}
	}
	rel := func(t int64, p string) sim.Event {
		return sim.Event{T: t, Proc: p, Kind: event.KindCall, Op: event.OpRelease}
	}
	heal := sim.Event{T: 10 * sec, Proc: "world", Kind: event.KindHeal}
	res := func(capped bool, evs ...sim.Event) *sim.Result {
		return &sim.Result{Seed: 9, Stats: sim.Stats{VirtualNS: 15 * sec}, TraceSHA256: strings.Repeat("0", 64), TraceCapped: capped, History: evs}
	}
	cases := []struct {
		name    string
		res     *sim.Result
		runErr  error
		verdict checker.Verdict
	}{
		{"safe", res(false, acq(1*sec, "c0", 0), rel(2*sec, "c0"), acq(3*sec, "c1", 0), rel(4*sec, "c1"), heal, acq(11*sec, "c0", 0), rel(12*sec, "c0"), acq(13*sec, "c1", 0)), nil, checker.VerdictSafe},
		{"overlap", res(false, acq(1*sec, "c0", 0), acq(2*sec, "c1", 0), rel(3*sec, "c0"), rel(4*sec, "c1"), heal, acq(11*sec, "c0", 0)), nil, checker.VerdictUnsafe},
		{"validity ends first", res(false, acq(1*sec, "c0", 2*sec), acq(2*sec, "c1", 0), rel(3*sec, "c0"), rel(4*sec, "c1"), heal, acq(11*sec, "c0", 0), rel(12*sec, "c0"), acq(13*sec, "c1", 0)), nil, checker.VerdictSafe},
		{"no acquire after heal", res(false, acq(1*sec, "c0", 0), rel(2*sec, "c0"), heal), nil, checker.VerdictLiveness},
		{"capped history", res(true, acq(1*sec, "c0", 0), rel(2*sec, "c0")), nil, checker.VerdictUnknown},
		{"incomplete run", res(false, acq(1*sec, "c0", 0)), errors.New("sim: event budget exhausted"), checker.VerdictUnknown},
		{"incomplete but unsafe", res(false, acq(1*sec, "c0", 0), acq(2*sec, "c1", 0)), errors.New("sim: event budget exhausted"), checker.VerdictUnsafe},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := job.Judge(c.res, c.runErr).Report(repro)
			if r.Verdict != c.verdict {
				t.Fatalf("verdict %q (%s), want %q", r.Verdict, r.VerdictReason, c.verdict)
			}
			// The summary's verdict line starts with the verdict (an
			// unsafe run's first reason names its check, not the verdict).
			var sum strings.Builder
			r.WriteSummary(&sum)
			if !regexp.MustCompile(`(?m)^verdict: +` + string(c.verdict) + `(: |$)`).MatchString(sum.String()) {
				t.Errorf("the summary's verdict line does not start with %q:\n%s", c.verdict, sum.String())
			}
			if c.verdict != checker.VerdictUnsafe {
				if r.Counterexample != nil || r.LeaseOverlaps != 0 {
					t.Errorf("counterexample %+v, overlaps %d", r.Counterexample, r.LeaseOverlaps)
				}
				return
			}
			ce := r.Counterexample
			if ce == nil || ce.Repro != repro || ce.Clients != 2 || ce.Faults != 0 {
				t.Fatalf("counterexample %+v", ce)
			}
			o := r.FirstOverlap
			if o == nil || o.A != "c0" || o.B != "c1" || o.StartNS != 2*sec || r.LeaseOverlapNS <= 0 {
				t.Errorf("overlap %+v, total %d", o, r.LeaseOverlapNS)
			}
			if ce.Violation == nil || ce.Violation.Kind != checker.KindLeaseOverlap {
				t.Errorf("violation %+v, want the lease overlap", ce.Violation)
			}
		})
	}
}

// A lock whose factory fails never runs: the run is not judged as if
// nobody could take the lock (liveness) but is unknown, and says which
// client's factory failed and why. TestNoFalseAlarms met this with the
// go-zero stub (a binary built without -tags gozero).
func TestJudgeFactoryError(t *testing.T) {
	info, err := catalogue.Get("set-nx-cad")
	if err != nil {
		t.Fatal(err)
	}
	info.New = func(locks.Env) (locks.Lock, error) { return nil, errors.New("no such node: redis-7") }
	cfg, err := scenarios.World(info, 1, scenarios.Params{Clients: 2, Duration: time.Second, Liveness: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	j, err := runChecked(sim.TestBubble(t), cfg, "factory-error", info, checker.Options{})
	if err == nil || !strings.Contains(err.Error(), "the factory failed for client c0: no such node: redis-7") {
		t.Fatalf("error %v, want the failed factory of c0 named", err)
	}
	if j.Check.Verdict != checker.VerdictUnknown {
		t.Fatalf("verdict %s, want unknown (reasons %q)", j.Check.Verdict, j.Check.Reasons)
	}
}
