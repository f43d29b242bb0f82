package run

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/locksim/locksim/sim"
)

// TestReportCarriesOutcome: a judged run's outcome is computed once
// (Judged.Outcome gives the same value each call), the report carries it
// and spells its verdict, class, claim, counts and trace hash from it,
// and --json has no member of its own for it.
func TestReportCarriesOutcome(t *testing.T) {
	spec := Spec{Scenario: "pause-after-check", Lock: "set-nx-cad", Seed: 1}
	job, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	jd, err := job.Run(sim.TestBubble(t))
	if err != nil {
		t.Fatal(err)
	}
	o := jd.Outcome()
	if again := jd.Outcome(); again.TraceSHA256 != o.TraceSHA256 || again.Verdict != o.Verdict || again.Injected != o.Injected {
		t.Fatalf("Outcome changed between calls: %+v then %+v", o, again)
	}
	if OutcomeOf(jd).TraceSHA256 != o.TraceSHA256 {
		t.Fatal("OutcomeOf is not Judged.Outcome")
	}
	r := jd.Report(spec.Repro())
	if r.Outcome.TraceSHA256 != o.TraceSHA256 || r.Outcome.Verdict != o.Verdict {
		t.Fatalf("the report carries %+v, want %+v", r.Outcome, o)
	}
	if r.Verdict != o.Verdict || r.Class != o.Class || r.Claim != o.Claim || r.LeaseOverlaps != o.LeaseOverlaps ||
		r.ResourceViolations != o.ResourceViolations || r.Porcupine != o.Porcupine || r.OwnershipViolations != o.OwnershipViolations ||
		r.StaleSections != o.StaleSections || r.StaleAccepted != o.StaleAccepted || r.FencedRejections != o.FencedRejections || r.TraceSHA256 != o.TraceSHA256 {
		t.Errorf("the report's fields differ from its outcome: %+v vs %+v", r, o)
	}
	if o.Verdict == "" || o.TraceSHA256 == "" {
		t.Fatalf("an empty outcome: %+v", o)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"Outcome"`) || strings.Count(string(b), `"verdict":`) != 1 {
		t.Errorf("--json spells the outcome twice: %s", b)
	}
}
