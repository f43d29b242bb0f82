package locktest_test

import (
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/locktest"
)

// redlock is the catalogue's Redlock (redis.io's parameters) on the
// world's TTL; without drift it is the same code with no drift allowance
// (validity = TTL − elapsed, DriftFactor and DriftFixed 0: redlock.go
// computes validity as TTL − elapsed − (TTL × DriftFactor + DriftFixed)).
func redlock(drift bool) locktest.Factory {
	return func(env locks.Env) (locks.Lock, error) {
		p := catalogue.RedlockRedisIO
		p.TTL = env.TTL
		if !drift {
			p.DriftFactor, p.DriftFixed = 0, 0
		}
		return &catalogue.Redlock{Env: env, P: p}, nil
	}
}

// driftAimed searches client clock drift between 0.5% and 1% only: what
// Redlock's 1% + 2 ms allowance is for. A slow client clock (−0.5%)
// stretches a 3 s lease by 15 ms on true time, past the keys' expiry.
var driftAimed = locktest.Options{Topology: locks.Independent, TTL: 3 * time.Second,
	Kinds: []faults.Kind{faults.ClockDrift}, Targets: locktest.ClientsOnly,
	Limits: faults.Limits{DriftMinPPM: 5_000, DriftPPM: 9_999}, Checks: 200,
	ExpectClass: checker.ClassDoubleHold}

// A Redlock without its drift allowance is found by a search aimed at
// client drift below 1%, at three pinned seeds (found after 17, 6 and 35
// schedules), within 200, as a double hold whose shrunk schedule is a
// slow client clock (seed 2 only under -short). Aimed the same way but
// with the drift drawn for TTL/100 to 10 × TTL, as before a drift band
// made it last to the end of the safety phase, seeds 1-3 took 96, more
// than 200, and 94 schedules; drift ≤ 0.9% on any process, 200
// schedules at each of those seeds found nothing.
func TestRedlockWithoutDriftFound(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = []uint64{2}
	}
	for _, seed := range seeds {
		o := driftAimed
		o.Seed = seed
		out := locktest.ExpectUnsafe(t, redlock(false), o)
		if out.Check.Class != checker.ClassDoubleHold {
			t.Errorf("seed %d: class %q, want double-hold", seed, out.Check.Class)
		}
		slow := false
		for _, f := range out.Faults {
			slow = slow || f.Kind == faults.ClockDrift && f.DriftPPM <= -5_000 && f.DriftPPM > -10_000 && f.Targets[0][0] == 'c'
		}
		if !slow {
			t.Errorf("seed %d: the shrunk schedule %v has no client clock running 0.5-1%% slow", seed, out.Faults)
		}
		t.Logf("seed %d: found after %d schedules, shrunk to %v", seed, out.Tried, out.Faults)
	}
}

// The correct Redlock (1% + 2 ms of drift allowance) passes the same
// 200 schedules (the first 40 under -short).
func TestRedlockWithDriftPassesAimedSearch(t *testing.T) {
	o := driftAimed
	o.Seed = 1
	if testing.Short() {
		o.Checks = 40
	}
	locktest.Check(t, redlock(true), o)
}
