package realcoord

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A ZooKeeper member's wall clock can be stepped while it runs: started
// under libfaketime (Debian's libfaketime 0.9.10, its multithreaded
// build for the JVM), reading its offset from a file of its own once a
// second (FAKETIME_CACHE_DURATION=0: the file is read again when the
// real time's second has changed since the last read, libfaketime.c's
// cache check; a jump lands within a second of the fault). Reading it on
// every call (FAKETIME_NO_CACHE=1) was tried first: three JVMs took
// 26.5 and 29.7 s to serve instead of 2.1 s (TestZKClockJump, 2026-11-27
// 10:15). The monotonic clock is left
// alone (FAKETIME_DONT_FAKE_MONOTONIC=1: a real clock step moves
// CLOCK_REALTIME only; libfaketime fakes CLOCK_MONOTONIC too unless told
// not to, and its README says a JVM usually hangs then). etcd is a Go
// binary, which reads its clock through the vDSO: libfaketime does not
// reach it (docs/CONSENSUS.md, measured).

// fakeTimeLibs are where Debian's libfaketime package puts the library.
var fakeTimeLibs = []string{
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
	"/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
	"/usr/lib/faketime/libfaketimeMT.so.1",
}

// FakeTimeLib returns the path of libfaketimeMT.so.1, or an error naming
// the package to install.
func FakeTimeLib() (string, error) {
	for _, p := range fakeTimeLibs {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("a member clock jump needs libfaketimeMT.so.1 (not found in %v); install with: apt-get install -y libfaketime", fakeTimeLibs)
}

const fakeTimeFile = "faketime.rc"

// fakeClockEnv is the environment a member runs in under libfaketime.
func (m *Member) fakeClockEnv(lib string) []string {
	return append(os.Environ(),
		"LD_PRELOAD="+lib,
		"FAKETIME_TIMESTAMP_FILE="+filepath.Join(m.Dir, fakeTimeFile),
		"FAKETIME_CACHE_DURATION=0",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
		"NO_FAKE_STAT=1", // files' times stay real (libfaketime.c:2696)
		"LC_NUMERIC=C",   // libfaketime reads "+2.5" with strtod
	)
}

// writeOffset writes m's clock offset to its libfaketime file, whole or
// not at all (a new file renamed over the old: the JVM's libfaketime
// reads it again within a second, FAKETIME_CACHE_DURATION).
func (m *Member) writeOffset(d time.Duration) error {
	path := filepath.Join(m.Dir, fakeTimeFile)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%+.6f\n", d.Seconds())), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// JumpClock steps member i's wall clock by d (its offset grows by d; a
// restarted member keeps it, as a machine's clock outlives a process).
func (e *Ensemble) JumpClock(i int, d time.Duration) error {
	if !e.fakeClocks {
		return errors.New("the ensemble's members were not started under libfaketime (StartOptions.FakeClocks)")
	}
	m := e.Members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offset += d
	if err := m.writeOffset(m.offset); err != nil {
		return fmt.Errorf("%s: clock offset: %w", m.Name, err)
	}
	return nil
}

// ResetClocks sets every member's clock offset back to zero (the heal).
func (e *Ensemble) ResetClocks() error {
	if !e.fakeClocks {
		return nil
	}
	var errs []error
	for _, m := range e.Members {
		m.mu.Lock()
		m.offset = 0
		if err := m.writeOffset(0); err != nil {
			errs = append(errs, fmt.Errorf("%s: clock offset: %w", m.Name, err))
		}
		m.mu.Unlock()
	}
	return errors.Join(errs...)
}

// FakeClocks reports whether JumpClock can step the members' clocks.
func (e *Ensemble) FakeClocks() bool { return e.fakeClocks }

// ClockOffset is member i's clock offset now.
func (e *Ensemble) ClockOffset(i int) time.Duration {
	m := e.Members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offset
}
