package sweep_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/sim"
)

// A sweep from Go: Kleppmann's pause before the protected write, at 0 and
// 1.5 TTLs, on set-nx-cad and fencing, 4 seeds each, into a results
// folder; the rate table is printed when the sweep is complete. Running
// it again into the same folder would resume (here: find every job done).
func Example() {
	dir, _ := os.MkdirTemp("", "sweep-example-")
	defer os.RemoveAll(dir)
	spec := sweep.Spec{Format: 1, Scenario: "no-faults", Locks: []string{"set-nx-cad", "fencing"}, Seeds: 4, FirstSeed: 1,
		Param: "pause", Values: []float64{0, 1.5}, Clients: 2, DurationNS: 20e9, LivenessNS: 2e9, Shards: 1}
	if err := sweep.Prepare(dir, spec); err != nil {
		fmt.Println(err)
		return
	}
	var table strings.Builder
	sim.InTest(func(t *testing.T) {
		sw := sweep.Sweep{Spec: spec, Dir: dir, Workers: 1, Summary: &table}
		st, err := sw.Run(context.Background(), sim.TestBubble(t))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d of %d jobs\n", st.Done, st.Mine)
	})
	for _, l := range strings.Split(table.String(), "\n") {
		if f := strings.Fields(l); len(f) > 3 && !strings.HasPrefix(l, "results:") {
			fmt.Println(strings.Join(f[:4], " "))
		}
	}
	lines, _ := sweep.ReadLines(filepath.Join(dir, sweep.ResultsFile))
	fmt.Println(len(lines), "lines; first:", lines[0].Lock, lines[0].Seed, lines[0].Verdict)
	// Output:
	// 16 of 16 jobs
	// pause lock runs unsafe
	// 0 set-nx-cad 4 0/4
	// 0 fencing 4 0/4
	// 1.5 set-nx-cad 4 4/4
	// 1.5 fencing 4 0/4
	// 16 lines; first: set-nx-cad 1 safe
}
