package store

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/run"
)

// foreign fills dir with files no store wrote (the issue's: a big sparse
// file, notes, six 600 KB files) and returns their paths.
func foreign(t *testing.T, dir string) []string {
	t.Helper()
	img := filepath.Join(dir, "vm-backup.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Truncate(img, 1200<<20); err != nil {
		t.Fatal(err)
	}
	paths := []string{img}
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	write("notes.txt", []byte("x\n"))
	for i := range 6 {
		write("photo"+strconv.Itoa(i)+".jpg", make([]byte, 600_000))
	}
	// Under a key folder, named like an entry but holding none, and a
	// file that is no entry's name.
	k := key(t, run.Spec{Scenario: "no-faults", Lock: "redlock", Seed: 99})
	write(filepath.Join(k[:2], k), []byte("my own file\n"))
	write(filepath.Join(k[:2], "README"), []byte("mine\n"))
	return paths
}

func survive(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("a file the store did not write is gone: %v", err)
		}
	}
}

// putN stores n small entries, the i-th last used at second i of 2026.
func putN(t *testing.T, s *Store, n int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		k := key(t, run.Spec{Scenario: "no-faults", Lock: "set-nx-cad", Seed: uint64(i + 1)})
		if err := s.Put(k, []byte(strings.Repeat("x", 100))); err != nil {
			t.Fatal(err)
		}
		old := time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)
		os.Chtimes(s.path(k), old, old)
		keys = append(keys, k)
	}
	return keys
}

// A folder holding files of the user's is refused (naming it and how to
// use it anyway), and nothing is written into it.
func TestOpenRefusesForeignFolder(t *testing.T) {
	dir := t.TempDir()
	paths := foreign(t, dir)
	for name, open := range map[string]func() error{
		"Open":         func() error { _, err := Open(dir, 1<<20); return err },
		"OpenReadOnly": func() error { _, err := OpenReadOnly(dir); return err },
	} {
		err := open()
		if !errors.Is(err, ErrNotStore) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), MarkerFile) {
			t.Errorf("%s of a folder of the user's: %v; want ErrNotStore naming %s and %s", name, err, dir, MarkerFile)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, MarkerFile)); !os.IsNotExist(err) {
		t.Error("the refused folder was marked")
	}
	survive(t, paths)
	file := filepath.Join(dir, "notes.txt")
	if _, err := Open(file, 0); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Open of a file: %v", err)
	}
}

// In a folder adopted by its marker, Trim counts and removes only the
// store's own entries: the user's files (a 1.2 GB sparse one among them)
// survive any bound, and do not count against it.
func TestTrimOnlyOwnEntries(t *testing.T) {
	dir := t.TempDir()
	paths := foreign(t, dir)
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, 1<<20) // --cache-max-mib 1
	if err != nil {
		t.Fatal(err)
	}
	keys := putN(t, s, 5)
	removed, _, err := s.Trim()
	if err != nil || removed != 0 {
		t.Fatalf("Trim = %d removed, %v; want none", removed, err)
	}
	survive(t, paths)
	// At a bound of the 5 entries, the file named as an entry but holding
	// none does not count: nothing goes.
	s.maxBytes = 5 * blockSize
	removed, size, err := s.Trim()
	if err != nil || removed != 0 || size != 5*blockSize {
		t.Fatalf("Trim to 5 blocks = %d removed, %d bytes, %v; want 0 removed, %d bytes (the store's 5 entries only)", removed, size, err, 5*blockSize)
	}
	s.maxBytes = 3 * blockSize
	removed, size, err = s.Trim()
	if err != nil || removed != 2 || size != 3*blockSize {
		t.Fatalf("Trim to 3 blocks = %d removed, %d bytes, %v; want 2, %d", removed, size, err, 3*blockSize)
	}
	for i, k := range keys {
		if _, ok, _ := s.Get(k); ok != (i >= 2) {
			t.Errorf("entry %d kept %v, want %v", i, ok, i >= 2)
		}
	}
	survive(t, paths)
	// A file under an entry's name holding no entry is a miss, left alone.
	k := key(t, run.Spec{Scenario: "no-faults", Lock: "redlock", Seed: 99})
	if _, ok, _ := s.Get(k); ok {
		t.Error("a file of the user's was taken for an entry")
	}
	survive(t, paths)
}

