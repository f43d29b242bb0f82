package locktest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
	"github.com/locksim/locksim/sim"
)

// draws collects n schedules from locktest.Schedules(o) (a fixed rapid
// seed: the same schedules every run).
func draws(t *testing.T, o locktest.Options, n int) []faults.Fault {
	t.Helper()
	var all []faults.Fault
	gen := locktest.Schedules(o)
	for i := 0; i < n; i++ {
		all = append(all, gen.Example(i)...)
	}
	return all
}

// NoFaults means no faults: MaxFaults 0 alone means the default of 4.
func TestNoFaultsOption(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		if s := locktest.Schedules(locktest.Options{NoFaults: true}).Draw(rt, "s"); len(s) != 0 {
			rt.Fatalf("NoFaults drew %v", s)
		}
	})
	if len(draws(t, locktest.Options{MaxFaults: 0}, 50)) == 0 {
		t.Fatal("MaxFaults 0 (the default of 4) drew no faults in 50 schedules")
	}
}

// Fault sizes follow the TTL: with a 20 s lease, pauses longer than the
// lease and forward clock jumps on a node at least as large as the lease
// are both common (the old generator drew pauses ≤ 15 s, and only 17 of
// 1,640 jumps were forward ≥ 1 s on a node), and short ones remain.
func TestFaultSizesFollowTTL(t *testing.T) {
	for _, ttl := range []time.Duration{3 * time.Second, 20 * time.Second} {
		// Unarmed: arming changes no pause or jump size, but its draws
		// shift the later faults' (this test's counts were taken on the
		// unarmed stream; a 5% floor for a 6.25% share needs a fixed one).
		fs := draws(t, locktest.Options{TTL: ttl, Kinds: []faults.Kind{faults.ClientPause, faults.ClockJump}, Unarmed: true}, 300)
		var pauses, long, short, jumps, bigForwardOnNode int
		for _, f := range fs {
			switch f.Kind {
			case faults.ClientPause:
				pauses++
				if f.Duration > ttl {
					long++
				}
				if f.Duration < ttl/10 {
					short++
				}
			case faults.ClockJump:
				jumps++
				if f.Jump >= ttl && strings.HasPrefix(f.Targets[0], "n") {
					bigForwardOnNode++
				}
			}
		}
		t.Logf("TTL %v: %d of %d pauses > TTL, %d < TTL/10; %d of %d jumps forward ≥ TTL on a node", ttl, long, pauses, short, bigForwardOnNode, jumps)
		if long*10 < pauses || short*10 < pauses {
			t.Errorf("TTL %v: %d of %d pauses > TTL and %d < TTL/10, want each ≥ 10%%", ttl, long, pauses, short)
		}
		if bigForwardOnNode*20 < jumps {
			t.Errorf("TTL %v: %d of %d clock jumps forward ≥ TTL on a node, want ≥ 5%%", ttl, bigForwardOnNode, jumps)
		}
	}
}

// Limits bound a fault's size: drift under 1%, pauses under 5 s.
func TestLimitsOption(t *testing.T) {
	o := locktest.Options{TTL: 20 * time.Second, Kinds: []faults.Kind{faults.ClockDrift, faults.ClientPause},
		Limits: faults.Limits{DriftPPM: 10_000, Pause: 5 * time.Second}}
	var drifts int
	for _, f := range draws(t, o, 200) {
		if f.Kind == faults.ClockDrift {
			drifts++
			if f.DriftPPM > 10_000 || f.DriftPPM < -10_000 {
				t.Fatalf("%v: drift beyond 1%%", f)
			}
		}
		if f.Kind == faults.ClientPause && f.Duration > 5*time.Second {
			t.Fatalf("%v: pause beyond 5 s", f)
		}
	}
	if drifts == 0 {
		t.Fatal("no drift drawn")
	}
}

