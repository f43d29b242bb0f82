package store

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/locksim/locksim"
	"github.com/locksim/locksim/internal/builtinfs"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

// sources copies the compiled-in sources into a map the tests edit.
func sources(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(locksim.Sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(locksim.Sources, p)
		m[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(builtinfs.Files(), "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("no built-in scenario files (%v)", err)
	}
	for _, n := range names {
		data, err := fs.ReadFile(builtinfs.Files(), n)
		if err != nil {
			t.Fatal(err)
		}
		m[builtinDir+"/"+n] = &fstest.MapFile{Data: data}
	}
	return m
}

func buildInfo() *debug.BuildInfo {
	return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath},
		Deps: []*debug.Module{{Path: "github.com/redis/go-redis/v9", Version: "v9.23.0", Sum: "h1:abc="}},
		Settings: []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
			{Key: "vcs.revision", Value: "1234"}, {Key: "vcs.modified", Value: "true"}}}
}

// cellKeys is the outcome key of seed 1 of every built-in scenario × every
// lock (canaries included), named "scenario × lock".
func cellKeys(t *testing.T, src fs.FS, bi *debug.BuildInfo) map[string]string {
	t.Helper()
	return cellKeysEnv(t, src, bi, "")
}

func cellKeysEnv(t *testing.T, src fs.FS, bi *debug.BuildInfo, godebug string) map[string]string {
	t.Helper()
	id, err := identify(src, nil, bi, godebug)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, s := range scenarios.IDs() {
		for _, l := range catalogue.AllIDs() {
			k, err := RunKey(id, run.Spec{Scenario: s, Lock: l, Seed: 1}, "outcome")
			if err != nil {
				t.Fatal(err)
			}
			keys[s+" × "+l] = k
		}
	}
	return keys
}

// changed lists the cells whose key differs, and checks that exactly the
// cells want accepts changed.
func changed(t *testing.T, what string, a, b map[string]string, want func(cell string) bool) {
	t.Helper()
	n, bad := 0, 0
	for cell, k := range a {
		moved := b[cell] != k
		if moved {
			n++
		}
		if moved != want(cell) && bad < 5 {
			bad++
			t.Errorf("%s: %s: key changed %v, want %v", what, cell, moved, !moved)
		}
	}
	t.Logf("%s: %d of %d keys changed", what, n, len(a))
}

func edit(m fstest.MapFS, p, appended string) fstest.MapFS {
	c := fstest.MapFS{}
	for k, v := range m {
		c[k] = v
	}
	c[p] = &fstest.MapFile{Data: append([]byte(string(m[p].Data)), appended...)}
	return c
}

// replace is m with old replaced by new in file p (which must hold it).
func replace(t *testing.T, m fstest.MapFS, p, old, new string) fstest.MapFS {
	t.Helper()
	if !strings.Contains(string(m[p].Data), old) {
		t.Fatalf("%s has no %q", p, old)
	}
	c := edit(m, p, "")
	c[p] = &fstest.MapFile{Data: []byte(strings.Replace(string(m[p].Data), old, new, 1))}
	return c
}

