// Package store is locksim's result store: a folder of content-addressed
// entries, one a finished run, so that a report reruns only the runs whose
// inputs changed.
//
// A run's key (RunKey) is a SHA-256 over everything that decides its
// trace, in parts (Ident): the build (the module's compiled-in sources,
// locksim.Sources, but the built-in scenarios and the designs' own files;
// the dependencies' sums, the Go version and the build settings), the
// lock's own design files (designFiles), the scenario file's bytes
// (built-in or named), and the run's spec in canonical JSON (scenario,
// lock, seed, parameters, pause, faults). So editing one scenario file
// reruns that scenario's runs, editing a design file nothing else can see
// reruns its locks' runs, and any other change reruns everything. When
// the sources cannot speak for the binary (a user's main module, a
// dependency replaced by a local folder) the build is the executable's
// SHA-256: when in doubt, the key changes.
//
// An entry is a file holding a header line with the format and its key,
// the SHA-256 of its payload, and the payload. Get checks the size, the
// key and the checksum: a torn, truncated or corrupt entry is removed and
// reported as a miss (the run is rerun), never trusted. Entries are
// written to a temporary file (named with the writer's pid) and renamed
// into place, so concurrent writers of the same key are harmless. Trim
// bounds the folder's size by removing the least recently used entries (a
// hit refreshes an entry's modification time).
//
// The store only ever removes what it wrote: an entry is a regular file
// named by its key in the folder named by the key's first two digits
// whose first line is the entry header for that key; a temporary file is
// one named .tmp-PID-… there whose writer is gone. Nothing else in the
// folder is read, counted or removed. A store's folder holds the marker
// file .locksim-store (MarkerFile), written when the store is created;
// Open refuses a folder that is not empty and holds no marker (and
// nothing but a store's entries either: an older locksim's store, adopted).
package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Bounds.
const (
	// MaxEntry bounds one entry's file (a run's outcome is under 2 KiB; a
	// drawn timeline's picture a few hundred KiB).
	MaxEntry = 8 << 20
	// DefaultMaxBytes bounds the folder by default: the full report's
	// 75,600 runs take about 300 MiB on a file system of 4 KiB blocks.
	DefaultMaxBytes = 1 << 30
	// blockSize is what an entry is counted as at least (a file system
	// block): many small files cost their blocks, not their bytes.
	blockSize = 4096
	// magic starts every entry's header line.
	magic = "locksim-result 1 "
	// tmpPrefix starts a temporary file's name (then the writer's pid).
	tmpPrefix = ".tmp-"
	// tmpStale is how old a temporary file whose writer is gone must be
	// to be removed; tmpAbandoned how old any temporary file must be (a
	// write takes milliseconds).
	tmpStale, tmpAbandoned = time.Minute, time.Hour
	// refreshAfter is how old a hit's time must be for Get to refresh
	// it: Trim's order is the last use to within this.
	refreshAfter = time.Hour
	// maxTopEntries bounds the names Open reads of a folder without a
	// marker to decide whether it is an older locksim's store (256 key
	// folders and a few more).
	maxTopEntries = 1024
)

// MarkerFile is the file that marks a folder as a result store: Open
// writes it into the folder it creates (or finds empty), and refuses a
// folder that holds other things and no marker. Creating it by hand
// (touch DIR/.locksim-store) adopts a folder; the store still removes
// only its own entries there.
const MarkerFile = ".locksim-store"

// markerText is what Open writes into the marker (any content marks).
const markerText = "locksim result store: entries are DIR/xx/KEY, written and removed by locksim only\n"

// ErrNotStore is Open's error for a folder that is not empty and is not a
// result store.
var ErrNotStore = errors.New("is not a locksim result store")

// Store is an open result store.
type Store struct {
	dir      string
	maxBytes int64
	readOnly bool // OpenReadOnly
}

// DefaultDir is the store's folder under the user's cache directory
// (os.UserCacheDir()/locksim/results).
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "locksim", "results"), nil
}

