package main

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/knownbugs"
)

// TestListBugs: one line per entry, reproduced first, a count at the end;
// one entry in full names its link; an unknown id is a usage error.
func TestListBugs(t *testing.T) {
	all, err := knownbugs.All()
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, noHost(t), "list", "bugs")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(all)+1 {
		t.Fatalf("%d lines for %d entries:\n%s", len(lines), len(all), out)
	}
	for i, b := range all {
		if !strings.HasPrefix(lines[i], b.ID+" ") {
			t.Errorf("line %d %q: want %s first", i, lines[i], b.ID)
		}
		if len([]rune(lines[i])) > listWidth {
			t.Errorf("line %d is %d columns", i, len([]rune(lines[i])))
		}
	}
	b := all[0]
	code, one, _ := cli(t, noHost(t), "list", "bugs", b.ID)
	if code != 0 || !strings.Contains(one, "tracker:") || !strings.Contains(one, oneLine(b.Tracker)) {
		t.Errorf("list bugs %s: exit %d\n%s", b.ID, code, one)
	}
	if code, _, stderr := cli(t, noHost(t), "list", "bugs", "nope"); code != exitUsage || !strings.Contains(stderr, `unknown bug "nope"`) {
		t.Errorf("unknown id: exit %d, %s", code, stderr)
	}
}
