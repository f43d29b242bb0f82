package run_test

import (
	"fmt"
	"testing"

	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// Kleppmann's pause, measured: the holder stops right after its lock
// check for 1.5 × the TTL. set-nx-cad (no fencing) loses updates;
// fencing's storage refuses the stale writes. Every run is a Spec, built
// into a Job, run and judged in one call; the same seed always gives the
// same trace hash.
func Example() {
	for _, lock := range []string{"set-nx-cad", "fencing"} {
		spec := run.Spec{Scenario: "pause-after-check", Lock: lock, Seed: 1}
		job, err := spec.Build()
		if err != nil {
			fmt.Println(err)
			return
		}
		sim.InTest(func(t *testing.T) {
			j, err := job.Run(sim.TestBubble(t))
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("%s: %s", lock, j.Verdict())
			if v := j.Check.First; v != nil {
				fmt.Printf(" (%s)", v.Kind)
			}
			fmt.Printf(", trace %.12s\n", j.Result.TraceSHA256)
		})
		fmt.Println("  repro:", spec.Repro())
	}
	// Output:
	// set-nx-cad: unsafe (resource), trace 1861399b3d0d
	//   repro: locksim run --scenario pause-after-check --lock set-nx-cad --seed 1
	// fencing: safe, trace 63e4999f1917
	//   repro: locksim run --scenario pause-after-check --lock fencing --seed 1
}