// Open opens (creating it if needed) the store in dir, bounded to
// maxBytes (0: DefaultMaxBytes). A symbolic link is resolved once: the
// store is its target, trimmed as any other. A folder that exists must be
// a store (its MarkerFile), empty, or hold nothing but a store's entries
// (then it is marked); otherwise the error wraps ErrNotStore and nothing
// is written. Temporary files a killed writer left are removed.
func Open(dir string, maxBytes int64) (*Store, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("result store: %v", err)
		}
	}
	real, marked, err := check(dir)
	if err != nil {
		return nil, err
	}
	if !marked {
		if err := os.WriteFile(filepath.Join(real, MarkerFile), []byte(markerText), 0o644); err != nil {
			return nil, fmt.Errorf("result store: %v", err)
		}
	}
	s := &Store{dir: real, maxBytes: maxBytes}
	s.removeLeftovers()
	return s, nil
}

// OpenReadOnly opens the store in dir for reading only: Get neither
// removes a corrupt entry nor refreshes a hit's time, and nothing is
// created (a dry run writes nothing). A missing dir is an empty store; a
// folder that is not one is Open's error.
func OpenReadOnly(dir string) (*Store, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return &Store{dir: dir, maxBytes: DefaultMaxBytes, readOnly: true}, nil
	}
	real, _, err := check(dir)
	if err != nil {
		return nil, err
	}
	return &Store{dir: real, maxBytes: DefaultMaxBytes, readOnly: true}, nil
}

// check resolves dir (which exists) and says whether it may be a store:
// a folder with the marker (marked), an empty one, or one holding only
// key folders of entries and temporary files (an older locksim's store).
func check(dir string) (real string, marked bool, err error) {
	real, err = filepath.EvalSymlinks(dir)
	if err != nil {
		return "", false, fmt.Errorf("result store: %v", err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", false, fmt.Errorf("result store: %v", err)
	}
	if !st.IsDir() {
		return "", false, fmt.Errorf("result store: %q is not a directory", dir)
	}
	if m, err := os.Lstat(filepath.Join(real, MarkerFile)); err == nil && m.Mode().IsRegular() {
		return real, true, nil
	}
	notStore := func(what string) error {
		return fmt.Errorf("result store: %q %w: it holds %s and no %s file (the store removes its least recently used entries, so it keeps to a folder of its own); choose a new or empty folder, or, to use this one anyway, create %s (the store then still removes only the entries it wrote)",
			dir, ErrNotStore, what, MarkerFile, filepath.Join(dir, MarkerFile))
	}
	f, err := os.Open(real)
	if err != nil {
		return "", false, fmt.Errorf("result store: %v", err)
	}
	defer f.Close()
	top, err := f.ReadDir(maxTopEntries + 1)
	if err != nil && err != io.EOF {
		return "", false, fmt.Errorf("result store: %v", err)
	}
	if len(top) > maxTopEntries {
		return "", false, notStore(fmt.Sprintf("more than %d names", maxTopEntries))
	}
	for _, e := range top {
		if !e.IsDir() || !isKeyDir(e.Name()) {
			return "", false, notStore(fmt.Sprintf("%q", e.Name()))
		}
		files, err := os.ReadDir(filepath.Join(real, e.Name()))
		if err != nil {
			return "", false, fmt.Errorf("result store: %v", err)
		}
		for _, f := range files {
			if !f.Type().IsRegular() || !(isEntryName(e.Name(), f.Name()) || strings.HasPrefix(f.Name(), tmpPrefix)) {
				return "", false, notStore(fmt.Sprintf("%q", filepath.Join(e.Name(), f.Name())))
			}
		}
	}
	return real, false, nil
}

// isKeyDir reports whether name is a key folder's: two lowercase hex
// digits.
func isKeyDir(name string) bool { return len(name) == 2 && ValidKey(name+strings.Repeat("0", 62)) }

// isEntryName reports whether name, in key folder sub, is an entry's.
func isEntryName(sub, name string) bool { return ValidKey(name) && name[:2] == sub }

// Dir is the store's folder (a link resolved).
func (s *Store) Dir() string { return s.dir }

// ValidKey reports whether key is a key: 64 lowercase hex digits.
func ValidKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	for _, c := range key {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *Store) path(key string) string { return filepath.Join(s.dir, key[:2], key) }

// Get returns the payload stored under key. A missing entry is a miss; an
// entry that is too large, truncated, for another key or whose checksum
// fails is removed and is a miss too (corrupt reports that it was). A
// file under the entry's name that is not one (no entry header, not a
// regular file) is a corrupt miss but is left alone.
func (s *Store) Get(key string) (payload []byte, ok, corrupt bool) {
	if !ValidKey(key) {
		return nil, false, false
	}
	p := s.path(key)
	f, err := os.Open(p)
	if err != nil {
		return nil, false, false
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, false, err == nil
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxEntry+1))
	f.Close()
	if err != nil {
		return nil, false, false
	}
	payload, err = Decode(key, data)
	if err != nil {
		if !s.readOnly && ours(data) {
			os.Remove(p)
		}
		return nil, false, true
	}
	if now := time.Now(); !s.readOnly && now.Sub(st.ModTime()) > refreshAfter {
		// Least recently used goes first (Trim); an entry used within
		// refreshAfter is not written again (a warm report's tens of
		// thousands of hits would each write its inode).
		os.Chtimes(p, now, now)
	}
	return payload, true, false
}

