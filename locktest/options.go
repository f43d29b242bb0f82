package locktest

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/scenarios"
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

	// The lock's traits: what it does, so that the workload exercises it
	// and the search does not misread it. Each is false by default.
	//
	// Renews: the lock renews its lease while held (a watchdog) and marks
	// env.At(locks.PointRenewing) before each renewal; Find warns when
	// pauses drawn there never fire. Without it they are expected not to
	// fire, and Find says nothing (PausePoints aimed at "renewing" still
	// warn). The search draws "renewing" pauses either way unless
	// PausePoints leaves it out.
	Renews bool
	// Reentrant: the holder may acquire again while it holds (Acquire on
	// the same instance nests; each Release undoes one level). The
	// workload then nests: inside each section the holder acquires again,
	// works, releases the inner level and works once more under the outer
	// one, so a release that freed the lock at the inner level lets
	// another client into the second half (scenarios.Workload.Reentrant).
	Reentrant bool
	// ReadWrite: the lock has a shared read mode (it is a
	// locks.ReadWriteLock; the factory fails otherwise). A ReadFraction
	// of the rounds [0.7, as the built-in scenarios] take the read lock
	// and only read the storage; readers may overlap readers.
	ReadWrite    bool
	ReadFraction float64
	// Fair: the lock promises to grant in request order. A client that
	// starves after the heal while a later request was granted ahead of
	// its own fails liveness (locks.Info.Fair); Fairness is stricter (any
	// starving client fails).
	Fair bool

	// Aiming the search (with Kinds and Limits): each narrows what is
	// drawn, so that a negative test proves a bug rather than passing
	// through a failure every lease lock has.
	//
	// Unarmed turns off armed faults: without it, about half of the
	// partitions, delays, losses and client pauses drawn are armed at a
	// moment of the run (faults.Bounds.ArmPoints):
	// each begins when a client first reaches that point at or after its
	// drawn start (Fault.At, Fault.On): just before it calls Acquire
	// ("acquire") or Release ("releasing"), and, for a lock that Renews,
	// at a renewal ("renewing"); an armed partition, delay or loss lasts from
	// TTL/100 (a request in flight, its reply late past its deadline) to
	// 2 × TTL (an outage that outlives the lease from that moment).
	// The faults that bite only at one exact moment (a renewal whose
	// failure is ignored, a release whose reply is lost) are then found
	// in a few schedules, not by luck. Unarmed draws every fault at its
	// start as the search before armed faults did (the same schedules for
	// the same seed).
	Unarmed bool
	// PausePoints: every client pause waits for one of these points [nil:
	// any point, or none (a pause at its start)]; e.g.
	// {locks.PointRenewing} searches a watchdog's renewals only.
	PausePoints []locks.PausePoint
	// Targets: which processes faults land on [AnyProcess]; see Target.
	Targets Target
	// ExpectClass and ExpectKind make ExpectUnsafe demand a violation of
	// this class (checker.ClassDoubleHold, ClassResource, ClassOwnership)
	// and/or first violation kind (checker.KindLeaseOverlap, ...): a
	// schedule unsafe in another way is passed over (counted, and named
	// if nothing else is found), and the search goes on. Check and Find
	// ignore them: any violation fails a Check.
	ExpectClass checker.Class
	ExpectKind  checker.Kind
}

// Target says which processes a search's faults land on (Options.Targets).
type Target string

const (
	// AnyProcess: faults land on any client or node.
	AnyProcess Target = ""
	// ClientsOnly: pauses and clock faults hit clients only, and network
	// faults cut some clients off from everything else; the nodes stay
	// healthy (no node pause, crash or failover is drawn).
	ClientsOnly Target = "clients"
	// NodesOnly: faults hit nodes only (no client pause; clock faults on
	// nodes; network faults cut some nodes off).
	NodesOnly Target = "nodes"
	// NodeMinority: faults hit only the first ⌊(N−1)/2⌋ nodes (n0, n1 of
	// Redlock's five), a minority a quorum lock must survive; clients
	// stay healthy. A world of fewer than 3 nodes has no such minority.
	NodeMinority Target = "node-minority"
)

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
	if o.ReadWrite && o.ReadFraction == 0 {
		o.ReadFraction = 0.7
	}
	if o.Workload == "" {
		o.Workload = Careless
		if o.Fencing == "" || o.Fencing == locks.FenceNone {
			o.Workload = Careful
		}
	}
	return o
}

