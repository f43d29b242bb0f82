package reports

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/realarm/parity"
	"github.com/locksim/locksim/sim"
)

// TestDriversSection: a parity folder holding only drivers.json gives the
// report its drivers section (rows, the control's check, the cells that
// are not their expectation, the expectations with their source lines,
// and the seed's caveat) in both documents; a broken drivers.json is an
// input error naming the file, before anything runs.
func TestDriversSection(t *testing.T) {
	pdir := t.TempDir()
	r := &parity.DriversResult{TTLNS: 5e8, Jobs: 4, Arms: []parity.Arm{parity.GoArm(parity.DriverWorld),
		{Name: "python-set-nx-cad", Driver: "python-set-nx-cad", Library: "plain redis-py issuing set-nx-cad's commands (the control)", Resembles: "set-nx-cad"},
		{Name: "python-redis-py", Driver: "python-redis-py", Library: "redis-py 4.3.4 redis.lock.Lock", Resembles: "set-nx-cad, redislock (no validity signal)"}}, Cells: []parity.DriverCell{
		{Scenario: "no-faults", Arm: "go set-nx-cad", Runs: 20, Verdict: "safe", Expected: "safe", AsExpected: true, SimRuns: 200, SimVerdict: "safe"},
		{Scenario: "no-faults", Arm: "python-set-nx-cad", Runs: 20, Verdict: "safe", Expected: "safe", AsExpected: true, Fenced: 7},
		{Scenario: "no-faults", Arm: "python-redis-py", Runs: 20, Unsafe: 2, Verdict: "unsafe", Expected: "safe", ExpectedWhy: "lock.py 27-34",
			Traces: []parity.KeptTrace{{Seed: 4, Verdict: "unsafe", File: "traces/no-faults_python-redis-py_seed4.jsonl"}}},
		{Scenario: "failover", Arm: "python-redis-py", Lock: "primary-replica", TTLNS: 3e9, Runs: 5, Unsafe: 5, Verdict: "unsafe", Expected: "unsafe", AsExpected: true},
	}, Control: []parity.ControlCheck{{Scenario: "no-faults", Go: "0/20 safe", GoSim: "0/200 safe", Python: "0/20 safe", Agree: true, AgreeSim: true}}}
	if err := r.Write(pdir); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(Options{Seeds: 1, Scenarios: []string{"no-faults"}, Locks: []string{"set-nx-cad"}, Parity: pdir})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Stage(filepath.Join(t.TempDir(), "report"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Discard()
	dir := out.Dir()
	if err := p.Run(context.Background(), sim.TestBubble(t), dir, Exec{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "index.html"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"Lock libraries in other languages", "2/20 unsafe", "no-faults × python-redis-py: 2/20 unsafe (unsafe), expected safe; traces kept: seed 4 (unsafe) traces/no-faults_python-redis-py_seed4.jsonl", "lock.py 27-34", "0/20 safe, 7 operations fenced", "not the interleaving", "failover runs in primary-replica", "TTL 3s"} {
			if !strings.Contains(string(b), s) {
				t.Errorf("%s lacks %q", f, s)
			}
		}
		if strings.Contains(string(b), "Simulation vs real Redis") {
			t.Errorf("%s has a parity section from a folder without parity.json", f)
		}
	}
	if err := os.WriteFile(filepath.Join(pdir, parity.DriversJSONFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPlan(Options{Seeds: 1, Scenarios: []string{"no-faults"}, Locks: []string{"set-nx-cad"}, Parity: pdir}); err == nil || !strings.Contains(err.Error(), parity.DriversJSONFile) {
		t.Errorf("broken drivers.json: %v, want an input error naming it", err)
	}
}
