package parity

import (
	"bytes"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
)

// TestMachineMarks: a cell with unsafe runs the stall detector labelled
// is marked in both tables, with its seeds and the footnote; a cell
// without is not, and its verdict is left as it was.
func TestMachineMarks(t *testing.T) {
	var maxMS float64
	var seeds []uint64
	noteStall(&maxMS, &seeds, 3, 120, "")
	noteStall(&maxMS, &seeds, 7, 466, "this verdict may be the machine's: ...")
	noteStall(&maxMS, &seeds, 9, 20, "")
	if maxMS != 466 || len(seeds) != 1 || seeds[0] != 7 {
		t.Fatalf("largest %v, seeds %v; want 466 and [7]", maxMS, seeds)
	}
	r := &Result{TTLNS: 5e8, Cells: []CellResult{
		{Scenario: "no-faults", Lock: "set-nx-cad", SimRuns: 10, SimVerdict: "safe", RealRuns: 20, RealUnsafe: 1, RealVerdict: "unsafe", MachineSeeds: seeds, RealStallMaxMS: maxMS},
		{Scenario: "no-faults", Lock: "fencing", SimRuns: 10, SimVerdict: "safe", RealRuns: 20, RealVerdict: "safe", Agree: true},
	}}
	var b bytes.Buffer
	r.WriteTable(&b)
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[1], "1/20 unsafe M") || !strings.Contains(lines[1], "machine? seeds 7") {
		t.Errorf("the labelled cell's row %q: want the mark and its seed", lines[1])
	}
	if strings.Contains(lines[2], " M ") || strings.Contains(lines[2], "machine?") {
		t.Errorf("an unlabelled cell's row is marked: %q", lines[2])
	}
	if !strings.Contains(b.String(), "\nM: some unsafe runs of the cell may be the machine's") {
		t.Errorf("no footnote under the table:\n%s", b.String())
	}
	d := &DriversResult{TTLNS: 5e8, Arms: []Arm{{Name: control, Driver: "python-set-nx-cad"}}, Cells: []DriverCell{
		{Scenario: "no-faults", Arm: control, Runs: 20, Unsafe: 1, Verdict: "unsafe", Expected: "safe", MachineSeeds: seeds, StallMaxMS: maxMS, Verdicts: map[checker.Verdict]int{"unsafe": 1, "safe": 19}},
	}}
	b.Reset()
	d.WriteTable(&b)
	if !strings.Contains(b.String(), "1/20 unsafe [safe] ! M") || !strings.Contains(b.String(), "no-faults × "+control+": machine? seeds 7 (largest stall 466 ms)") {
		t.Errorf("the drivers table does not mark the cell:\n%s", b.String())
	}
}

// TestStallOf: a child run's stall and label are read from its --json.
func TestStallOf(t *testing.T) {
	ms, m := stallOf([]byte(`{"verdict":"unsafe","stall_max_ms":440.5,"machine_verdict":"this verdict may be the machine's: x"}`))
	if ms != 440.5 || m != "this verdict may be the machine's: x" {
		t.Errorf("got %v %q", ms, m)
	}
	if ms, m := stallOf([]byte(`{"verdict":"safe"}`)); ms != 0 || m != "" {
		t.Errorf("a run without the fields: %v %q", ms, m)
	}
}
