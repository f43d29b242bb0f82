package locksim

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/builtinfs"
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
			w = filepath.ToSlash(w)
			if path.Dir(w) == builtinfs.Dir && path.Ext(w) == ".yaml" {
				if _, err := fs.Stat(builtinfs.Files(), path.Base(w)); err != nil {
					t.Errorf("%s is compiled into locksim but not in builtinfs.Files: the result store would not see a change to it", w)
				}
				continue
			}
			if _, err := fs.Stat(Sources, w); err != nil {
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

// Editing a built-in scenario file must recompile only package builtin
// (which embeds them) and internal/builtinfs (whose output does not
// change), then relink: the go command recompiles every package that
// imports one whose compiled output changed, and an embedded file is part
// of that output. So no other package embeds them (this one, for the
// store's key, included), package builtin imports only embed, and only
// internal/builtinfs imports it. A package many import that embedded them
// made an edit recompile about ten packages before the link.
func TestBuiltinScenariosLeaf(t *testing.T) {
	const leaf = "github.com/locksim/locksim/" + builtinfs.Dir
	importers := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		for _, line := range strings.Split(string(data), "\n") {
			pats, ok := strings.CutPrefix(line, "//go:embed ")
			if !ok || dir == builtinfs.Dir {
				continue
			}
			for _, pat := range strings.Fields(pats) {
				if embedsBuiltin(dir, pat) {
					t.Errorf("%s embeds %s: the built-in scenarios are embedded only in %s", p, pat, builtinfs.Dir)
				}
			}
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, data, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			switch {
			case dir == builtinfs.Dir && ip != "embed":
				t.Errorf("%s imports %s: package builtin must import only embed", p, ip)
			case ip == leaf && dir != "internal/builtinfs":
				t.Errorf("%s imports %s: only internal/builtinfs may", p, ip)
			case ip == leaf:
				importers++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if importers != 1 {
		t.Errorf("internal/builtinfs imports %s %d times, want once", leaf, importers)
	}
}

// embedsBuiltin reports whether the //go:embed pattern pat of package dir
// takes in a built-in scenario file: it names (or its glob matches) one
// of the files, builtinfs.Dir, or a folder above it (a folder is embedded
// with everything under it), quoted or marked all: or not. (The folder's
// .go files are its package's own, not scenarios: sources.go embeds them.)
func embedsBuiltin(dir, pat string) bool {
	pat = strings.TrimPrefix(strings.Trim(pat, "\"`"), "all:")
	full := path.Join(dir, pat)
	var cands []string
	for p := builtinfs.Dir; p != "."; p = path.Dir(p) {
		cands = append(cands, p)
	}
	files, _ := filepath.Glob(filepath.FromSlash(builtinfs.Dir + "/*.yaml"))
	for _, f := range files {
		cands = append(cands, filepath.ToSlash(f))
	}
	for _, c := range cands {
		if m, _ := path.Match(full, c); m {
			return true
		}
	}
	return false
}

func TestEmbedsBuiltin(t *testing.T) {
	for _, tc := range []struct {
		dir, pat string
		want     bool
	}{
		{".", "scenarios", true},
		{".", "sc*", true},
		{"scenarios", "builtin", true},
		{"scenarios", "all:builtin", true},
		{"scenarios", `"builtin/*.yaml"`, true},
		{"reports", "../scenarios/builtin/default.yaml", true},
		{"scenarios", "builtin/failover.yaml", true},
		{".", "scenarios/builtin/no-*.yaml", true},
		{".", "scenarios/builtin/*.go", false},
		{"scenarios", "testdata", false},
		{"reports", "templates", false},
		{"risk", "default.yaml", false},
	} {
		if got := embedsBuiltin(tc.dir, tc.pat); got != tc.want {
			t.Errorf("package %s, //go:embed %s: %v, want %v", tc.dir, tc.pat, got, tc.want)
		}
	}
}
