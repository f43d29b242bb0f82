package reports

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/knownbugs"
	"github.com/locksim/locksim/sim"
)

// TestKnownBugsPage: the report writes known-bugs.html with every entry of
// the suite (reproduced ones with both sides' rates, the others with why),
// links it from the index and sums it up in report.md.
func TestKnownBugsPage(t *testing.T) {
	all, err := knownbugs.All()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(Options{Seeds: 1, Scenarios: []string{"no-faults"}, Locks: []string{"set-nx-cad"}})
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
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	page := read(knownBugsHref)
	for _, b := range all {
		want := []string{`id="` + b.ID + `"`}
		if b.Reproduced() {
			want = append(want, b.Measured.Buggy.String(), b.Measured.Fixed.String())
		} else {
			want = append(want, strings.Fields(b.WhyNot)[0])
		}
		for _, s := range want {
			if !strings.Contains(page, s) {
				t.Errorf("known-bugs.html lacks %q (entry %s)", s, b.ID)
			}
		}
	}
	if !strings.Contains(read("index.html"), `href="known-bugs.html"`) {
		t.Error("index.html does not link the known-bugs page")
	}
	if !strings.Contains(read("report.md"), "## Known bugs, reproduced") {
		t.Error("report.md has no known-bugs section")
	}
}
