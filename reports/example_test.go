package reports_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/sim"
)

// The debate report from Go, cut down to one scenario and three locks at 3
// seeds a cell: plan it, run it, write it into a staged folder and move
// that into place. Every cell's verdict and first unsafe seed come from
// the runs; an unsafe cell also gets its counterexample timeline.
func Example() {
	dir, _ := os.MkdirTemp("", "report-example-")
	defer os.RemoveAll(dir)
	plan, err := reports.NewPlan(reports.Options{Seeds: 3, Scenarios: []string{"pause-after-check"}, Locks: []string{"set-nx-cad", "redlock", "fencing"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := reports.Stage(filepath.Join(dir, "report"), false)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer out.Discard()
	sim.InTest(func(t *testing.T) {
		if err := plan.Run(context.Background(), sim.TestBubble(t), out.Dir(), reports.Exec{Workers: 1}); err != nil {
			t.Fatal(err)
		}
	})
	res, err := plan.Write(out.Dir())
	if err == nil {
		err = out.Commit()
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range res.Cells {
		fmt.Printf("%s × %s: %s, %d/%d unsafe, timeline %q\n", c.Scenario, c.Lock, c.Verdict, c.UnsafeRuns, c.Runs, c.Timeline)
	}
	for _, f := range reports.Owns {
		if _, err := os.Stat(filepath.Join(dir, "report", f)); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// pause-after-check × set-nx-cad: unsafe, 2/3 unsafe, timeline "timelines/pause-after-check--set-nx-cad.png"
	// pause-after-check × redlock: unsafe, 3/3 unsafe, timeline "timelines/pause-after-check--redlock.png"
	// pause-after-check × fencing: safe, 0/3 unsafe, timeline ""
}
