package reports

import (
	"testing"

	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// The report's pause sweep leaves c0 time to reach its write: over its
// first seeds, every run at the longest pause paused in full.
func TestPauseSweepPausesInFull(t *testing.T) {
	b := sim.TestBubble(t)
	ran := 0
	for _, lock := range pauseSweepLocks {
		p, err := NewPlan(Options{Scenarios: []string{pauseSweepScenario}, Locks: []string{lock}, Quick: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.jobs {
			sp := r.req.Spec
			if r.point == nil || sp.Pause == nil || *sp.Pause != pauseSweepValues[len(pauseSweepValues)-1] || sp.Seed > 5 {
				continue
			}
			if sp.Params.Clients != pauseSweepClients {
				t.Fatalf("%s: %d clients", lock, sp.Params.Clients)
			}
			j, err := sweep.Judge(b, sp)
			if err == nil && j.Err != nil {
				err = j.Err
			}
			if err != nil {
				t.Fatal(err)
			}
			ran++
			if o := run.OutcomeOf(j); o.PauseShort {
				t.Errorf("%s seed %d: c0 did not pause in full", lock, sp.Seed)
			}
		}
	}
	if want := 5 * len(pauseSweepLocks); ran != want {
		t.Fatalf("ran %d runs, want %d", ran, want)
	}
}
