package locktest_test

import (
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

// network is the network's fault kinds: delay, partition, loss. A correct
// lock tolerates them; a lock found unsafe under them alone has a bug of
// its own, not the pause or clock problem every lease lock has.
var network = []faults.Kind{faults.Delay, faults.Partition, faults.Loss}

// found runs the search and reports after how many schedules it found a
// violation (0: none).
func found(t *testing.T, f locktest.Factory, o locktest.Options) int {
	t.Helper()
	failed := locktest.Find(t, f, o)
	if failed == nil {
		return 0
	}
	t.Logf("found after %d schedules:\n%s", failed.Tried, locktest.Describe(t, *failed))
	return failed.Tried
}

// The search is sized by Options.TTL: a watchdog that believes its failed
// renewals, with a 20 s lease, is found under client pauses alone
// (ttlPauses' budget). Before pauses were drawn relative to the TTL they
// stayed ≤ 15 s, shorter than the lease, and 100 pause schedules found
// nothing; now the shrunk counterexample holds a pause longer than the
// lease.
func TestTTLSizesPauses(t *testing.T) {
	failed := locktest.Find(t, newWatchdogLock(true), ttlPauses)
	if failed == nil {
		t.Fatalf("a watchdog that believes failed renewals passed %d pause schedules with a 20 s TTL", ttlPauses.Checks)
	}
	longest := time.Duration(0)
	for _, f := range failed.Faults {
		longest = max(longest, f.Duration)
	}
	if longest <= 15*time.Second {
		t.Errorf("the counterexample's longest pause is %v: not beyond the old 15 s cap\n%s", longest, locktest.Describe(t, *failed))
	}
	t.Logf("found after %d schedules; shrunk to %v", failed.Tried, failed.Faults)
}

// Clock jumps are drawn relative to the TTL and land on nodes half the
// time: a correct single-node lock (SET NX PX, compare-and-delete) is
// found unsafe under clock jumps alone (a forward jump on its node expires
// the key while the holder still believes in it). Before, jumps were
// mostly tiny and 100 schedules found nothing.
func TestClockJumpsBreakSingleNode(t *testing.T) {
	if n := found(t, newMyLock(true, false), clockJumps); n == 0 {
		t.Fatalf("a single-node lock passed %d clock-jump schedules", clockJumps.Checks)
	}
}

// Correct locks pass the network's faults (delay, partition, loss) alone,
// with the careful workload and critical sections up to 1.5 × the TTL: the
// control for the lease-boundary tests below.
func TestCorrectLocksPassNetworkFaults(t *testing.T) {
	for _, c := range []struct {
		name string
		f    locktest.Factory
		o    locktest.Options
	}{
		{"single-node", newMyLock(true, false), locktest.Options{}},
		{"redlock", newRedlockLock(false), locktest.Options{Topology: locks.Independent}},
		{"watchdog-20s", newWatchdogLock(false), locktest.Options{TTL: 20 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.Kinds = network
			locktest.Check(t, c.f, c.o)
		})
	}
}

// A Redlock that counts its validity from the end of the acquisition
// (forgetting the time it took: the classic Redlock bug) is found with
// network faults alone: a slow acquisition makes its belief outlive the
// keys, and a careful holder that works up to that belief overlaps the
// next holder. Before (critical sections of at most 1 s, a careless
// workload), 100 schedules found nothing.
func TestRedlockForgettingElapsedIsFound(t *testing.T) {
	if n := found(t, newRedlockLock(true), redlockNetwork); n == 0 {
		t.Fatalf("a Redlock that forgets the elapsed acquisition time passed %d network-fault schedules", redlockNetwork.Checks)
	}
}

// A release by GET, compare, then DEL (two commands) deletes the next
// holder's key when the lease runs out between them: found with network
// faults alone once critical sections reach the lease's end. It is a
// narrow race: 2.2-2.5% of schedules hit it (TestSearchPower), so the
// search gets 800.
func TestGetCompareDelIsFound(t *testing.T) {
	failed := locktest.Find(t, newGetDelLock, getDelNetwork)
	if failed == nil {
		t.Fatalf("a GET-compare-DEL release passed %d network-fault schedules", getDelNetwork.Checks)
	}
	if failed.Check.OwnershipViolations == 0 {
		t.Errorf("want an ownership violation (a DEL of another holder's key): %v", failed.Check.Reasons)
	}
}
