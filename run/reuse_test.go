package run_test

import (
	"reflect"
	"testing"

	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// TestReuseChangesNothing runs a sequence of jobs twice, once each on
// fresh memory and once through one Reuse (each run recycled into the
// next, a larger history after a smaller one and the other way round),
// and compares every judged result: the trace hash, the verdict and its
// reasons, and both histories event by event. It also checks that the
// memory was reused: a recycled run's history lives in the buffer the
// previous run left.
func TestReuseChangesNothing(t *testing.T) {
	specs := []run.Spec{
		{Scenario: "pause-after-check", Lock: "set-nx-cad", Seed: 1},
		{Scenario: "pause-during-acquire", Lock: "redisson-multilock", Seed: 2},
		{Scenario: "default", Lock: "redlock", Seed: 3},
		{Scenario: "pause-after-check", Lock: "fencing", Seed: 4},
	}
	if testing.Short() {
		specs = []run.Spec{specs[0], specs[3], specs[0]}
	}
	sim.InTest(func(tt *testing.T) {
		b := sim.TestBubble(tt)
		r := new(run.Reuse)
		var lastSim *sim.Event // the buffer recycled last, and its capacity
		lastCap := 0
		for _, spec := range specs {
			job, err := spec.Build()
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := job.Run(b)
			if err != nil {
				t.Fatal(err)
			}
			job2, _ := spec.Build()
			got, err := job2.RunReusing(b, r)
			if err != nil {
				t.Fatal(err)
			}
			if got.Result.TraceSHA256 != fresh.Result.TraceSHA256 {
				t.Errorf("%s: trace %s reusing memory, %s on fresh memory", spec.Repro(), got.Result.TraceSHA256, fresh.Result.TraceSHA256)
			}
			if got.Verdict() != fresh.Verdict() || !reflect.DeepEqual(got.Check.Reasons, fresh.Check.Reasons) {
				t.Errorf("%s: %s %q reusing memory, %s %q on fresh memory", spec.Repro(), got.Verdict(), got.Check.Reasons, fresh.Verdict(), fresh.Check.Reasons)
			}
			if !reflect.DeepEqual(got.Result.History, fresh.Result.History) || !reflect.DeepEqual(got.History.Events, fresh.History.Events) {
				t.Errorf("%s: the histories differ reusing memory", spec.Repro())
			}
			if len(got.Result.History) == 0 {
				t.Fatalf("%s: an empty history", spec.Repro())
			}
			if lastSim != nil && len(got.Result.History) <= lastCap && &got.Result.History[0] != lastSim {
				t.Errorf("%s: the history (%d events) did not reuse the buffer of %d the previous run recycled", spec.Repro(), len(got.Result.History), lastCap)
			}
			if c := cap(got.Result.History); c > lastCap && c <= 1<<18 {
				lastSim, lastCap = &got.Result.History[0], c
			}
			r.Recycle(got)
			if got.Result.History != nil || got.History.Events != nil {
				t.Errorf("%s: Recycle left the judged run its histories", spec.Repro())
			}
		}
	})
}
