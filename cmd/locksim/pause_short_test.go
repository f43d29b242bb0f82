package main

import (
	"testing"

	"github.com/locksim/locksim/sim"
	"github.com/locksim/locksim/sweep"
)

// The report's pause sweep leaves c0 time to reach its write: over its
// first seeds, every run at the longest pause paused in full.
func TestReportPauseSweepPausesInFull(t *testing.T) {
	b := testHost(t)
	ran := 0
	b(func(bb sim.Bubble) int {
		for _, lock := range pauseSweepLocks {
			f := &reportFlags{out: t.TempDir(), scenarios: pauseSweepScenario, locks: lock, quick: true}
			p, err := f.plan()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.runs {
				sp := r.rs.Spec
				if r.point == nil || sp.Pause == nil || *sp.Pause != pauseSweepValues[len(pauseSweepValues)-1] || sp.Seed > 5 {
					continue
				}
				if sp.Params.Clients != pauseSweepClients {
					t.Fatalf("%s: %d clients", lock, sp.Params.Clients)
				}
				j, err := sweep.Judge(bb, sp)
				if err == nil && j.Err != nil {
					err = j.Err
				}
				if err != nil {
					t.Fatal(err)
				}
				ran++
				if o := sweep.OutcomeOf(j); o.PauseShort {
					t.Errorf("%s seed %d: c0 did not pause in full", lock, sp.Seed)
				}
			}
		}
		return 0
	})
	if want := 5 * len(pauseSweepLocks); ran != want {
		t.Fatalf("ran %d runs, want %d", ran, want)
	}
}
