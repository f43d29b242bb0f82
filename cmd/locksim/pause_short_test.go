package main

import (
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

// pauseShort: a targeted pause counts as run in full only when its client
// paused at the point and the pause ended inside the safety phase.
func TestPauseShort(t *testing.T) {
	f := faults.Fault{Kind: faults.ClientPause, Start: time.Second, Duration: 3 * time.Second, Targets: []string{"c0"}, At: pausePoint}
	cfg := sim.Config{Duration: 10 * time.Second, Faults: []faults.Fault{f}}
	pause := func(at time.Duration) []sim.Event {
		return []sim.Event{{T: int64(at), Proc: "c0", Kind: "pause", Detail: f.String()}}
	}
	for _, c := range []struct {
		name    string
		history []sim.Event
		want    bool
	}{
		{"in full", pause(2 * time.Second), false},
		{"ends exactly at the heal", pause(7 * time.Second), false},
		{"cut by the heal", pause(8 * time.Second), true},
		{"never reached the point", nil, true},
		{"another pause's event", []sim.Event{{T: int64(2 * time.Second), Proc: "c0", Kind: "pause", Detail: "client-pause@0s+1s c0 at acquiring"}}, true},
	} {
		if got := pauseShort(cfg, c.history); got != c.want {
			t.Errorf("%s: pauseShort = %v, want %v", c.name, got, c.want)
		}
	}
	untargeted := sim.Config{Duration: 10 * time.Second, Faults: []faults.Fault{{Kind: faults.ClientPause, Start: time.Second, Duration: 30 * time.Second, Targets: []string{"c0"}}}}
	if pauseShort(untargeted, nil) {
		t.Error("a pause by time (no point) is not the sweep's targeted pause")
	}
}

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
				if r.point == nil || r.rs.pause != pauseSweepValues[len(pauseSweepValues)-1] || r.rs.seed > 5 {
					continue
				}
				if r.rs.params.Clients != pauseSweepClients {
					t.Fatalf("%s: %d clients", lock, r.rs.params.Clients)
				}
				j, simErr, err := r.rs.run(bb)
				if err != nil || simErr != nil {
					t.Fatal(err, simErr)
				}
				ran++
				if o := outcomeOf(j, nil); o.PauseShort {
					t.Errorf("%s seed %d: c0 did not pause in full", lock, r.rs.seed)
				}
			}
		}
		return 0
	})
	if want := 5 * len(pauseSweepLocks); ran != want {
		t.Fatalf("ran %d runs, want %d", ran, want)
	}
}
