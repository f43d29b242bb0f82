package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestListScenarios: every built-in scenario id (scenarios/builtin) is listed.
func TestListScenarios(t *testing.T) {
	code, out, errOut := cli(t, noHost(t), "list", "scenarios")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, id := range []string{"default", "no-faults", "pause-after-check", "pause-during-acquire", "clock-jump",
		"restart-no-persistence", "restart-fsync-always", "delayed-restart", "failover", "failover-wait",
		"split-brain", "delayed-write", "drift", "token-regression", "foreign-release", "watchdog-starved",
		"bonus-pool", "redlock-all-up", "redlock-2-of-5"} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			found = found || strings.HasPrefix(line, id+" ")
		}
		if !found {
			t.Errorf("list scenarios: no line for %q", id)
		}
	}
}

const userScenario = `id: my-pause
description: a user's scenario file
clients: {count: 3}
duration: 6ttl
liveness: 10s
faults:
  - {kind: client-pause, at: after-check, start: 1ttl, duration: 1.5ttl, targets: [c0]}
locks: [set-nx-cad]
expect:
  set-nx-cad: {agreed: unsafe}
`

// TestRunScenarioFile: --scenario takes a file path; the JSON names the
// file's id, and the repro command repeats the path.
func TestRunScenarioFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "my.yaml")
	if err := os.WriteFile(path, []byte(userScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, testHost(t), "run", "--scenario", path, "--lock", "set-nx-cad", "--seed", "1", "--json")
	if code != exitSafe && code != exitUnsafe {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Scenario       string `json:"scenario"`
		Verdict        string `json:"verdict"`
		FaultSchedule  []any  `json:"fault_schedule"`
		Counterexample *struct {
			Repro string `json:"repro"`
		} `json:"counterexample"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Scenario != "my-pause" || len(r.FaultSchedule) != 1 {
		t.Fatalf("scenario %q, %d faults", r.Scenario, len(r.FaultSchedule))
	}
	if r.Counterexample != nil && !strings.Contains(r.Counterexample.Repro, "--scenario "+path) {
		t.Fatalf("repro %q does not name the file", r.Counterexample.Repro)
	}
}

// TestRunScenarioFileErrors: a bad file is an input error (exit 64) that
// names the file, the line and the field, before any run.
func TestRunScenarioFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", strings.Replace(userScenario, "duration: 1.5ttl", "duraton: 1.5ttl", 1))
	target := write("target.yaml", strings.Replace(userScenario, "targets: [c0]", "targets: [c9]", 1))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", bad, "--lock", "set-nx-cad"}, "--scenario: " + bad + ":7:56: faults[0].duraton: unknown field \"duraton\""},
		{[]string{"--scenario", target, "--lock", "set-nx-cad"}, "--scenario: " + target + ":7:5: faults[0]: client-pause: unknown process \"c9\""},
		{[]string{"--scenario", filepath.Join(dir, "missing.yaml"), "--lock", "set-nx-cad"}, "no such file or directory"},
		{[]string{"--scenario", "clock-jump", "--lock", "redlock", "--clients", "1"}, `clock-jump.yaml:24:5: faults[1]: partition: unknown process "c1"`},
	} {
		code, _, errOut := cli(t, noHost(t), append(append([]string{"run"}, c.args...), "--seed", "1")...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 64 and %q", c.args, code, errOut, c.want)
		}
	}
}