func TestIdentParts(t *testing.T) {
	src := sources(t)
	bi := buildInfo()
	base := cellKeys(t, src, bi)
	if again := cellKeys(t, src, bi); len(again) != len(base) {
		t.Fatal("two counts of the same cells")
	} else {
		changed(t, "nothing edited", base, again, func(string) bool { return false })
	}
	cell := func(s, l string) func(string) bool {
		return func(c string) bool {
			cs, cl, _ := strings.Cut(c, " × ")
			return (s == "" || cs == s) && (l == "" || cl == l)
		}
	}
	all := func(string) bool { return true }
	none := func(string) bool { return false }

	// One built-in scenario's file (any byte: a comment is a byte).
	changed(t, "clock-jump.yaml edited", base, cellKeys(t, edit(src, "scenarios/builtin/clock-jump.yaml", "# edited\n"), bi), cell("clock-jump", ""))
	// One design's own file.
	owned, err := designFiles(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := owned["locks/catalogue/setnxexpire.go"]; len(got) != 1 || got[0] != "setnx-expire" {
		t.Fatalf("setnxexpire.go is owned by %v, want [setnx-expire] (owned files: %v)", got, owned)
	}
	changed(t, "setnxexpire.go edited", base, cellKeys(t, edit(src, "locks/catalogue/setnxexpire.go", "\n// edited\n"), bi), cell("", "setnx-expire"))
	// A file owned by several locks (the canaries): each of them.
	if got := owned["locks/catalogue/canary.go"]; len(got) != 4 {
		t.Fatalf("canary.go is owned by %v, want the 4 canaries", got)
	}
	changed(t, "canary.go edited", base, cellKeys(t, edit(src, "locks/catalogue/canary.go", "\n// edited\n"), bi),
		func(c string) bool { return strings.Contains(c, " × canary-") })
	// Shared files: the catalogue's registry, a helper other designs call,
	// the engine, go.mod.
	for _, p := range []string{"locks/catalogue/registry.go", "locks/catalogue/setnxcad.go", "sim/bubble.go", "checker/overlap.go", "go.mod"} {
		if _, ok := src[p]; !ok {
			t.Fatalf("%s is not in the sources", p)
		}
		changed(t, p+" edited", base, cellKeys(t, edit(src, p, "\n// edited\n"), bi), all)
	}
	// A test file is not compiled in.
	changed(t, "a test file edited", base, cellKeys(t, edit(src, "sim/encode_test.go", "\n// edited\n"), bi), none)
	// Build settings, dependencies and Go: all of them; vcs stamps: none.
	for name, mod := range map[string]func(*debug.BuildInfo){
		"-tags gozero": func(b *debug.BuildInfo) {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: "-tags", Value: "gozero"})
		},
		"a dependency's sum": func(b *debug.BuildInfo) { b.Deps[0].Sum = "h1:abd=" },
		"a replacement": func(b *debug.BuildInfo) {
			b.Deps[0].Replace = &debug.Module{Path: "example.com/fork", Version: "v1.0.0", Sum: "h1:xyz="}
		},
		"the Go version": func(b *debug.BuildInfo) { b.GoVersion = "go1.26.9" },
		"GOARCH":         func(b *debug.BuildInfo) { b.Settings[1].Value = "arm64" },
	} {
		b := buildInfo()
		mod(b)
		changed(t, name, base, cellKeys(t, src, b), all)
	}
	changed(t, "GODEBUG set", base, cellKeysEnv(t, src, bi, "asynctimerchan=1"), all)
	b := buildInfo()
	b.Settings[2].Value, b.Settings[3].Value = "5678", "false"
	changed(t, "vcs stamps", base, cellKeys(t, src, b), none)
}