// check reports why o cannot run, naming the field.
func (o Options) check() error {
	switch o.Targets {
	case AnyProcess, ClientsOnly, NodesOnly, NodeMinority:
	default:
		return fmt.Errorf("Options.Targets %q: want one of %q, %q, %q or %q (AnyProcess)", o.Targets, ClientsOnly, NodesOnly, NodeMinority, AnyProcess)
	}
	if o.ReadFraction < 0 || o.ReadFraction > 1 || o.ReadFraction != o.ReadFraction {
		return fmt.Errorf("Options.ReadFraction %v: out of range 0..1", o.ReadFraction)
	}
	if o.ReadFraction > 0 && !o.ReadWrite {
		return fmt.Errorf("Options.ReadFraction %v is set but Options.ReadWrite is not: only a read-write lock takes read sections", o.ReadFraction)
	}
	if o.ExpectClass != "" && !slices.Contains(checker.Classes, o.ExpectClass) {
		return fmt.Errorf("Options.ExpectClass %q: want one of %v", o.ExpectClass, checker.Classes)
	}
	switch o.ExpectKind {
	case "", checker.KindLeaseOverlap, checker.KindResource, checker.KindLinearizability, checker.KindOwnership:
	default:
		return fmt.Errorf("Options.ExpectKind %q: want one of %v", o.ExpectKind,
			[]checker.Kind{checker.KindLeaseOverlap, checker.KindResource, checker.KindLinearizability, checker.KindOwnership})
	}
	if o.Targets == NodeMinority {
		if _, nodes, _ := names(o); len(nodes) < 3 {
			return fmt.Errorf("Options.Targets %q: a world of %d node(s) has no minority to fault (it takes 3 or more)", o.Targets, len(nodes))
		}
	}
	if o.maxFaults() > 0 {
		if err := o.bounds().Check(); err != nil {
			return fmt.Errorf("Options (Kinds, Targets, PausePoints, Limits): %v", err)
		}
	}
	return nil
}

// bounds are the fault search's bounds for o (defaults filled in).
func (o Options) bounds() faults.Bounds {
	clients, nodes, replicated := names(o)
	b := faults.Bounds{Duration: o.Duration, Clients: clients, Nodes: nodes, Replicated: replicated,
		MinFaults: min(1, o.maxFaults()), MaxFaults: o.maxFaults(), Kinds: o.Kinds, TTL: o.TTL, Limits: o.Limits}
	switch o.Targets {
	case ClientsOnly:
		b.Targets = clients
	case NodesOnly:
		b.Targets = nodes
	case NodeMinority:
		b.Targets = nodes[:(len(nodes)-1)/2]
	}
	for _, pt := range o.PausePoints {
		b.PausePoints = append(b.PausePoints, string(pt))
	}
	if !o.Unarmed {
		b.ArmPoints = o.armPoints()
	}
	return b
}

// armPoints are the points where a search arms faults (Options.Unarmed):
// the moments a lock request is about to be sent, which every run's
// clients reach: the workload's own (faults.HarnessPoints), and renewing
// for a lock that says it renews. acquiring and after-check are left out
// (a lock marks them or not, and a fault armed at a point never reached
// tests nothing; "acquire" is the moment before acquiring), and so is
// before-write, where no lock request follows (client pauses are drawn
// there already: faults.Gen).
func (o Options) armPoints() []string {
	pts := slices.Clone(faults.HarnessPoints)
	if o.Renews {
		pts = append(pts, string(locks.PointRenewing))
	}
	return pts
}

// withTraits is in with o's lock traits: what the workload and the
// judging read (locks.Info's Renews, Reentrant, ReadWrite, Fair).
func (o Options) withTraits(in locks.Info) locks.Info {
	in.Renews, in.Reentrant, in.ReadWrite, in.Fair = o.Renews, o.Reentrant, o.ReadWrite, o.Fair
	if o.ReadWrite {
		build := in.New
		in.New = func(env locks.Env) (locks.Lock, error) {
			l, err := build(env)
			if err != nil {
				return l, err
			}
			if _, ok := l.(locks.ReadWriteLock); !ok {
				return nil, fmt.Errorf("locktest: Options.ReadWrite is set, but the factory's lock (%T) has no AcquireRead (locks.ReadWriteLock)", l)
			}
			return l, nil
		}
	}
	return in
}

// baseWorld is the default world (scenarios.World) with o's workload
// traits: nested sections for a reentrant lock, read sections for a
// read-write one.
func (o Options) baseWorld(in locks.Info, seed uint64) (sim.Config, error) {
	if err := o.check(); err != nil {
		return sim.Config{}, err
	}
	if !o.Reentrant && !o.ReadWrite {
		return scenarios.World(in, seed, o.params())
	}
	sc, err := scenarios.Get("default")
	if err != nil {
		return sim.Config{}, err
	}
	if sc.File == nil {
		return sc.Build(in, seed, o.params()) // a broken built-in: its error
	}
	g := *sc.File
	g.Faults, g.Swarm = nil, nil
	g.Workload.Reentrant = o.Reentrant
	g.Workload.ReadFraction = o.ReadFraction
	parts, err := g.Parts(in, seed, o.params())
	return parts.Config, err
}

// traitFields are the lock traits that change a Run, as Go fields for a
// repro line (GoOptions); Renews changes none.
func (o Options) traitFields() []string {
	var out []string
	if o.Reentrant {
		out = append(out, "Reentrant: true")
	}
	if o.ReadWrite {
		out = append(out, "ReadWrite: true")
		if o.ReadFraction != 0.7 {
			out = append(out, "ReadFraction: "+strconv.FormatFloat(o.ReadFraction, 'g', -1, 64))
		}
	}
	if o.Fair {
		out = append(out, "Fair: true")
	}
	return out
}
