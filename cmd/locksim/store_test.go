package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/store"
)

// userFiles makes the folder: a 1.2 GB sparse file and notes.
func userFiles(t *testing.T, dir string) []string {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	img, notes := filepath.Join(dir, "vm-backup.img"), filepath.Join(dir, "notes.txt")
	os.WriteFile(img, nil, 0o644)
	if err := os.Truncate(img, 1200<<20); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(notes, []byte("x\n"), 0o644)
	return []string{img, notes}
}

// The command: a report whose --cache is a folder of the user's
// is refused (64, naming the folder and how to use it anyway) and the
// files survive; once the folder is adopted (its marker made), the
// report runs, and trimming to any bound leaves the user's files alone.
// The same for sweep --cache and report --plan.
func TestStoreLeavesUserFiles(t *testing.T) {
	base := t.TempDir()
	v := filepath.Join(base, "v")
	files := userFiles(t, v)
	report := func(extra ...string) (int, string) {
		t.Helper()
		args := append([]string{"report", "--quick", "--seeds", "2", "--scenarios", "no-faults", "--locks", "set-nx-cad",
			"--cache", v, "--out", filepath.Join(base, "r"), "--force"}, extra...)
		code, _, stderr := cli(t, testHost(t), args...)
		return code, stderr
	}
	check := func(what string) {
		t.Helper()
		for _, f := range files {
			if _, err := os.Stat(f); err != nil {
				t.Fatalf("%s: the user's file is gone: %v", what, err)
			}
		}
	}
	for name, run := range map[string]func() (int, string){
		"report":        func() (int, string) { return report() },
		"report --plan": func() (int, string) { return report("--plan") },
		"sweep": func() (int, string) {
			code, _, stderr := cli(t, testHost(t), tinySweep(filepath.Join(base, "s"), "--cache", v, "--cache-max-mib", "1")...)
			return code, stderr
		},
	} {
		code, stderr := run()
		if code != exitUsage || !strings.Contains(stderr, v) || !strings.Contains(stderr, store.MarkerFile) {
			t.Errorf("%s --cache on a folder of the user's: exit %d, %q; want 64 naming it and %s", name, code, stderr, store.MarkerFile)
		}
		check(name)
	}
	if err := os.WriteFile(filepath.Join(v, store.MarkerFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// 8 MiB holds this report's runs and its charts' pictures (the store
	// keeps those too, about 1 MiB a chart), far below the user's 1.2 GB.
	for _, extra := range [][]string{nil, {"--cache-max-mib", "8"}} {
		if code, stderr := report(extra...); code != exitSafe || strings.Contains(stderr, "removed") {
			t.Fatalf("report %v on the adopted folder: exit %d: %s", extra, code, stderr)
		}
		check("report")
	}
	// --cache LINK and --cache LINK/ are the link's target, all of whose
	// runs the store holds by now.
	link := filepath.Join(base, "link")
	if err := os.Symlink(v, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{link, link + "/"} {
		code, _, stderr := cli(t, testHost(t), "report", "--quick", "--seeds", "2", "--scenarios", "no-faults", "--locks", "set-nx-cad",
			"--cache", c, "--cache-max-mib", "8", "--out", filepath.Join(base, "r"), "--force")
		m := regexp.MustCompile(`(\d+) of (\d+) runs from the result store ` + regexp.QuoteMeta(v) + `;`).FindStringSubmatch(stderr)
		if code != exitSafe || m == nil || m[1] != m[2] {
			t.Errorf("--cache %s: exit %d, %q; want every run from the store %s", c, code, stderr, v)
		}
		check("--cache " + c)
	}
}
