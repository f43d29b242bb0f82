package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/realarm/parity"
)

// parity --cells is checked before anything runs: a cell that
// names an unknown scenario or lock, or is not SCENARIO/LOCK, or an empty
// list, is a usage error naming the cell, never a table that lists it as
// "not at the real arm's scale" and exits 0 under --fail-on-disagree; the
// --drivers mode reads its cells through the same parser.
func TestParityCellsBadInput(t *testing.T) {
	for _, c := range []struct {
		name  string
		cells string
		extra []string
		want  string
	}{
		{"misspelled lock", "no-faults/set-nx-ca", nil, `"no-faults/set-nx-ca": unknown lock "set-nx-ca" (did you mean "set-nx-cad"?`},
		{"unknown scenario", "nope/set-nx-cad", nil, `"nope/set-nx-cad": unknown scenario "nope"`},
		{"misspelled scenario", "pause-after-chek/set-nx-cad", nil, `did you mean "pause-after-check"?`},
		{"empty scenario", "/set-nx-cad", nil, `"/set-nx-cad" is not SCENARIO/LOCK: nothing before the "/"`},
		{"two slashes", "no-faults//set-nx-cad", nil, `"no-faults//set-nx-cad" is not SCENARIO/LOCK: more than one "/"`},
		{"three parts", "no-faults/set-nx-cad/x", nil, `"no-faults/set-nx-cad/x" is not SCENARIO/LOCK: more than one "/"`},
		{"no lock", "no-faults", nil, `"no-faults" is not SCENARIO/LOCK: no "/"`},
		{"empty list", "", nil, "--cells: empty"},
		{"blank list", " ", nil, "--cells: empty"},
		{"empty cell", "no-faults/set-nx-cad,,no-faults/redlock", nil, "an empty cell"},
		{"twice", "no-faults/set-nx-cad, no-faults/set-nx-cad", nil, `"no-faults/set-nx-cad" appears twice`},
		{"good then bad", "no-faults/set-nx-cad,no-faults/redlok", nil, `unknown lock "redlok" (did you mean "redlock"?`},
		{"drivers: empty list", "", []string{"--drivers", "../../drivers"}, "--cells with --drivers: empty"},
		{"drivers: two slashes", "no-faults//go", []string{"--drivers", "../../drivers"}, `"no-faults//go" is not SCENARIO or SCENARIO/ARM: more than one "/"`},
		{"drivers: three parts", "no-faults/go/x", []string{"--drivers", "../../drivers"}, `"no-faults/go/x" is not SCENARIO or SCENARIO/ARM`},
		{"drivers: misspelled arm", "no-faults/python-redis-p", []string{"--drivers", "../../drivers"}, `did you mean "python-redis-py"?`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"parity", "--out", out, "--fail-on-disagree", "--cells", c.cells}, c.extra...)
			code, _, stderr := cli(t, noHost(t), args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("exit %d, stderr %q; want %d, one line naming %q", code, stderr, exitUsage, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was created", out)
			}
		})
	}
}

// The cells a good --cells names, in its order, spaces around commas
// allowed.
func TestParseCells(t *testing.T) {
	got, err := parseCells("pause-after-check/set-nx-cad, no-faults/redlock")
	want := []parity.Cell{{Scenario: "pause-after-check", Lock: "set-nx-cad"}, {Scenario: "no-faults", Lock: "redlock"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseCells = %v, %v; want %v", got, err, want)
	}
}
