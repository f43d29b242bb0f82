package locktest_test

// Benchmarks of a locktest search's cost, run as:
//
//	nice -n 15 go test -run xxx -bench Redlock -benchtime 1x -cpu 1 ./locktest/
//
// BenchmarkRedlockSearch100 is the search to keep under 30 s (a 100-schedule search
// of a 5-node Redlock); BenchmarkRun5Nodes and BenchmarkRun1Node price one
// run of the same workload on five nodes and on one, fault-free, so that
// a profile of each shows where the difference goes.

import (
	"testing"
	"time"

	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

// redlockTTL is the catalogue Redlock's lease (catalogue.RedlockRedisIO):
// it sizes the world (a 100 s safety phase, 20 s of liveness).
const redlockTTL = 10 * time.Second

// redlockSearch100 is a search that runs all its 100 schedules: the
// catalogue's (correct) Redlock under the network's faults.
var redlockSearch100 = locktest.Options{Topology: locks.Independent, TTL: redlockTTL, Kinds: network, Checks: 100, Seed: 1}

func BenchmarkRedlockSearch100(b *testing.B) {
	benchSearch(b, locktest.Library("redlock"), redlockSearch100)
}

// BenchmarkUserRedlockSearch100 is the same search of the test's own
// Redlock (locks_test.go, its 3 s default lease: a 30 s world).
func BenchmarkUserRedlockSearch100(b *testing.B) {
	o := redlockSearch100
	o.TTL = 0
	benchSearch(b, newRedlockLock(false), o)
}

func benchSearch(b *testing.B, f locktest.Factory, o locktest.Options) {
	for range b.N {
		ok := locktest.Standalone(func(t *testing.T) {
			if out := locktest.Find(t, f, o); out != nil {
				t.Fatalf("a correct Redlock failed:\n%s", locktest.Describe(t, *out))
			}
		})
		if !ok {
			b.Fatal("the search failed")
		}
	}
}

// benchRun runs one fault-free world of the lock b.N times (seeds 1..N).
func benchRun(b *testing.B, f locktest.Factory, o locktest.Options) {
	for i := range b.N {
		ok := locktest.Standalone(func(t *testing.T) {
			if v := locktest.Run(t, f, o, uint64(i+1), nil).Verdict(); v != "safe" {
				t.Fatalf("seed %d: %s", i+1, v)
			}
		})
		if !ok {
			b.Fatal("the run failed")
		}
	}
}

// BenchmarkRun5Nodes is one fault-free run of the catalogue's Redlock.
func BenchmarkRun5Nodes(b *testing.B) {
	benchRun(b, locktest.Library("redlock"), locktest.Options{Topology: locks.Independent, TTL: redlockTTL})
}

// BenchmarkRun1Node is set-nx-cad with the same lease and workload.
func BenchmarkRun1Node(b *testing.B) {
	benchRun(b, locktest.Library("set-nx-cad"), locktest.Options{TTL: redlockTTL})
}

// BenchmarkRun1NodeRedlock is the Redlock code on one node (a quorum of
// one): the same client code as BenchmarkRun5Nodes, one node.
func BenchmarkRun1NodeRedlock(b *testing.B) {
	benchRun(b, locktest.Library("redlock"), locktest.Options{Topology: locks.Independent, Nodes: 1, TTL: redlockTTL})
}

// BenchmarkSearchArmed and BenchmarkSearchUnarmed are a pair: the same
// 100-schedule search of a correct lock (narrowLock with its watchdog,
// under the network's faults, which it survives: seed 1), with armed faults (the default)
// and without (Options.Unarmed). Each reports the CPU-bound time per
// schedule; run them together, on one core:
//
//	nice -n 15 go test -run xxx -bench 'Search(Armed|Unarmed)' -benchtime 3x -count 3 -cpu 1 ./locktest/
func BenchmarkSearchArmed(b *testing.B) { benchArmed(b, false) }

func BenchmarkSearchUnarmed(b *testing.B) { benchArmed(b, true) }

func benchArmed(b *testing.B, unarmed bool) {
	o := locktest.Options{Renews: true, Checks: 100, Seed: 1, Unarmed: unarmed, Kinds: network}
	benchSearch(b, newNarrowLock("", true), o)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*o.Checks), "ns/schedule")
}
