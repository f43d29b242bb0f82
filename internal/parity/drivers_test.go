package parity

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/stats"
)

// TestDriverExpectations: every driver of the table has an expectation,
// with its reason, in every scenario it can run (failover: the Python
// drivers, through Sentinel; node-redlock refuses a Sentinel world), and
// the Go arm's come from the scenario files.
func TestDriverExpectations(t *testing.T) {
	for _, world := range Worlds {
		for _, a := range WorldArms(world) {
			for _, sc := range WorldScenarios(world) {
				e, ok := expectationOf(a, sc, world)
				if sc == "failover" && a.Driver == redlock {
					if ok {
						t.Errorf("%s has an expectation in failover, a Sentinel world it refuses", a.Name)
					}
					continue
				}
				if !ok || (e.Verdict != "safe" && e.Verdict != "unsafe" && e.Verdict != "liveness") || e.Why == "" {
					t.Errorf("%s: %s × %s: expectation %+v (ok %v), want a verdict and why", world, a.Name, sc, e, ok)
				}
			}
		}
	}
}

func driverCell(sc, arm string, unsafe, runs int, verdict string) DriverCell {
	lo, hi := stats.Wilson(unsafe, runs)
	return DriverCell{Scenario: sc, Arm: arm, Runs: runs, Unsafe: unsafe, Verdict: verdict, Verdicts: map[string]int{verdict: runs}, CI: [2]float64{lo, hi}}
}

// TestControlChecks: the control agrees with Go set-nx-cad in a scenario
// when both verdicts match and their Wilson intervals overlap.
func TestControlChecks(t *testing.T) {
	r := &DriversResult{Cells: []DriverCell{
		driverCell("a", "go set-nx-cad", 20, 20, "unsafe"), driverCell("a", control, 19, 20, "unsafe"), // overlap
		driverCell("b", "go set-nx-cad", 20, 20, "unsafe"), driverCell("b", control, 2, 20, "unsafe"), // same verdict, apart
		driverCell("c", "go set-nx-cad", 0, 20, "safe"), driverCell("c", control, 1, 20, "unsafe"), // verdicts differ
	}}
	r.Cells[0].SimRuns, r.Cells[0].SimUnsafe, r.Cells[0].SimVerdict = 200, 198, "unsafe"
	lo, hi := stats.Wilson(198, 200)
	r.Cells[0].SimCI = [2]float64{lo, hi}
	got := controlChecks(r, DriverArms())
	want := map[string]bool{"a": true, "b": false, "c": false}
	if len(got) != 3 {
		t.Fatalf("%d checks, want 3: %+v", len(got), got)
	}
	for _, c := range got {
		if c.Agree != want[c.Scenario] {
			t.Errorf("%s: agree %v, want %v (%+v)", c.Scenario, c.Agree, want[c.Scenario], c)
		}
	}
	if !got[0].AgreeSim {
		t.Errorf("a: the control (19/20) and Go's simulator (198/200) overlap, want agree_sim: %+v", got[0])
	}
}

// TestDriversWriteRead: drivers.json comes back as written, the table
// marks a cell that is not its expectation and counts a cell's fenced
// operations, and a folder without the
// file or with a broken one says so.
func TestDriversWriteRead(t *testing.T) {
	dir := t.TempDir()
	r := &DriversResult{TTLNS: 5e8, Arms: DriverArms(), Jobs: 4, Cells: []DriverCell{
		driverCell("no-faults", "go set-nx-cad", 0, 20, "safe"), driverCell("no-faults", redisPy, 3, 20, "unsafe"),
		{Scenario: "failover", Arm: redlock, NotSupported: "a replicated world", Verdict: "not-supported"},
	}}
	r.Cells[0].Expected, r.Cells[0].AsExpected = "safe", true
	r.Cells[0].Fenced = 12 // a fenced world's refusals, summed over the runs
	r.Cells[1].Expected = "safe"
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadDrivers(dir)
	if err != nil || back == nil || len(back.Cells) != 3 || back.Cells[1].Unsafe != 3 || back.Cells[0].Fenced != 12 {
		t.Fatalf("ReadDrivers = %+v, %v", back, err)
	}
	var tb bytes.Buffer
	back.WriteTable(&tb)
	for _, s := range []string{"3/20 unsafe [safe] !", "0/20 safe [safe] (12 fenced)", "not supported: failover × node-redlock: a replicated world"} {
		if !strings.Contains(tb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, tb.String())
		}
	}
	if r, err := ReadDrivers(t.TempDir()); r != nil || err != nil {
		t.Errorf("a folder without drivers.json: %v, %v; want nil, nil", r, err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, DriversJSONFile), []byte("{\"cells\": [1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDrivers(bad); err == nil || !strings.Contains(err.Error(), filepath.Join(bad, DriversJSONFile)) {
		t.Errorf("broken drivers.json: %v, want an error naming the file", err)
	}
}
