package run

import (
	"encoding/json"
	"testing"

	"github.com/locksim/locksim/faults"
)

// A spec travels to a worker process as JSON: an empty fault schedule
// (no faults at all) must stay apart from none (the scenario's own
// faults), and nothing else may change on the way.
func TestSpecJSONKeepsNoFaults(t *testing.T) {
	step := 2
	for _, s := range []Spec{
		{Scenario: "clock-jump", Lock: "redlock", Seed: 3},
		{Scenario: "clock-jump", Lock: "redlock", Seed: 3, Faults: []faults.Fault{}},
		{Scenario: "drift", Lock: "redlock", Seed: 1, Step: &step, Faults: []faults.Fault{{Kind: faults.ClockJump, Targets: []string{"n0"}, Jump: 1}}},
	} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var got Spec
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if (got.Faults == nil) != (s.Faults == nil) || len(got.Faults) != len(s.Faults) || got.Repro() != s.Repro() {
			t.Errorf("%s: decoded faults %v (nil %v), repro %q; want %v (nil %v), %q", b, got.Faults, got.Faults == nil, got.Repro(), s.Faults, s.Faults == nil, s.Repro())
		}
	}
}
