package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/realarm/parity"
	"github.com/locksim/locksim/internal/realarm/realredis"
)

// parity --drivers checks its scenarios and drivers before it starts
// anything: an unknown scenario or arm, a folder with no driver, or a bad
// expect.yaml (file:line:column and field) is a usage error naming it,
// and nothing is written.
func TestParityDriversBadInput(t *testing.T) {
	badExpect := driverDir(t, "mine", "#!/bin/sh\n", "expect:\n  set-nx-cad:\n    no-faults:\n      verdict: sure\n      why: x\n")
	unknownField := driverDir(t, "mine", "#!/bin/sh\n", "expect:\n  set-nx-cad: {}\nlibraries: x\n")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown scenario", []string{"--drivers", "../../drivers", "--cells", "nope"}, `unknown scenario "nope"`},
		{"no drivers there", []string{"--drivers", t.TempDir()}, "no driver for set-nx-cad's world"},
		{"bad expectations", []string{"--drivers", badExpect}, filepath.Join(badExpect, "mine", "expect.yaml") + `:4:16: expect.set-nx-cad.no-faults.verdict: unknown verdict "sure"`},
		{"unknown field", []string{"--drivers", unknownField}, filepath.Join(unknownField, "mine", "expect.yaml") + `:3:1: libraries: unknown field`},
		{"unknown arm", []string{"--drivers", "../../drivers", "--cells", "no-faults/java-redisson"}, `no arm "java-redisson"`},
		{"empty arm", []string{"--drivers", "../../drivers", "--cells", "no-faults/"}, `"no-faults/" is not SCENARIO or SCENARIO/ARM`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, _, stderr := cli(t, noHost(t), append([]string{"parity", "--out", out}, c.args...)...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d naming %q", code, stderr, exitUsage, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was created", out)
			}
		})
	}
}

// driverDir is a new drivers folder holding one driver, name, whose
// driver.py is script and whose expectations file is expect ("": none).
func driverDir(t *testing.T, name, script, expect string) string {
	t.Helper()
	dir := t.TempDir()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "driver.py"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if expect != "" {
		if err := os.WriteFile(filepath.Join(d, "expect.yaml"), []byte(expect), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestParityDriversUserDriver: a driver written outside the repository
// gets its own column. The folder holds a "library" with a bug (the
// control's driver.py with SET's NX dropped) and its expect.yaml, which
// expects no-faults safe; a driver with no expect.yaml (the control's
// driver.py as it is); and the shipped control beside them (a symlink).
// On the real arm the buggy cell is unsafe and marked ! against its file,
// the bare one shows [-] and says it has no expectation, and the shipped
// one keeps its expectation.
func TestParityDriversUserDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real redis-server; skipped with -short")
	}
	err := realredis.CheckBinaries()
	if err == nil {
		err = exec.Command("/usr/bin/python3", "-c", "import redis").Run()
	}
	if err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("real arm with a Python driver skipped: %v", err)
	}
	control, err := os.ReadFile("../../drivers/python-set-nx-cad/driver.py")
	if err != nil {
		t.Fatal(err)
	}
	const set = "node.set(key, value, nx=True, px=ttl)"
	if strings.Count(string(control), set) != 1 {
		t.Fatalf("the control's driver.py no longer has one %q to break", set)
	}
	buggy := strings.Replace(string(control), set, "node.set(key, value, px=ttl)", 1)
	dir := driverDir(t, "buggy-lock", buggy, "library: buggylock 0.1\nexpect:\n  set-nx-cad:\n    no-faults:\n      verdict: safe\n      why: SET NX PX (driver.py 73)\n")
	if err := os.MkdirAll(filepath.Join(dir, "plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain", "driver.py"), control, 0o755); err != nil {
		t.Fatal(err)
	}
	shipped, _ := filepath.Abs("../../drivers/python-set-nx-cad")
	if err := os.Symlink(shipped, filepath.Join(dir, "python-set-nx-cad")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "p")
	cmd := exec.Command(buildBinary(t), "parity", "--drivers", dir, "--out", out, "--real-runs", "2", "--sim-runs", "2", "-j", "3",
		"--cells", "no-faults/buggy-lock,no-faults/plain,no-faults/python-set-nx-cad")
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("parity --drivers %s: %v\n%s", dir, err, stdout)
	}
	res, err := parity.ReadDrivers(out)
	if err != nil || res == nil {
		t.Fatalf("drivers.json: %v", err)
	}
	if c := res.Cell("no-faults", "buggy-lock"); c == nil || c.Expected != "safe" || c.Verdict != "unsafe" || c.AsExpected || c.Runs != 2 {
		t.Errorf("buggy-lock's cell %+v: want expected safe, 2 runs unsafe, not as expected", c)
	}
	if c := res.Cell("no-faults", "plain"); c == nil || c.Expected != "" || c.Runs != 2 || c.AsExpected {
		t.Errorf("plain's cell %+v: want 2 runs and no expectation", c)
	}
	if c := res.Cell("no-faults", "python-set-nx-cad"); c == nil || c.Expected != "safe" || c.Runs != 2 {
		t.Errorf("the shipped control's cell %+v: want 2 runs, expected safe", c)
	}
	table := string(stdout)
	for _, want := range []string{"2/2 unsafe [safe] !", "[-]", "plain: no expectation (no expect.yaml in its folder)"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "go set-nx-cad") {
		t.Errorf("the Go arm has a column though --cells named none:\n%s", table)
	}
}