// Remove removes key's entry (one found wrong after it decoded: its run
// did not give what it holds), if it is one.
func (s *Store) Remove(key string) {
	if s.readOnly || !ValidKey(key) {
		return
	}
	if p := s.path(key); hasHeader(p, key) {
		os.Remove(p)
	}
}

// ours reports whether data begins as an entry written by a store does
// (its magic, or a torn piece of it).
func ours(data []byte) bool {
	n := min(len(data), len(magic))
	return bytes.Equal(data[:n], []byte(magic[:n]))
}

// Encode is the entry holding payload under key.
func Encode(key string, payload []byte) []byte {
	h := sha256.Sum256(payload)
	var b bytes.Buffer
	b.WriteString(magic + key + "\n" + hex.EncodeToString(h[:]) + "\n")
	b.Write(payload)
	return b.Bytes()
}

// Decode checks an entry's bytes, read from key's file, and returns its
// payload.
func Decode(key string, data []byte) ([]byte, error) {
	if len(data) > MaxEntry {
		return nil, errors.New("entry too large")
	}
	header, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(header) != magic+key {
		return nil, errors.New("bad header")
	}
	sum, payload, ok := bytes.Cut(rest, []byte("\n"))
	if !ok || len(sum) != 64 {
		return nil, errors.New("bad checksum line")
	}
	h := sha256.Sum256(payload)
	if hex.EncodeToString(h[:]) != string(sum) {
		return nil, errors.New("checksum mismatch")
	}
	return payload, nil
}

// Put stores payload under key (replacing any entry). A payload too large
// for an entry is not stored.
func (s *Store) Put(key string, payload []byte) error {
	if s.readOnly {
		return errors.New("result store: opened read-only")
	}
	if !ValidKey(key) {
		return fmt.Errorf("result store: bad key %q", key)
	}
	b := Encode(key, payload)
	if len(b) > MaxEntry {
		return nil
	}
	p := s.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("result store: %v", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), tmpPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return fmt.Errorf("result store: %v", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("result store: %v", err)
	}
	return nil
}

// entry is one of the store's entries, as Trim counts it.
type entry struct {
	path string
	mod  time.Time
	size int64
}

