package locktest_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/locksim/locksim/locktest"
)

// An armed search is deterministic: a pinned seed draws the same
// schedules and finds the same counterexample (its schedule index, shrunk
// faults, world seed and trace hash) with GOMAXPROCS 1 and 2, and twice
// in a row.
func TestArmedSearchDeterministic(t *testing.T) {
	o := narrowOptions(false, 3)
	f := newNarrowLock(bugReleaseRetryBlindDel, false)
	gen := locktest.Schedules(o)
	var first string
	for _, procs := range []int{1, 2, 1} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			got := ""
			for i := range 50 {
				got += fmt.Sprintln(gen.Example(i))
			}
			out := locktest.Find(t, f, o)
			if out == nil {
				t.Fatal("the search found nothing")
			}
			got += fmt.Sprintf("found at %d: seed %d, %v, %s\n", out.Tried, out.Seed, out.Faults, out.SHA256)
			if first == "" {
				first = got
				t.Logf("found at schedule %d, shrunk to %v", out.Tried, out.Faults)
				return
			}
			if got != first {
				t.Fatalf("differs from the first search:\n%s\nthen\n%s", first, got)
			}
		})
	}
}