// A design file loses its own key, and becomes every lock's, as soon as
// something outside it can see or feel it.
func TestDesignFilesShared(t *testing.T) {
	src := sources(t)
	const f = "locks/catalogue/setnxexpire.go"
	for name, m := range map[string]fstest.MapFS{
		"its type used by another file":                   edit(src, "locks/catalogue/registry.go", "\nvar _ = SetNXExpire{}\n"),
		"its type used by another package":                edit(src, "sim/bubble.go", "\n// SetNXExpire\n\nvar SetNXExpire = 1\n"),
		"an init statement other than Register":           edit(src, f, "\nfunc init() { println() }\n"),
		"a method on another file's type":                 edit(src, f, "\nfunc (l *SetNXCAD) Edited() {}\n"),
		"a blank variable":                                edit(src, f, "\nvar _ = 1\n"),
		"an initialiser calling its own function":         edit(src, f, "\nvar edited = editedF()\n\nfunc editedF() int { return 1 }\n"),
		"an initialiser calling another package":          edit(src, f, "\nvar edited = fmt.Sprint()\n"),
		"a linkname":                                      edit(src, f, "\n//go:linkname x y\n"),
		"Configure (run at init) calling another package": replace(t, src, f, `ttl := v.Duration("ttl")`, `ttl := v.Duration("ttl"); os.Setenv("x", "y")`),
	} {
		owned, err := designFiles(m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if l, ok := owned[f]; ok {
			t.Errorf("%s: %s still owned by %v", name, f, l)
		}
	}
	// A function of the package that writes package state: an owned file
	// whose initialisers call the package's helpers is shared.
	m := edit(src, "locks/catalogue/registry.go", "\nvar edited int\n\nfunc editedF() { edited++ }\n")
	owned, err := designFiles(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := owned[f]; ok {
		t.Errorf("with a package-state writer, %s (whose registration calls ttlParam at init) is still owned", f)
	}
	// A file that does not parse is an error, never a guess.
	if _, err := designFiles(edit(src, f, "\nfunc {\n")); err == nil {
		t.Error("a catalogue file that does not parse gave no error")
	}
}

// The sources speak for a build only when locksim is the main module and
// every dependency is named by a sum.
func TestSourcesSpeak(t *testing.T) {
	if why := sourcesSpeak(buildInfo()); why != "" {
		t.Errorf("locksim's own build: %q", why)
	}
	for name, mod := range map[string]func(*debug.BuildInfo){
		"another main module": func(b *debug.BuildInfo) { b.Main.Path = "example.com/userlock" },
		"a local replacement": func(b *debug.BuildInfo) {
			b.Deps[0].Replace = &debug.Module{Path: "../go-redis"}
		},
	} {
		b := buildInfo()
		mod(b)
		if why := sourcesSpeak(b); why == "" {
			t.Errorf("%s: the sources are said to speak for the build", name)
		}
	}
	if sourcesSpeak(nil) == "" {
		t.Error("no build information: the sources are said to speak for the build")
	}
}

// A built-in scenario's definition changing (the issue's: no-faults with
// 2 clients) changes the name of the builds that run it, and only of
// those; a lock's own files the same.
func TestIdentRuns(t *testing.T) {
	src := sources(t)
	a, err := identify(src, nil, buildInfo(), "")
	if err != nil {
		t.Fatal(err)
	}
	f := src["scenarios/builtin/no-faults.yaml"]
	if f == nil {
		t.Fatal("no built-in no-faults")
	}
	src["scenarios/builtin/no-faults.yaml"] = &fstest.MapFile{Data: append([]byte("# clients: 2\n"), f.Data...)}
	b, err := identify(src, nil, buildInfo(), "")
	if err != nil {
		t.Fatal(err)
	}
	locks := []string{"set-nx-cad", "redlock"}
	if a.Runs("no-faults", locks) == b.Runs("no-faults", locks) {
		t.Error("editing no-faults left its runs' build name unchanged")
	}
	if a.Runs("failover", locks) != b.Runs("failover", locks) {
		t.Error("editing no-faults changed failover's runs' build name")
	}
	if a.Runs("no-faults", locks) != a.Runs("no-faults", []string{"redlock", "set-nx-cad"}) {
		t.Error("the order of the locks changed the name")
	}
	if a.Runs("no-faults", locks) == a.Runs("no-faults", locks[:1]) {
		t.Error("another lock set gave the same name")
	}
	c, _ := identify(src, nil, &debug.BuildInfo{GoVersion: "go1.99", Main: buildInfo().Main}, "")
	if c.Runs("failover", locks) == b.Runs("failover", locks) {
		t.Error("another Go version gave the same name")
	}
}

// The binary's built-in scenarios come from internal/builtinfs, not from
// locksim.Sources: identify given them apart names the build as it does
// with them in the sources' folder, each keyed by its own file; the
// running binary's Ident keys every built-in scenario by its file's
// SHA-256; a file both places is an error, not a silent choice.
func TestIdentBuiltinsApart(t *testing.T) {
	merged := sources(t)
	apart, scens := fstest.MapFS{}, fstest.MapFS{}
	for p, f := range merged {
		if path.Dir(p) == builtinDir && strings.HasSuffix(p, ".yaml") {
			scens[path.Base(p)] = f
		} else {
			apart[p] = f
		}
	}
	a, err := identify(merged, nil, buildInfo(), "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := identify(apart, scens, buildInfo(), "")
	if err != nil {
		t.Fatal(err)
	}
	if a.Build != b.Build {
		t.Error("the built-in scenarios given apart changed Build")
	}
	if len(b.scens) != len(scens) || len(b.scens) < 10 {
		t.Errorf("%d built-in scenarios keyed of %d", len(b.scens), len(scens))
	}
	for n := range scens {
		id := strings.TrimSuffix(n, ".yaml")
		if ha, _ := a.Scenario(id); ha != b.scens[id] {
			t.Errorf("%s: keyed %q apart, %q in the sources", id, b.scens[id], ha)
		}
	}
	this, err := This()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range scenarios.IDs() {
		data, err := fs.ReadFile(builtinfs.Files(), id+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if h, ok := this.Scenario(id); !ok || h != hex.EncodeToString(sum[:]) {
			t.Errorf("the running binary keys %s by %q, not by its file", id, h)
		}
	}
	if _, err := identify(merged, scens, buildInfo(), ""); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a built-in file both in the sources and apart: %v", err)
	}
}
