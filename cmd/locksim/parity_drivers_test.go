package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parity --drivers checks its scenarios and drivers before it starts
// anything: an unknown scenario or a folder without the table's drivers
// is a usage error naming it, and nothing is written.
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
