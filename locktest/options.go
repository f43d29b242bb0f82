package locktest

import (
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// Options describe the world, the workload and the fault search. Zero
// values take the defaults in brackets.
type Options struct {
	// Topology is what the lock talks to [locks.Single]: one node,
	// Independent nodes (Nodes of them [5]), or a Replicated primary with
	// two async replicas and Sentinel failover.
	Topology locks.Topology
	Nodes    int
	Clients  int // [3]
	// TTL is the lock's lease [3 s]. The lock gets it as Env.TTL, and it
	// sizes the search: every fault size that can break a lease (pauses,
	// clock jumps, drift, partitions, delays, restart delays) is drawn
	// relative to it, from far below to well above it (faults.Bounds.TTL),
	// and so are the critical sections and the run's length.
	TTL time.Duration
	// Fencing is the resource check the lock relies on ["" = none: the lock
	// itself must exclude]; see locks.Fencing.
	Fencing locks.Fencing
	// Persistence is the nodes' durability on crash ["": drawn per node
	// from the seed; the counterexample names the modes it drew].
	Persistence sim.Persistence
	// Kinds are the fault kinds that may be drawn [every kind that applies
	// to the topology]; a schedule has 1 to MaxFaults faults [4]. NoFaults draws
	// none at all (MaxFaults 0 means the default, not zero).
	Kinds     []faults.Kind
	MaxFaults int
	NoFaults  bool
	// Limits cap the sizes of the faults drawn (e.g. Limits{DriftPPM:
	// 10_000}: drift under 1%) [no cap beyond the TTL-relative ranges].
	Limits faults.Limits
	// Duration of the safety phase [30 s, or 10 × TTL if longer] and of
	// the liveness phase [10 s, or 2 × TTL if longer].
	Duration, Liveness time.Duration
	// ReplLag is the replication lag of a Replicated topology [0-50 ms,
	// drawn from the seed].
	ReplLag time.Duration
	// DownAfter is how long Sentinel waits before failing over [5 s].
	DownAfter time.Duration
	// HoldMin and HoldMax bound a critical section, drawn uniformly
	// between them [TTL/60, 1.5 × TTL: from short sections to ones that
	// run past the lease, where a lock whose belief outlives its key shows;
	// each defaults on its own, and HoldMin never above a HoldMax set].
	HoldMin, HoldMax time.Duration
	// Workload says whether the clients write like careful code
	// [Careful for a lock without fencing, Careless with fencing].
	Workload Workload
	// Checks is the number of random schedules [rapid's -rapid.checks:
	// 100, a fifth under -short].
	Checks int
	// Seed fixes the search's random source and neither replays nor
	// writes fail files, so Find draws the same schedules on every
	// machine and every run: a search in CI that finds a bug finds it
	// always [0: -rapid.seed when set, else a new seed each run,
	// replaying the test's fail files first]. It wins over -rapid.seed.
	// Find reads rapid's flags and never sets them, so a rapid.Check of
	// your own in a parallel test is not affected.
	Seed uint64
	// Determinism runs every schedule twice and demands the same trace
	// hash (twice the cost).
	Determinism bool
	// Fairness judges fairness: a client that never acquires after the heal
	// while others do is a liveness failure (checker.Options.RequireFairness).
	// Without it, starvation is a figure (Outcome.Check.Liveness.Starved).
	// Check and Find fail on liveness verdicts either way: a lock that
	// nobody can take after the faults heal (a deadlock, an Acquire that
	// always errs) fails.
	Fairness bool
}

func (o Options) withDefaults() Options {
	if o.Topology == "" {
		o.Topology = locks.Single
	}
	if o.Clients == 0 {
		o.Clients = 3
	}
	if o.TTL == 0 {
		o.TTL = 3 * time.Second
	}
	if o.MaxFaults == 0 {
		o.MaxFaults = 4
	}
	if o.Duration == 0 {
		o.Duration = max(30*time.Second, 10*o.TTL)
	}
	if o.Liveness == 0 {
		o.Liveness = max(10*time.Second, 2*o.TTL)
	}
	if o.HoldMin == 0 {
		o.HoldMin = max(o.TTL/60, time.Millisecond)
		if o.HoldMax > 0 {
			o.HoldMin = min(o.HoldMin, o.HoldMax)
		}
	}
	if o.HoldMax == 0 {
		o.HoldMax = max(o.TTL*3/2, o.HoldMin)
	}
	if o.Workload == "" {
		o.Workload = Careless
		if o.Fencing == "" || o.Fencing == locks.FenceNone {
			o.Workload = Careful
		}
	}
	return o
}
