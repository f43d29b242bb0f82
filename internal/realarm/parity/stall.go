package parity

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/locksim/locksim/internal/realarm/realredis"
)

// The stall detector's marks in the parity tables (realredis/stall.go):
// each cell carries the largest stall of the harness in its real runs,
// and the seeds of its unsafe runs whose verdict may be the machine's
// (realredis.MachineRule). A mark labels a verdict; it never changes one.

// MachineMark follows a cell's real rate in the tables when some of its
// unsafe runs may be the machine's.
const MachineMark = " M"

// machineFootnote explains MachineMark under a table.
func machineFootnote(w io.Writer) {
	fmt.Fprintf(w, "\nM: some unsafe runs of the cell may be the machine's: the harness's stall detector saw %s (the seeds are in the JSON, machine_seeds; the verdicts stand).\n", realredis.MachineRule)
}

// noteStall notes one real run's stall (ms, its largest) and label
// (machine: "" or why its verdict may be the machine's).
func noteStall(maxMS *float64, seeds *[]uint64, seed uint64, stallMS float64, machine string) {
	*maxMS = max(*maxMS, stallMS)
	if machine != "" {
		*seeds = append(*seeds, seed)
	}
}

// machineSeeds names the seeds in a table's note ("" when none).
func machineSeeds(seeds []uint64) string {
	if len(seeds) == 0 {
		return ""
	}
	s := make([]string, len(seeds))
	for i, x := range seeds {
		s[i] = fmt.Sprint(x)
	}
	return "machine? seeds " + strings.Join(s, ",")
}

// machineMark is MachineMark when some of the cell's unsafe runs may be
// the machine's.
func (c *DriverCell) machineMark() string {
	if len(c.MachineSeeds) == 0 {
		return ""
	}
	return MachineMark
}

// writeMachine lists, under the drivers table, the cells some of whose
// unsafe runs may be the machine's, with their seeds and the footnote.
func (r *DriversResult) writeMachine(w io.Writer) {
	marked := false
	for _, c := range r.Cells {
		if len(c.MachineSeeds) > 0 {
			fmt.Fprintf(w, "\n%s × %s: %s (largest stall %.0f ms)", c.Scenario, c.Arm, machineSeeds(c.MachineSeeds), c.StallMaxMS)
			marked = true
		}
	}
	if marked {
		machineFootnote(w)
	}
}

// stallOf reads a child run's stall and label from its --json object.
func stallOf(out []byte) (stallMS float64, machine string) {
	var r struct {
		StallMS float64 `json:"stall_max_ms"`
		Machine string  `json:"machine_verdict"`
	}
	_ = json.Unmarshal(out, &r) // its verdict was read from the same bytes
	return r.StallMS, r.Machine
}
