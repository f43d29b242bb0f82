package store

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

var buildA, buildB = &Ident{Build: "build-a"}, &Ident{Build: "build-b"}

func key(t *testing.T, spec run.Spec) string {
	t.Helper()
	k, err := RunKey(buildA, spec, "outcome")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestPutGet(t *testing.T) {
	s, err := Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	k := key(t, run.Spec{Scenario: "no-faults", Lock: "redlock", Seed: 1})
	if _, ok, _ := s.Get(k); ok {
		t.Fatal("hit in an empty store")
	}
	if err := s.Put(k, []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	got, ok, corrupt := s.Get(k)
	if !ok || corrupt || string(got) != `{"x":1}` {
		t.Fatalf("Get = %q, %v, %v", got, ok, corrupt)
	}
}

// Every way an entry can be damaged is a miss, reported as corrupt, and
// the entry is gone (the run is rerun and stored again).
func TestCorruptEntries(t *testing.T) {
	payload := []byte(`{"outcome":{"verdict":"safe","trace_sha256":"ab"},"cpu_ns":5}`)
	for name, damage := range map[string]func([]byte) []byte{
		"flipped byte": func(b []byte) []byte { b[len(b)-3] ^= 1; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)-5] },
		"torn header":  func(b []byte) []byte { return b[:20] },
		"empty":        func([]byte) []byte { return nil },
		"other key": func(b []byte) []byte {
			return bytes.Replace(b, []byte(magic), []byte(magic+"0"), 1)
		},
		"too large": func(b []byte) []byte { return append(b, make([]byte, MaxEntry)...) },
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := Open(t.TempDir(), 0)
			k := key(t, run.Spec{Scenario: "no-faults", Lock: "set-nx-cad", Seed: 7})
			if err := s.Put(k, payload); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(s.path(k))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s.path(k), damage(data), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, ok, corrupt := s.Get(k); ok || !corrupt {
				t.Fatalf("damaged entry: Get = %q, ok %v, corrupt %v; want a corrupt miss", got, ok, corrupt)
			}
			if _, err := os.Stat(s.path(k)); !os.IsNotExist(err) {
				t.Fatalf("the corrupt entry is still there (%v)", err)
			}
		})
	}
}

// The key changes with everything that decides a run's trace, and only
// with that.
func TestRunKey(t *testing.T) {
	base := run.Spec{Scenario: "no-faults", Lock: "redlock", Seed: 1}
	k0 := key(t, base)
	if k := key(t, base); k != k0 {
		t.Fatal("the same spec gave two keys")
	}
	pause := 0.5
	seen := map[string]string{k0: "base"}
	for name, s := range map[string]run.Spec{
		"seed":     {Scenario: "no-faults", Lock: "redlock", Seed: 2},
		"lock":     {Scenario: "no-faults", Lock: "set-nx-cad", Seed: 1},
		"scenario": {Scenario: "failover", Lock: "redlock", Seed: 1},
		"param":    {Scenario: "no-faults", Lock: "redlock", Seed: 1, Params: scenarios.Params{Clients: 3}},
		"pause":    {Scenario: "no-faults", Lock: "redlock", Seed: 1, Pause: &pause},
		"fairness": {Scenario: "no-faults", Lock: "redlock", Seed: 1, Fairness: true},
	} {
		k := key(t, s)
		if prev, dup := seen[k]; dup {
			t.Errorf("%s: same key as %s", name, prev)
		}
		seen[k] = name
	}
	if k, _ := RunKey(buildB, base, "outcome"); k == k0 {
		t.Error("another build gave the same key")
	}
	if k, _ := RunKey(buildA, base, "timeline"); k == k0 {
		t.Error("another kind gave the same key")
	}
	// A scenario file: its bytes are in the key.
	dir := t.TempDir()
	f := filepath.Join(dir, "s.yaml")
	os.WriteFile(f, []byte("name: a\n"), 0o644)
	ka := key(t, run.Spec{Scenario: f, Lock: "redlock", Seed: 1})
	os.WriteFile(f, []byte("name: b\n"), 0o644)
	if kb := key(t, run.Spec{Scenario: f, Lock: "redlock", Seed: 1}); kb == ka {
		t.Error("editing the scenario file left its runs' key unchanged")
	}
	if _, err := RunKey(buildA, run.Spec{Scenario: filepath.Join(dir, "missing.yaml")}, "outcome"); err == nil {
		t.Error("a missing scenario file gave a key")
	}
}

func TestBuildID(t *testing.T) {
	id, how, err := BuildID()
	if err != nil || !ValidKey(id) || how == "" {
		t.Fatalf("BuildID = %q, %q, %v", id, how, err)
	}
}

// Trim removes the least recently used entries first, down to the bound.
func TestTrim(t *testing.T) {
	s, _ := Open(t.TempDir(), 3*blockSize)
	var keys []string
	for i := range 5 {
		k := key(t, run.Spec{Scenario: "no-faults", Lock: "redlock", Seed: uint64(i + 1)})
		keys = append(keys, k)
		if err := s.Put(k, []byte(strings.Repeat("x", 100))); err != nil {
			t.Fatal(err)
		}
		old := time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)
		os.Chtimes(s.path(k), old, old)
	}
	s.Get(keys[0]) // used now: the newest
	removed, size, err := s.Trim()
	if err != nil || removed != 2 || size != 3*blockSize {
		t.Fatalf("Trim = %d removed, %d bytes, %v; want 2, %d", removed, size, err, 3*blockSize)
	}
	for i, k := range keys {
		_, ok, _ := s.Get(k)
		if want := i == 0 || i >= 3; ok != want {
			t.Errorf("entry %d kept %v, want %v", i, ok, want)
		}
	}
}

func TestReadOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	s, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(key(t, run.Spec{Lock: "redlock", Seed: 1})); ok {
		t.Fatal("hit in a missing store")
	}
	if err := s.Put(key(t, run.Spec{Lock: "redlock", Seed: 1}), nil); err == nil {
		t.Fatal("a read-only store was written")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("a read-only store created its folder")
	}
}

// A hit refreshes its entry's time only when it is older than
// refreshAfter: a warm report does not write every entry it reads.
func TestGetRefreshesOnlyOldTimes(t *testing.T) {
	s, _ := Open(t.TempDir(), 0)
	recent, old := key(t, run.Spec{Lock: "redlock", Seed: 1}), key(t, run.Spec{Lock: "redlock", Seed: 2})
	for _, k := range []string{recent, old} {
		if err := s.Put(k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	recentTime, oldTime := now.Add(-refreshAfter/2).Truncate(time.Second), now.Add(-2*refreshAfter).Truncate(time.Second)
	os.Chtimes(s.path(recent), recentTime, recentTime)
	os.Chtimes(s.path(old), oldTime, oldTime)
	for _, k := range []string{recent, old} {
		if _, ok, _ := s.Get(k); !ok {
			t.Fatal("miss")
		}
	}
	if st, err := os.Stat(s.path(recent)); err != nil || !st.ModTime().Equal(recentTime) {
		t.Errorf("an entry used %v ago was written again by a hit", refreshAfter/2)
	}
	if st, err := os.Stat(s.path(old)); err != nil || now.Sub(st.ModTime()) > time.Minute {
		t.Errorf("an entry used %v ago kept its time after a hit", 2*refreshAfter)
	}
}
