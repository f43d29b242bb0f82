package locksim

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every file the module compiles (Go and assembly sources, and what its
// go:embed lines name) is in Sources, or the result store's key would not
// see a change to it. The walk skips other modules (a folder with a
// go.mod: examples/userlock), hidden folders, testdata and node_modules.
func TestSourcesComplete(t *testing.T) {
	n := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p == "." {
				return nil
			}
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		var want []string
		switch filepath.Ext(name) {
		case ".go", ".s", ".c", ".h", ".syso":
			want = append(want, p)
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(data), "\n") {
				pats, ok := strings.CutPrefix(line, "//go:embed ")
				if !ok {
					continue
				}
				for _, pat := range strings.Fields(pats) {
					matches, err := filepath.Glob(filepath.Join(filepath.Dir(p), pat))
					if err != nil || len(matches) == 0 {
						t.Errorf("%s: go:embed %s matches nothing here (%v)", p, pat, err)
					}
					for _, m := range matches {
						filepath.WalkDir(m, func(q string, e fs.DirEntry, err error) error {
							if err == nil && !e.IsDir() {
								want = append(want, q)
							}
							return nil
						})
					}
				}
			}
		}
		for _, w := range want {
			n++
			if _, err := fs.Stat(Sources, filepath.ToSlash(w)); err != nil {
				t.Errorf("%s is compiled into locksim but not in Sources (sources.go's go:embed lines): the result store would not see a change to it", w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 200 {
		t.Fatalf("only %d compiled files found: is the test running at the module root?", n)
	}
}