// --cache LINK and --cache LINK/ are the same store: the link's target,
// trimmed to its bound.
func TestSymlinkedStore(t *testing.T) {
	target := filepath.Join(t.TempDir(), "results")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(target, 0); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{link, link + "/"} {
		s, err := Open(dir, 3*blockSize)
		if err != nil {
			t.Fatal(err)
		}
		if s.Dir() != target {
			t.Errorf("Open(%q).Dir() = %q, want the target %q", dir, s.Dir(), target)
		}
		putN(t, s, 5)
		removed, size, err := s.Trim()
		if err != nil || removed != 2 || size != 3*blockSize {
			t.Errorf("Open(%q).Trim = %d removed, %d bytes, %v; want 2, %d", dir, removed, size, err, 3*blockSize)
		}
	}
}

// A store an older locksim wrote (no marker, nothing but entries) is
// adopted and marked.
func TestOpenAdoptsUnmarkedStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	putN(t, s, 3)
	os.WriteFile(filepath.Join(dir, "ab", tmpPrefix+"12345"), []byte("torn"), 0o644)
	os.Remove(filepath.Join(dir, MarkerFile))
	if _, err := OpenReadOnly(dir); err != nil {
		t.Fatalf("read-only open of an unmarked store: %v", err)
	}
	if _, err := Open(dir, 0); err != nil {
		t.Fatalf("Open of an unmarked store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, MarkerFile)); err != nil {
		t.Errorf("the adopted store was not marked: %v", err)
	}
}

// Open removes the temporary files of writers that are gone, and only
// those: not a live writer's, not a recent one's, not a file that is no
// temporary of the store's.
func TestOpenRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, 0); err != nil {
		t.Fatal(err)
	}
	const dead = 2147483646 // past any pid_max: no such process
	now := time.Now()
	sub := filepath.Join(dir, "ab")
	os.Mkdir(sub, 0o755)
	files := map[string]struct {
		age  time.Duration
		gone bool
	}{
		tmpPrefix + strconv.Itoa(dead) + "-1":        {2 * tmpStale, true},  // a killed writer's
		tmpPrefix + strconv.Itoa(dead) + "-2":        {tmpStale / 2, false}, // too recent to judge
		tmpPrefix + strconv.Itoa(os.Getpid()) + "-3": {2 * tmpStale, false}, // a live writer's
		tmpPrefix + "4": {2 * tmpStale, false}, // no pid: only after an hour
		tmpPrefix + "5": {2 * tmpAbandoned, true},
		"notes" + tmpPrefix + strconv.Itoa(dead) + "-": {2 * tmpAbandoned, false},
		tmpPrefix + "mynotes":                          {2 * tmpAbandoned, false}, // the user's file of a like name
		tmpPrefix + strconv.Itoa(dead) + "-notes":      {2 * tmpAbandoned, false},
	}
	for name, f := range files {
		p := filepath.Join(sub, name)
		os.WriteFile(p, []byte("torn"), 0o644)
		os.Chtimes(p, now.Add(-f.age), now.Add(-f.age))
	}
	top := filepath.Join(dir, tmpPrefix+strconv.Itoa(dead)+"-6") // not in a key folder
	os.WriteFile(top, nil, 0o644)
	os.Chtimes(top, now.Add(-2*tmpAbandoned), now.Add(-2*tmpAbandoned))
	if _, err := Open(dir, 0); err != nil {
		t.Fatal(err)
	}
	for name, f := range files {
		_, err := os.Stat(filepath.Join(sub, name))
		if gone := os.IsNotExist(err); gone != f.gone {
			t.Errorf("%s: removed %v, want %v", name, gone, f.gone)
		}
	}
	if _, err := os.Stat(top); err != nil {
		t.Errorf("a file outside the key folders was removed: %v", err)
	}
}