// Persistence sets every node's mode, and the outcome names it: the crash
// that makes the fenced lock's INCR tokens regress with seed 1's drawn mode
// (TestRedisTokenRegressesOnCrash) is harmless when the node fsyncs every
// write.
func TestPersistenceOption(t *testing.T) {
	crash := []faults.Fault{{Kind: faults.Crash, Start: 2400 * time.Millisecond, Duration: time.Millisecond, Targets: []string{"n0"}}}
	o := locktest.Options{Topology: locks.Single, Fencing: locks.FenceMaxToken, Clients: 3, HoldMin: 50 * time.Millisecond, HoldMax: time.Second}
	drawn := locktest.Run(t, newMyLock(true, true), o, 1, crash)
	if drawn.Verdict() != "unsafe" || drawn.Persistence[0] == sim.PersistAlways {
		t.Fatalf("seed 1 as drawn: verdict %s with persistence %v; want unsafe with a mode that loses writes", drawn.Verdict(), drawn.Persistence)
	}
	if !strings.Contains(locktest.Describe(t, drawn), "persistence: n0 "+string(drawn.Persistence[0])) {
		t.Errorf("the counterexample does not name the drawn persistence:\n%s", locktest.Describe(t, drawn))
	}
	o.Persistence = sim.PersistAlways
	always := locktest.Run(t, newMyLock(true, true), o, 1, crash)
	if always.Verdict() == "unsafe" || always.Persistence[0] != sim.PersistAlways {
		t.Fatalf("with Persistence always: verdict %s, persistence %v: %v", always.Verdict(), always.Persistence, always.Check.Reasons)
	}
}

// The lock gets its lease in env.TTL, equal to Options.TTL, and Redlock
// clients typed as Redlock libraries take them.
func TestEnvCarriesTTLAndUniversalNodes(t *testing.T) {
	var ttls []time.Duration
	var nodes int
	f := func(env locks.Env) (locks.Lock, error) {
		ttls = append(ttls, env.TTL)
		var universal []redis.UniversalClient = env.Nodes
		nodes = len(universal)
		return newRedlockLock(false)(env)
	}
	locktest.Run(t, f, locktest.Options{Topology: locks.Independent, TTL: 7 * time.Second, Clients: 2}, 1, nil)
	if len(ttls) != 2 || ttls[0] != 7*time.Second || ttls[1] != 7*time.Second || nodes != 5 {
		t.Fatalf("env.TTL per client %v (want 7s each), %d nodes (want 5)", ttls, nodes)
	}
}

// The workload is careful by default for a lock without fencing: with
// critical sections up to 1.5 × the TTL, a correct lock stays safe
// without faults because the holder stops at its deadline; a careless
// workload writes past its lease and breaks the same lock.
func TestWorkloadOption(t *testing.T) {
	careful, careless := 0, 0
	for seed := uint64(1); seed <= 5; seed++ {
		if locktest.Run(t, newMyLock(true, false), locktest.Options{}, seed, nil).Verdict() == "unsafe" {
			careful++
		}
		if locktest.Run(t, newMyLock(true, false), locktest.Options{Workload: locktest.Careless}, seed, nil).Verdict() == "unsafe" {
			careless++
		}
	}
	if careful != 0 || careless == 0 {
		t.Fatalf("without faults, 5 seeds: careful unsafe in %d (want 0), careless in %d (want > 0)", careful, careless)
	}
}

// HoldMin and HoldMax default each on its own: before, HoldMin set alone
// was dropped and HoldMax set alone left HoldMin at 0.
func TestHoldBoundsDefaultApart(t *testing.T) {
	for _, c := range []struct {
		o        locktest.Options
		min, max time.Duration
	}{
		{locktest.Options{HoldMin: 2 * time.Second}, 2 * time.Second, 4500 * time.Millisecond},
		{locktest.Options{HoldMax: time.Second}, 50 * time.Millisecond, time.Second},
		{locktest.Options{HoldMax: 10 * time.Millisecond}, 10 * time.Millisecond, 10 * time.Millisecond},
		{locktest.Options{}, 50 * time.Millisecond, 4500 * time.Millisecond},
	} {
		got := locktest.Run(t, newMyLock(true, false), c.o, 1, nil).Options
		if got.HoldMin != c.min || got.HoldMax != c.max {
			t.Errorf("HoldMin %v HoldMax %v: ran with %v..%v, want %v..%v", c.o.HoldMin, c.o.HoldMax, got.HoldMin, got.HoldMax, c.min, c.max)
		}
	}
}
