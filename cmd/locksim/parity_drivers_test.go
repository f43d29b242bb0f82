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
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown scenario", []string{"--drivers", "../../drivers", "--cells", "nope"}, `unknown scenario "nope"`},
		{"no drivers there", []string{"--drivers", t.TempDir()}, "python-set-nx-cad"},
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
