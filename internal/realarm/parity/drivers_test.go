package parity

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/stats"
)

// TestDriverExpectations: the shipped drivers' expectations files make
// each world's columns (set-nx-cad's: the four drivers; redlock's:
// node-redlock; fencing's: python-fencing) and rows (no scenario beyond
// the world's), and every driver has an expectation, with its reason, in
// every scenario it can run (failover: not node-redlock, which refuses a
// Sentinel world); the Go arm's come from the scenario files.
func TestDriverExpectations(t *testing.T) {
	wantArms := map[string][]string{
		DriverWorld:  {"go set-nx-cad", "node-redis-semaphore", "node-redlock", "python-redis-py", control},
		RedlockWorld: {"go redlock", "node-redlock"},
		FencingWorld: {"go fencing", "python-fencing"},
	}
	for _, world := range Worlds {
		arms, err := DirArms("../../../drivers", world)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, a := range arms {
			names = append(names, a.Name)
		}
		if !slices.Equal(names, wantArms[world]) {
			t.Errorf("%s's columns %v, want %v", world, names, wantArms[world])
		}
		if got := rows(world, arms); !slices.Equal(got, WorldScenarios(world)) {
			t.Errorf("%s's rows %v, want %v", world, got, WorldScenarios(world))
		}
		for _, a := range arms {
			for _, sc := range WorldScenarios(world) {
				e, ok := expectationOf(a, sc, world)
				if sc == "failover" && a.Driver == "node-redlock" {
					if ok || a.NoSentinel == "" {
						t.Errorf("%s has an expectation in failover (%v) or no no_sentinel (%q), a Sentinel world it refuses", a.Name, ok, a.NoSentinel)
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

// shippedArm is the shipped driver name's column in world's table.
func shippedArm(t *testing.T, world, name string) Arm {
	t.Helper()
	arms, err := DirArms("../../../drivers", world)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arms {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no arm %q in %s's table", name, world)
	return Arm{}
}

func driverCell(sc, arm string, unsafe, runs int, verdict checker.Verdict) DriverCell {
	lo, hi := stats.Wilson(unsafe, runs)
	return DriverCell{Scenario: sc, Arm: arm, Runs: runs, Unsafe: unsafe, Verdict: verdict, Verdicts: map[checker.Verdict]int{verdict: runs}, CI: [2]float64{lo, hi}}
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
	got := controlChecks(r, []Arm{GoArm(DriverWorld), {Name: control, Driver: control}})
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
	r := &DriversResult{TTLNS: 5e8, Arms: []Arm{GoArm(DriverWorld), shippedArm(t, DriverWorld, "python-redis-py"), shippedArm(t, DriverWorld, "node-redlock")}, Jobs: 4, Cells: []DriverCell{
		driverCell("no-faults", "go set-nx-cad", 0, 20, "safe"), driverCell("no-faults", "python-redis-py", 3, 20, "unsafe"),
		{Scenario: "failover", Arm: "node-redlock", NotSupported: "a replicated world", Verdict: "not-supported"},
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

// TestDriversTableNoExpectation: a driver with no expectation in any of
// its cells shows the measured verdict with [-] and no !, and a line under
// the table says why (no file, or a file naming none of these cells); a
// driver with one says nothing.
func TestDriversTableNoExpectation(t *testing.T) {
	r := &DriversResult{TTLNS: 5e8, Jobs: 1, Arms: []Arm{{Name: "plain", Driver: "plain"}, {Name: "mine", Driver: "mine", Expectations: "d/mine/expect.yaml"}, {Name: "ok", Driver: "ok"}},
		Cells: []DriverCell{driverCell("no-faults", "plain", 2, 2, "unsafe"), driverCell("no-faults", "mine", 0, 2, "safe"), driverCell("no-faults", "ok", 0, 2, "safe")}}
	r.Cells[2].Expected, r.Cells[2].AsExpected = "safe", true
	var b bytes.Buffer
	r.WriteTable(&b)
	for _, want := range []string{"2/2 unsafe [-] ", "plain: no expectation (no expect.yaml in its folder)", "mine: no expectation (d/mine/expect.yaml names none of these cells)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "] !") || strings.Contains(b.String(), "ok: no expectation") {
		t.Errorf("a mark or a note where none is due:\n%s", b.String())
	}
}
