package sweep

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// A run's measured CPU is in its outcome but never in its JSON (a sweep's
// results lines and a worker's outcome object), only in the worker's
// reply beside it.
func TestOutcomeCPU(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no getrusage")
	}
	r := InProcess{Bubble: sim.TestBubble(t), Reuse: new(run.Reuse)}
	o, err := r.Run(Request{Spec: run.Spec{Scenario: "no-faults", Lock: "set-nx-cad", Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if o.CPU <= 0 {
		t.Fatalf("CPU %v: not measured", o.CPU)
	}
	b, _ := json.Marshal(o)
	if strings.Contains(string(b), "cpu") {
		t.Fatalf("the outcome's JSON carries its CPU: %s", b)
	}
	rep, _ := json.Marshal(reply{Outcome: o, CPUNS: int64(o.CPU)})
	var back reply
	if err := json.Unmarshal(rep, &back); err != nil || back.CPUNS != int64(o.CPU) {
		t.Fatalf("the reply lost the CPU: %s", rep)
	}
	var tl Tally
	tl.Add(o, 1)
	tl.Add(o, 2)
	if tl.CPU != 2*o.CPU {
		t.Fatalf("Tally.CPU %v, want %v", tl.CPU, 2*o.CPU)
	}
}
