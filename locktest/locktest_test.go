package locktest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

// A user's broken lock (plain DEL release) is found and shrunk within the
// default budget: the failure names the violation, the seed, a shrunk
// schedule of a few faults, and the repro line.
func TestBrokenUserLockIsFound(t *testing.T) {
	// 300 random schedules, in a shorter world so the search and its
	// shrinking stay quick. About 3–7% of random schedules break this
	// lock (most fault kinds cannot; measured over 300-schedule samples),
	// so 100 would miss it in up to 6% of runs; 300 in fewer than 1 in
	// 3,000 at the low end.
	out := locktest.ExpectUnsafe(t, newMyLock(false, false), locktest.Options{Topology: locks.Single, Checks: 300, Duration: 10 * time.Second, Liveness: 5 * time.Second})
	if out.Check.Verdict != "unsafe" {
		t.Fatalf("verdict %q", out.Check.Verdict)
	}
	if len(out.Faults) > 3 {
		t.Errorf("shrunk schedule has %d faults, want ≤ 3:\n%s", len(out.Faults), locktest.Describe(t, out))
	}
	msg := locktest.Describe(t, out)
	for _, want := range []string{"the lock is unsafe", "shrunk counterexample: seed", "repro: go test -run"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, msg)
		}
	}
}

// The same lock with an owner check and fencing tokens checked by the
// storage passes every random schedule: overlaps may happen, the resource
// stays safe.
func TestCorrectUserLockPasses(t *testing.T) {
	locktest.Check(t, newMyLock(true, true), locktest.Options{Topology: locks.Single, Fencing: locks.FenceMaxToken})
}

// Kleppmann's pause, scripted: a holder pauses before its write for longer
// than the lease. Without fencing the resource breaks; with it, it holds.
func TestKleppmannPause(t *testing.T) {
	pause := []faults.Fault{{Kind: faults.ClientPause, Start: 2 * time.Second, Duration: 8 * time.Second, Targets: []string{"c0"}, At: "before-write"}}
	o := locktest.Options{Topology: locks.Single, Clients: 2}
	var unsafe, fencedSafe int
	for seed := uint64(1); seed <= 10; seed++ {
		if locktest.Run(t, newMyLock(true, false), o, seed, pause).Verdict() == "unsafe" {
			unsafe++
		}
		of := o
		of.Fencing = locks.FenceMaxToken
		if locktest.Run(t, newMyLock(true, true), of, seed, pause).Verdict() != "unsafe" {
			fencedSafe++
		}
	}
	if unsafe == 0 || fencedSafe != 10 {
		t.Fatalf("unfenced unsafe in %d/10 seeds (want > 0), fenced safe in %d/10 (want 10)", unsafe, fencedSafe)
	}
}

// Determinism: the same seed and schedule give the same trace.
func TestDeterministic(t *testing.T) {
	pause := []faults.Fault{{Kind: faults.ClientPause, Start: time.Second, Duration: 5 * time.Second, Targets: []string{"c1"}}}
	a := locktest.Run(t, locktest.Library("redsync"), locktest.Options{Topology: locks.Independent}, 7, pause)
	b := locktest.Run(t, locktest.Library("redsync"), locktest.Options{Topology: locks.Independent}, 7, pause)
	if a.SHA256 != b.SHA256 {
		t.Fatalf("same seed, different traces: %s vs %s", a.SHA256, b.SHA256)
	}
}
