package sweep_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/sim"
)

func tinySpec(seeds int) sweep.Spec {
	return sweep.Spec{Format: 1, Scenario: "no-faults", Locks: []string{"set-nx-cad"}, Seeds: seeds, FirstSeed: 1,
		Param: "pause", Values: []float64{0, 1.5}, Clients: 2, DurationNS: 20e9, LivenessNS: 2e9, Shards: 1}
}

// TestPrepareTakesTheLockFirst: Prepare checks and
// writes sweep.json under the folder's lock, so a sweep that holds the
// folder (or took it an instant earlier, its spec not yet written) never
// finds another's spec written beside its results; and Run checks the spec
// again under the lock, since the folder may change hands between the two.
func TestPrepareTakesTheLockFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sw")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := sweep.LockDir(dir) // another sweep, between its lock and its spec
	if err != nil {
		t.Fatal(err)
	}
	err = sweep.Prepare(dir, tinySpec(4))
	var ie *sweep.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "in use by another locksim sweep") {
		t.Errorf("Prepare into a locked folder: %v; want the folder in use", err)
	}
	if _, err := os.Stat(filepath.Join(dir, sweep.SpecFile)); !os.IsNotExist(err) {
		t.Errorf("Prepare wrote %s into a folder another sweep holds (%v)", sweep.SpecFile, err)
	}
	unlock()

	// Prepared for one sweep; before it runs, another takes the folder.
	if err := sweep.Prepare(dir, tinySpec(4)); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := sweep.Prepare(other, tinySpec(5)); err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile(filepath.Join(other, sweep.SpecFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sweep.SpecFile), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	sw := sweep.Sweep{Spec: tinySpec(4), Dir: dir, Workers: 1}
	// The bubble is never used: Run refuses before any job.
	st, err := sw.Run(context.Background(), sim.Bubble(func(func()) { t.Error("a job ran") }))
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "holds a different sweep") || st.Done != 0 {
		t.Errorf("Run into a folder holding another sweep: %+v, %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, sweep.ResultsFile)); !os.IsNotExist(err) {
		t.Errorf("Run wrote results beside another sweep's spec (%v)", err)
	}
}

// TestNoRunsIsNotZeroPercent: a sweep point whose runs
// were all left out (the pause did not fit) printed "0/0 = 0.0%" and was
// drawn at 0%. Its row says "0/0 = n/a", with no percentage anywhere, and
// the charts are drawn (with a gap there: internal/charts).
func TestNoRunsIsNotZeroPercent(t *testing.T) {
	for _, values := range [][]float64{{0, 1.5}, {1.5}} {
		spec := tinySpec(2)
		spec.Values = values
		var lines []sweep.Line
		for i := 0; i < spec.Total(); i++ {
			j := spec.Job(i)
			lines = append(lines, spec.Line(j, sweep.Outcome{Verdict: "safe", PauseShort: j.Value == 1.5}))
		}
		var table strings.Builder
		dir := t.TempDir()
		if err := sweep.Finish(dir, &spec, lines, &table, true); err != nil {
			t.Fatal(err)
		}
		for _, row := range strings.Split(table.String(), "\n") {
			if strings.HasPrefix(row, "1.5 ") && (!strings.Contains(row, " 0/0 = n/a ") || strings.Contains(row, "%")) {
				t.Errorf("values %v: the row of no runs reads %q", values, row)
			}
		}
		if !strings.Contains(table.String(), "charts: ") {
			t.Errorf("values %v: no charts:\n%s", values, table.String())
		}
	}
}
