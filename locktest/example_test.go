package locktest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
	"github.com/locksim/locksim/risk"
)

// kleppmannPause is Kleppmann's scenario: client c0 stops (a GC pause)
// after it decided it holds the lock and before its write, for longer than
// the lease.
func kleppmannPause(d time.Duration) []faults.Fault {
	return []faults.Fault{{Kind: faults.ClientPause, Start: 2 * time.Second, Duration: d, Targets: []string{"c0"}, At: "before-write"}}
}

// A failover that loses the lock key: the primary crashes before its
// replicas (2 s behind) got the key, and Sentinel promotes one 200 ms later,
// while the holder (critical sections of 2-2.5 s) still holds.
func failover() []faults.Fault {
	return []faults.Fault{{Kind: faults.Failover, Start: 3 * time.Second, Duration: 20 * time.Second}}
}

var replicated = locktest.Options{Topology: locks.Replicated, Clients: 3, ReplLag: 2 * time.Second, DownAfter: 200 * time.Millisecond,
	HoldMin: 2 * time.Second, HoldMax: 2500 * time.Millisecond}

// Your own go-redis lock (myLock in mylock_test.go: SET NX PX, release by
// compare-and-delete) under Kleppmann's pause and under a failover, seed 4.
func Example_userLock() {
	locktest.Standalone(func(t *testing.T) {
		o := locktest.Options{Topology: locks.Single, Clients: 2}
		fmt.Println("no faults:", locktest.Run(t, newMyLock(true, false), o, 4, nil).Verdict())
		fmt.Println("Kleppmann's pause:", locktest.Run(t, newMyLock(true, false), o, 4, kleppmannPause(8*time.Second)).Verdict())
		o.Fencing = locks.FenceMaxToken
		fmt.Println("same pause, fencing tokens:", locktest.Run(t, newMyLock(true, true), o, 4, kleppmannPause(8*time.Second)).Verdict())
		fmt.Println("failover:", locktest.Run(t, newMyLock(true, false), replicated, 4, failover()).Verdict())
	})
	// Output:
	// no faults: safe
	// Kleppmann's pause: unsafe
	// same pause, fencing tokens: safe
	// failover: unsafe
}

// github.com/go-redsync/redsync/v4, unmodified, over 5 independent nodes:
// its validity check cannot see a pause that happens after it.
func Example_redsync() {
	locktest.Standalone(func(t *testing.T) {
		o := locktest.Options{Topology: locks.Independent, Clients: 2, TTL: 8 * time.Second}
		fmt.Println("no faults:", locktest.Run(t, locktest.Library("redsync"), o, 1, nil).Verdict())
		fmt.Println("Kleppmann's pause:", locktest.Run(t, locktest.Library("redsync"), o, 1, kleppmannPause(12*time.Second)).Verdict())
	})
	// Output:
	// no faults: safe
	// Kleppmann's pause: unsafe
}

// github.com/bsm/redislock, unmodified, on one node and on a primary with
// async replicas.
func Example_redislock() {
	locktest.Standalone(func(t *testing.T) {
		o := locktest.Options{Topology: locks.Single, Clients: 2}
		fmt.Println("no faults:", locktest.Run(t, locktest.Library("redislock"), o, 1, nil).Verdict())
		fmt.Println("Kleppmann's pause:", locktest.Run(t, locktest.Library("redislock"), o, 1, kleppmannPause(8*time.Second)).Verdict())
		fmt.Println("failover:", locktest.Run(t, locktest.Library("redislock"), replicated, 1, failover()).Verdict())
	})
	// Output:
	// no faults: safe
	// Kleppmann's pause: unsafe
	// failover: unsafe
}

// A built-in scenario with your lock in it: Kleppmann's pause right after
// the lock decided it holds ("pause-after-check", three 1.5 × TTL pauses of
// c0). The pause fires only where the adapter marks the point with
// env.At(locks.PointAfterCheck): the watchdog lock of locks_test.go does,
// myLock does not, and the outcome lists the pauses that never fired.
// (With the scenario's own workload: careless code, short sections.)
func Example_scenario() {
	locktest.Standalone(func(t *testing.T) {
		own := locktest.Options{Workload: locktest.ScenarioWorkload}
		marked := locktest.Scenario(t, "pause-after-check", newWatchdogLock(false), own, 1)
		fmt.Println("marks after-check:", marked.Verdict(), "- pauses that never fired:", len(marked.Unfired))
		unmarked := locktest.Scenario(t, "pause-after-check", newMyLock(true, false), own, 1)
		fmt.Println("marks nothing:", unmarked.Verdict(), "- pauses that never fired:", len(unmarked.Unfired))
	})
	// Output:
	// marks after-check: unsafe - pauses that never fired: 0
	// marks nothing: safe - pauses that never fired: 3
}

// Violations per year of your own lock under a fault profile (here one of
// long client pauses only, pausesOnly in risk_test.go; risk.Default() is
// the shipped one, and the zero RiskOptions take it): a release by plain
// DEL without fencing against compare-and-delete with fencing tokens.
func Example_risk() {
	locktest.Standalone(func(t *testing.T) {
		p, err := risk.Decode([]byte(pausesOnly), "pauses")
		if err != nil {
			t.Fatal(err)
		}
		ro := locktest.RiskOptions{Profile: p, Seeds: 4}
		o := locktest.Options{Topology: locks.Single, TTL: time.Second}
		broken := locktest.Risk(t, newMyLock(false, false), o, ro)
		fmt.Printf("plain DEL: %.3g a year [%.3g, %.3g]\n", broken.PerYear, broken.PerYearCI95[0], broken.PerYearCI95[1])
		o.Fencing = locks.FenceMaxToken
		fenced := locktest.Risk(t, newMyLock(true, true), o, ro)
		fmt.Printf("fenced: %.3g a year [%.3g, %.3g]\n", fenced.PerYear, fenced.PerYearCI95[0], fenced.PerYearCI95[1])
	})
	// Output:
	// plain DEL: 6.45e+03 a year [1.65e+03, 1.56e+04]
	// fenced: 0 a year [0, 3.38e+03]
}
