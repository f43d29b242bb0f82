package knownbugs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestAllEntriesValid: every committed entry decodes and passes validate.
func TestAllEntriesValid(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no entries")
	}
	// Every path an entry names exists in the repository.
	for _, b := range all {
		var paths []string
		if c := b.Check; c != nil {
			paths = append(paths, c.Modules()...)
			if c.Kind == CheckDriver {
				paths = append(paths, c.BuggyDriver, c.FixedDriver)
				if strings.HasSuffix(c.Scenario, ".yaml") {
					paths = append(paths, c.Scenario)
				}
			}
		}
		if b.Measured != nil {
			paths = append(paths, b.Measured.Traces...)
		}
		for _, p := range paths {
			if _, err := os.Stat(filepath.Join("..", p)); err != nil {
				t.Errorf("%s names %s: %v", b.ID, p, err)
			}
		}
	}
	for i := 1; i < len(all); i++ {
		if all[i].Reproduced() && !all[i-1].Reproduced() {
			t.Fatalf("%s (reproduced) sorted after %s (not)", all[i].ID, all[i-1].ID)
		}
	}
}

// TestBadEntries: each broken entry is refused with the field named.
func TestBadEntries(t *testing.T) {
	good := `id: x
library: l
language: Go
package: p
buggy: v1
fixed: v2
tracker: https://example.com/1
mechanism: m
found_by: search
verdict: unsafe
check: {kind: driver, buggy_driver: knownbugs/drivers/a, fixed_driver: knownbugs/drivers/b, lock: set-nx-cad, scenario: s, ttl: 2s, seeds: 3}
measured: {date: 2026-11-28, command: c, buggy: {runs: 10, bad: 3}, fixed: {runs: 10, bad: 0}}
repro: r
status: reproduced
`
	cases := []struct{ name, body, want string }{
		{"good", good, ""},
		{"unknown field", good + "colour: red\n", "colour"},
		{"name differs", strings.Replace(good, "id: x", "id: y", 1), "differs from the file's name"},
		{"fixed side bad", strings.Replace(good, "fixed: {runs: 10, bad: 0}", "fixed: {runs: 10, bad: 1}", 1), "fixed never did"},
		{"buggy never", strings.Replace(good, "buggy: {runs: 10, bad: 3}", "buggy: {runs: 10, bad: 0}", 1), "buggy side showed it"},
		{"bad > runs", strings.Replace(good, "bad: 3", "bad: 11", 1), "0..runs"},
		{"schedule without why", strings.Replace(good, "found_by: search", "found_by: schedule", 1), "found_by_why"},
		{"no-fault without why", strings.Replace(good, "found_by: search", "found_by: no-fault", 1), "found_by_why"},
		{"found_by unknown", strings.Replace(good, "found_by: search", "found_by: luck", 1), `found_by "luck"`},
		{"unfixed without twin", strings.Replace(good, "fixed: v2", "fixed: unfixed", 1), "twin"},
		{"no why_not", strings.Replace(good, "status: reproduced", "status: not reproduced", 1), "why_not"},
		{"bad kind", strings.Replace(good, "kind: driver", "kind: shell", 1), "kind \"shell\""},
		{"seeds 0", strings.Replace(good, "seeds: 3", "seeds: 0", 1), "seeds 0"},
		{"verdict", strings.Replace(good, "verdict: unsafe", "verdict: wrong", 1), "verdict \"wrong\""},
		{"crash without signature", strings.Replace(good, "verdict: unsafe", "verdict: crash", 1), "crash_signature"},
		{"escaping path", strings.Replace(good, "knownbugs/drivers/a", "knownbugs/../../etc", 1), "a clean path"},
		{"bad ttl", strings.Replace(good, "ttl: 2s", "ttl: soon", 1), `ttl "soon"`},
		{"go-test with driver fields", strings.Replace(good, "kind: driver,", "kind: go-test, dirs: [knownbugs/go/a, knownbugs/go/b],", 1), "takes dirs and tags only"},
		{"go-test one dir", strings.Replace(good, "check: {kind: driver, buggy_driver: knownbugs/drivers/a, fixed_driver: knownbugs/drivers/b, lock: set-nx-cad, scenario: s, ttl: 2s, seeds: 3}", "check: {kind: go-test, dir: knownbugs/go/a}", 1), "two nested modules"},
		{"date", strings.Replace(good, "date: 2026-11-28", "date: yesterday", 1), "YYYY-MM-DD"},
	}
	for _, c := range cases {
		fsys := fstest.MapFS{"bugs/x.yaml": {Data: []byte(c.body)}}
		_, err := load(fsys, []string{"bugs/x.yaml"})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error naming %q", c.name, err, c.want)
		case c.want != "" && !strings.Contains(err.Error(), "knownbugs/bugs/x.yaml"):
			t.Errorf("%s: %v does not name the file", c.name, err)
		}
	}
}
