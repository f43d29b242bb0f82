package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/locksim/locksim"
	"github.com/locksim/locksim/internal/builtinfs"
)

// modulePath is locksim's module: its sources are compiled in
// (locksim.Sources) only when it is the main module.
const modulePath = "github.com/locksim/locksim"

// builtinDir holds the built-in scenarios, keyed one file each.
const builtinDir = builtinfs.Dir

// Ident names what a build compiled in that can change a run's trace, in
// parts, so that a change reruns only the runs it can reach:
//
//   - Build: every compiled source file of the module but the built-in
//     scenarios and the designs' own files, the module's dependencies
//     (path, version and sum of each, and its replacement), the Go
//     version and the build settings (GOOS, GOARCH, -tags, -ldflags,
//     CGO_ENABLED, ...; not the vcs.* stamps, which the sources replace);
//   - one part a lock: its own design files (designFiles);
//   - one part a built-in scenario: its file's bytes.
//
// When the sources cannot speak for the build (locksim is not the main
// module: a user's program whose own code is not here; a dependency
// replaced by a local folder, which no sum names; no build information)
// Build is the SHA-256 of the executable file itself and the other parts
// are empty: any change reruns everything. How says which it is.
type Ident struct {
	Build string
	How   string
	locks map[string]string // lock id → SHA-256 of its own files
	scens map[string]string // built-in id → SHA-256 of its file
}

// Lock is the part of the key for lock id ("" when none of its code is
// in files of its own: then all of it is in Build).
func (id *Ident) Lock(lock string) string { return id.locks[lock] }

// Scenario is the part of the key for built-in scenario sid (its file's
// SHA-256), and whether the sources hold it.
func (id *Ident) Scenario(sid string) (string, bool) {
	h, ok := id.scens[sid]
	return h, ok
}

var this struct {
	once sync.Once
	id   *Ident
	err  error
}

// This is the running binary's Ident (computed once).
func This() (*Ident, error) {
	this.once.Do(func() {
		bi, _ := debug.ReadBuildInfo()
		if why := sourcesSpeak(bi); why == "" {
			this.id, this.err = identify(locksim.Sources, builtinfs.Files(), bi, os.Getenv("GODEBUG"))
			if this.err == nil {
				return
			}
		}
		this.id, this.err = exeIdent()
	})
	return this.id, this.err
}

// BuildID is This's Build and How.
func BuildID() (id, how string, err error) {
	i, err := This()
	if err != nil {
		return "", "", err
	}
	return i.Build, i.How, nil
}

// sourcesSpeak says why the embedded sources cannot name this build (""
// when they can).
func sourcesSpeak(bi *debug.BuildInfo) string {
	if bi == nil {
		return "no build information"
	}
	if bi.Main.Path != modulePath {
		return "the main module is " + bi.Main.Path
	}
	for _, d := range bi.Deps {
		if d.Replace != nil && d.Replace.Sum == "" {
			return d.Path + " is replaced by a local folder"
		}
	}
	return ""
}

// exeIdent names the build by the executable's SHA-256.
func exeIdent() (*Ident, error) {
	fail := func(err error) (*Ident, error) {
		return nil, fmt.Errorf("result store: cannot name this build: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fail(err)
	}
	return &Ident{Build: hex.EncodeToString(h.Sum(nil)), How: "the executable's SHA-256"}, nil
}

// identify names a build from its sources src (slash paths from the
// module root) and the built-in scenario files scens (at its root; they
// are read as if in src's builtinDir; nil: src holds them there), its
// build information bi and the GODEBUG the process runs with (which can
// change the runtime's timers and so a library's behaviour; the build's
// default is in bi.Settings).
func identify(src, scens fs.FS, bi *debug.BuildInfo, godebug string) (*Ident, error) {
	owned, err := designFiles(src)
	if err != nil {
		return nil, fmt.Errorf("result store: reading the compiled-in sources: %v", err)
	}
	id := &Ident{locks: map[string]string{}, scens: map[string]string{}}
	build := sha256.New()
	fmt.Fprintf(build, "locksim build 2\ngo %s\nGODEBUG %q\n", bi.GoVersion, godebug)
	for _, s := range bi.Settings {
		if !strings.HasPrefix(s.Key, "vcs.") {
			fmt.Fprintf(build, "setting %q %q\n", s.Key, s.Value)
		}
	}
	for _, d := range bi.Deps {
		fmt.Fprintf(build, "dep %q %q %q\n", d.Path, d.Version, d.Sum)
		if r := d.Replace; r != nil {
			fmt.Fprintf(build, "replaced %q %q %q\n", r.Path, r.Version, r.Sum)
		}
	}
	lockFiles := map[string][]string{} // lock id → its own files, sorted
	var files []string
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("result store: reading the compiled-in sources: %v", err)
	}
	if scens != nil {
		names, err := fs.Glob(scens, "*.yaml")
		if err != nil {
			return nil, fmt.Errorf("result store: reading the built-in scenarios: %v", err)
		}
		for _, n := range names {
			if _, err := fs.Stat(src, builtinDir+"/"+n); err == nil {
				return nil, fmt.Errorf("result store: %s/%s is compiled in twice", builtinDir, n)
			}
			files = append(files, builtinDir+"/"+n)
		}
	}
	slices.Sort(files)
	compiled := 0
	for _, p := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue // not compiled into the binary
		}
		compiled++
		isScen := path.Dir(p) == builtinDir && strings.HasSuffix(p, ".yaml")
		from, name := src, p
		if isScen && scens != nil {
			from, name = scens, path.Base(p)
		}
		data, err := fs.ReadFile(from, name)
		if err != nil {
			return nil, fmt.Errorf("result store: reading the compiled-in sources: %v", err)
		}
		switch {
		case isScen:
			h := sha256.Sum256(data)
			id.scens[strings.TrimSuffix(path.Base(p), ".yaml")] = hex.EncodeToString(h[:])
		case owned[p] != nil:
			for _, l := range owned[p] {
				lockFiles[l] = append(lockFiles[l], p)
			}
		default:
			fmt.Fprintf(build, "file %q %d\n", p, len(data))
			build.Write(data)
		}
	}
	for l, ps := range lockFiles {
		h := sha256.New()
		for _, p := range ps {
			data, _ := fs.ReadFile(src, p)
			fmt.Fprintf(h, "file %q %d\n", p, len(data))
			h.Write(data)
		}
		id.locks[l] = hex.EncodeToString(h.Sum(nil))
	}
	id.Build = hex.EncodeToString(build.Sum(nil))
	id.How = fmt.Sprintf("the compiled-in sources (%d files; %d locks keyed by their own files, each built-in scenario by its file), the dependencies' sums, %s and the build settings",
		compiled, len(id.locks), bi.GoVersion)
	return id, nil
}

// Runs names what of the build id can decide the runs of scenario (a
// built-in id or a scenario file's path, whose bytes the caller names)
// with locks: Build, each lock's own files and a built-in scenario's
// file, hashed. Two builds of one name give the same runs of them (a
// sweep's shards must: sweep.Spec.Build).
func (id *Ident) Runs(scenario string, locks []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "locksim runs 1\nbuild %s\n", id.Build)
	if sc, ok := id.Scenario(scenario); ok {
		fmt.Fprintf(h, "scenario %q %s\n", scenario, sc)
	}
	for _, l := range slices.Sorted(slices.Values(locks)) {
		fmt.Fprintf(h, "lock %q %s\n", l, id.Lock(l))
	}
	return hex.EncodeToString(h.Sum(nil))
}
