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
// written to a temporary file and renamed into place, so concurrent
// writers of the same key are harmless. Trim bounds the folder's size by
// removing the least recently used entries (a hit refreshes an entry's
// modification time).
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
	"strings"
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
)

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
// maxBytes (0: DefaultMaxBytes).
func Open(dir string, maxBytes int64) (*Store, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("result store: %v", err)
	}
	return &Store{dir: dir, maxBytes: maxBytes}, nil
}

// OpenReadOnly opens the store in dir for reading only: Get neither
// removes a corrupt entry nor refreshes a hit's time, and nothing is
// created (a dry run writes nothing). A missing dir is an empty store.
func OpenReadOnly(dir string) *Store {
	return &Store{dir: dir, maxBytes: DefaultMaxBytes, readOnly: true}
}

// Dir is the store's folder.
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
// fails is removed and is a miss too (corrupt reports that it was).
func (s *Store) Get(key string) (payload []byte, ok, corrupt bool) {
	if !ValidKey(key) {
		return nil, false, false
	}
	p := s.path(key)
	f, err := os.Open(p)
	if err != nil {
		return nil, false, false
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxEntry+1))
	f.Close()
	if err != nil {
		return nil, false, false
	}
	payload, err = decode(key, data)
	if err != nil {
		if !s.readOnly {
			os.Remove(p)
		}
		return nil, false, true
	}
	if !s.readOnly {
		now := time.Now()
		os.Chtimes(p, now, now) // least recently used goes first (Trim)
	}
	return payload, true, false
}

// decode checks an entry's bytes and returns its payload.
func decode(key string, data []byte) ([]byte, error) {
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
	h := sha256.Sum256(payload)
	var b bytes.Buffer
	b.WriteString(magic + key + "\n" + hex.EncodeToString(h[:]) + "\n")
	b.Write(payload)
	if b.Len() > MaxEntry {
		return nil
	}
	p := s.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("result store: %v", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-")
	if err != nil {
		return fmt.Errorf("result store: %v", err)
	}
	_, err = f.Write(b.Bytes())
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

// Trim removes the least recently used entries (and torn temporary files
// older than an hour) until the store holds at most its bound; it returns
// how many entries it removed and the bytes it counts the store at after.
func (s *Store) Trim() (removed int, size int64, err error) {
	if s.readOnly {
		return 0, 0, errors.New("result store: opened read-only")
	}
	type ent struct {
		path string
		mod  time.Time
		size int64
	}
	var ents []ent
	stale := time.Now().Add(-time.Hour)
	err = filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".tmp-") {
			if info.ModTime().Before(stale) {
				os.Remove(p)
			}
			return nil
		}
		n := max(blockSize, (info.Size()+blockSize-1)/blockSize*blockSize)
		ents = append(ents, ent{p, info.ModTime(), n})
		size += n
		return nil
	})
	if err != nil {
		return 0, size, err
	}
	if size <= s.maxBytes {
		return 0, size, nil
	}
	slices.SortFunc(ents, func(a, b ent) int { return a.mod.Compare(b.mod) })
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
