package run_test

import (
	"reflect"
	"testing"

	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// TestJudgeIsRepeatable judges one run's result 40 times and demands the
// same reasons and first violation every time. Porcupine lists partial
// linearizations in map order; where the checker says porcupine got stuck
// once depended on it (pause-after-check × set-nx-cad seed 1 has several
// longest partial linearizations: "stuck at c0's section" on one call,
// "c2's" on another).
func TestJudgeIsRepeatable(t *testing.T) {
	spec := run.Spec{Scenario: "pause-after-check", Lock: "set-nx-cad", Seed: 1}
	job, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	var j *run.Judged
	sim.InTest(func(tt *testing.T) {
		j, err = job.Run(sim.TestBubble(tt))
	})
	if err != nil || j == nil {
		t.Fatalf("run: %v", err)
	}
	if j.Check.Porcupine != "illegal" || j.Check.Linearizability.Stuck == nil {
		t.Fatalf("%s: porcupine %s, want illegal with a stuck section (the case this test is about)", spec.Repro(), j.Check.Porcupine)
	}
	for i := range 40 {
		again := job.Judge(j.Result, nil)
		if !reflect.DeepEqual(again.Check.Reasons, j.Check.Reasons) {
			t.Fatalf("judging %s again (%d): %q, first time %q", spec.Repro(), i+1, again.Check.Reasons, j.Check.Reasons)
		}
		if !reflect.DeepEqual(again.Check.First, j.Check.First) {
			t.Fatalf("judging %s again (%d): first violation %+v, first time %+v", spec.Repro(), i+1, again.Check.First, j.Check.First)
		}
	}
}
