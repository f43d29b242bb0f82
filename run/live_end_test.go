package run

import (
	"testing"
	"time"

	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// --end-when-live ends the liveness phase once every client has acquired
// after the heal: the run stops there, says when, keeps its verdict, and
// is deterministic; without it nothing changes. It applies only where the
// rest of the phase decides nothing: not to a design that promises
// fairness, nor when fairness is asked, nor under an unavailability
// bound, nor to a design whose progress is a write (Fencing "version").
func TestEndWhenLive(t *testing.T) {
	b := sim.TestBubble(t)
	params := scenarios.Params{Duration: 10 * time.Second, Liveness: 30 * time.Second}
	ended := 0
	for seed := uint64(1); seed <= 3; seed++ {
		full := Spec{Scenario: "default", Lock: "set-nx-cad", Seed: seed, Params: params}
		early := full
		early.EndWhenLive = true
		jf := mustRun(t, b, full)
		je := mustRun(t, b, early)
		again := mustRun(t, b, early)
		if jf.Result.LiveAt != 0 || jf.Result.Stats.VirtualNS != int64(40*time.Second) {
			t.Fatalf("seed %d without the flag: live at %d, virtual %v", seed, jf.Result.LiveAt, time.Duration(jf.Result.Stats.VirtualNS))
		}
		if je.Result.TraceSHA256 != again.Result.TraceSHA256 {
			t.Errorf("seed %d: the early end is not deterministic", seed)
		}
		if je.Verdict() != jf.Verdict() {
			t.Errorf("seed %d: verdict %s with the early end, %s without", seed, je.Verdict(), jf.Verdict())
		}
		at := je.Result.LiveAt
		if at == 0 {
			continue // liveness not shown: the phase ran to its end
		}
		ended++
		if at <= int64(10*time.Second) || at >= int64(40*time.Second) || je.Result.Stats.VirtualNS < at || je.Result.Stats.VirtualNS >= int64(40*time.Second) {
			t.Errorf("seed %d: live at %v, virtual %v; want inside the liveness phase (10s, 40s)", seed, time.Duration(at), time.Duration(je.Result.Stats.VirtualNS))
		}
		if r := je.Report(""); r.LivenessShownNS != at {
			t.Errorf("seed %d: the report's liveness_shown_ns %d, want %d", seed, r.LivenessShownNS, at)
		}
		// Every client acquired after the heal and before the end.
		for _, c := range je.History.Clients {
			seen := false
			for _, e := range je.History.Events {
				if e.Proc == c && e.T >= je.History.Heal && e.Op == "acquire" && e.Kind == "ok" {
					seen = true
					break
				}
			}
			if !seen {
				t.Errorf("seed %d: ended at %v but %s never acquired after the heal", seed, time.Duration(at), c)
			}
		}
		if je.Check.Liveness.Failure || len(je.Check.Liveness.Starved) > 0 {
			t.Errorf("seed %d: ended early yet liveness says %v", seed, je.Check.Liveness.Reasons)
		}
	}
	if ended == 0 {
		t.Fatal("no run of default × set-nx-cad ended early: the test tests nothing")
	}
	for _, c := range []struct {
		spec Spec
		why  string
	}{
		{Spec{Scenario: "default", Lock: "redisson-fair", Seed: 1, EndWhenLive: true}, "a design that promises fairness"},
		{Spec{Scenario: "default", Lock: "set-nx-cad", Seed: 1, EndWhenLive: true, Fairness: true}, "fairness asked"},
		{Spec{Scenario: "redlock-2-of-5", Lock: "redlock", Seed: 1, EndWhenLive: true}, "an unavailability bound"},
		{Spec{Scenario: "default", Lock: "version-cas", Seed: 1, EndWhenLive: true}, "progress is a write"},
	} {
		j, err := c.spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		if j.Config.EndWhenLive {
			t.Errorf("%s × %s: the early end applies to %s", c.spec.Scenario, c.spec.Lock, c.why)
		}
	}
	if j, _ := (Spec{Scenario: "default", Lock: "set-nx-cad", Seed: 1, EndWhenLive: true}).Build(); !j.Config.EndWhenLive {
		t.Error("default × set-nx-cad: the early end does not apply")
	}
	if got := (Spec{Scenario: "default", Lock: "set-nx-cad", Seed: 1, EndWhenLive: true}).Repro(); got != "locksim run --scenario default --lock set-nx-cad --seed 1 --end-when-live" {
		t.Errorf("repro %q", got)
	}
}

func mustRun(t *testing.T, b sim.Bubble, s Spec) *Judged {
	t.Helper()
	j, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	jd, err := j.Run(b)
	if err != nil {
		t.Fatal(err)
	}
	if jd.Err != nil {
		t.Fatalf("%s: %v", s.Repro(), jd.Err)
	}
	return jd
}
