package catalogue_test

import (
	"testing"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// TestMoreLibs runs the go-zero and gocron adapters (libraries unmodified)
// in the world without faults: acquisitions succeed, and a seed run twice
// gives the same trace.
func TestMoreLibs(t *testing.T) {
	for _, id := range []string{"go-zero", "gocron"} {
		t.Run(id, func(t *testing.T) {
			if info, _ := catalogue.Get(id); info.Unavailable != "" {
				t.Skip(info.Unavailable)
			}
			for seed := uint64(1); seed <= 3; seed++ {
				a := runNoFaults(t, id, seed)
				acquired := 0
				for _, ev := range a.History {
					if ev.Op == event.OpAcquire && ev.Kind == event.KindOK {
						acquired++
						if ev.Detail == "" {
							t.Errorf("seed %d: acquisition without a value: %+v", seed, ev)
						}
					}
				}
				if acquired == 0 {
					t.Fatalf("seed %d: no acquisition succeeded", seed)
				}
				b := runNoFaults(t, id, seed)
				if a.TraceSHA256 != b.TraceSHA256 {
					t.Fatalf("seed %d: trace hashes differ: %s vs %s", seed, a.TraceSHA256, b.TraceSHA256)
				}
				t.Logf("seed %d: %d acquisitions, %d events, trace %s", seed, acquired, a.TraceEvents, a.TraceSHA256[:12])
			}
		})
	}
}

func runNoFaults(t *testing.T, id string, seed uint64) *sim.Result {
	t.Helper()
	cfg, err := scenarios.Build("no-faults", id, seed, scenarios.Params{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.TestBubble(t), cfg)
	if err != nil {
		t.Fatalf("%s seed %d: %v", id, seed, err)
	}
	return res
}