// walk calls fn with each regular file in the store's key folders (sub:
// the folder's name); nothing else in the store's folder is looked at.
func (s *Store) walk(fn func(sub string, f fs.DirEntry)) error {
	top, err := os.ReadDir(s.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range top {
		if !e.IsDir() || !isKeyDir(e.Name()) { // a link is not a folder here
			continue
		}
		files, err := os.ReadDir(filepath.Join(s.dir, e.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			if f.Type().IsRegular() {
				fn(e.Name(), f)
			}
		}
	}
	return nil
}

// removeLeftovers removes the temporary files writers that are gone left
// (a killed report's).
func (s *Store) removeLeftovers() {
	now := time.Now()
	s.walk(func(sub string, f fs.DirEntry) {
		if strings.HasPrefix(f.Name(), tmpPrefix) {
			if info, err := f.Info(); err == nil && leftover(f.Name(), info.ModTime(), now) {
				os.Remove(filepath.Join(s.dir, sub, f.Name()))
			}
		}
	})
}

// leftover reports whether the temporary file name, last written at mod,
// is a dead writer's: older than tmpStale and its pid (.tmp-PID-…) is no
// live process, or older than tmpAbandoned whoever wrote it (a pid of
// another pid namespace sharing the folder cannot be asked).
func leftover(name string, mod, now time.Time) bool {
	if !tmpName(name) {
		return false // not a name the store's writers make: the user's
	}
	age := now.Sub(mod)
	if age > tmpAbandoned {
		return true
	}
	if age <= tmpStale {
		return false
	}
	digits, _, ok := strings.Cut(strings.TrimPrefix(name, tmpPrefix), "-")
	pid, err := strconv.Atoi(digits)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	return !alive(pid)
}

// tmpName reports whether name is one the store's writers give their
// temporary files: .tmp-PID-DIGITS (os.CreateTemp's pattern, write), or
// .tmp-DIGITS as stores before the pid was in the name wrote them.
func tmpName(name string) bool {
	rest, ok := strings.CutPrefix(name, tmpPrefix)
	if !ok {
		return false
	}
	pid, random, two := strings.Cut(rest, "-")
	if !two {
		return digitsOnly(pid)
	}
	return digitsOnly(pid) && digitsOnly(random)
}

func digitsOnly(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// alive reports whether process pid exists (one of another user's counts).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// hasHeader reports whether the file at p begins with key's entry header.
func hasHeader(p, key string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	want := magic + key + "\n"
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(f, buf); err != nil {
		return false
	}
	return string(buf) == want
}

// footprint is what an entry of info occupies: its blocks (at least one),
// never more than its bytes rounded up to blocks (a sparse file's
// apparent size is not what it takes).
func footprint(info fs.FileInfo) int64 {
	n := (info.Size() + blockSize - 1) / blockSize * blockSize
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		n = min(n, int64(st.Blocks)*512)
	}
	return max(blockSize, n)
}

// Trim removes the least recently used entries (and the temporary files
// of writers that are gone) until the store's entries hold at most its
// bound; it returns how many entries it removed and the bytes it counts
// the store's entries at after. Only the store's own entries are counted
// (at their allocated blocks: a sparse file counts as what it takes) and
// removed: files named as its entries whose header is an entry's; nothing
// else in the folder is either. (The headers are read only when the names
// count over the bound: reading 75,000 of them at every report's end
// would cost seconds.)
func (s *Store) Trim() (removed int, size int64, err error) {
	if s.readOnly {
		return 0, 0, errors.New("result store: opened read-only")
	}
	var ents []entry
	now := time.Now()
	err = s.walk(func(sub string, f fs.DirEntry) {
		p := filepath.Join(s.dir, sub, f.Name())
		info, err := f.Info()
		if err != nil {
			return
		}
		if strings.HasPrefix(f.Name(), tmpPrefix) {
			if leftover(f.Name(), info.ModTime(), now) {
				os.Remove(p)
			}
			return
		}
		if !isEntryName(sub, f.Name()) {
			return
		}
		n := footprint(info)
		ents = append(ents, entry{p, info.ModTime(), n})
		size += n
	})
	if err != nil {
		return 0, size, fmt.Errorf("result store: %v", err)
	}
	if size <= s.maxBytes {
		return 0, size, nil
	}
	// Over the bound: count again only the files whose header is an
	// entry's, the only ones ever removed.
	ents = slices.DeleteFunc(ents, func(e entry) bool {
		if hasHeader(e.path, filepath.Base(e.path)) {
			return false
		}
		size -= e.size
		return true
	})
	slices.SortFunc(ents, func(a, b entry) int { return a.mod.Compare(b.mod) })
	for _, e := range ents {
		if size <= s.maxBytes {
			break
		}
		if os.Remove(e.path) == nil {
			removed++
			size -= e.size
		}
	}
	return removed, size, nil
}
