// Package locktest runs a lock through locksim's simulated world from a Go
// test: random fault schedules (pgregory.net/rapid draws them), every run
// checked, and on failure a counterexample shrunk by locksim's shrinker
// (run.Shrink) with a one-line repro and the files that show it.
//
// A test reads like:
//
//	func TestMyLock(t *testing.T) {
//		locktest.Check(t, func(env locks.Env) (locks.Lock, error) {
//			return mylock.New(env.Primary, env.Key, env.TTL, env.Clock), nil
//		}, locktest.Options{Topology: locks.Single, TTL: 3 * time.Second})
//	}
//
// The lock gets go-redis v9 clients whose connections go through the
// simulated network, its lease (locks.Env.TTL, which also sizes the fault
// search), its own clock (locks.Env.Clock), and a random stream. It marks
// its pause points with env.At (see locks.Env.At): a point it never marks
// is a pause the search never tries, and Find says so.
// Code that calls time.Now or time.Sleep directly (most libraries) sees the
// simulation's virtual time: every run happens inside a testing/synctest
// bubble. Nothing here needs a Redis server.
package locktest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// Factory builds one client's instance of the lock under test. It is
// called once per client per run, with that client's Env, and every
// acquisition of the client reuses the instance it returns: Acquire,
// Release, Acquire, ... on the same value (Release never follows a failed
// Acquire: a client whose Acquire failed or erred just tries again). So
// anything that belongs to one hold (the lock value a compare-and-delete
// checks, a watchdog's stop channel) must be made in Acquire, not in the
// factory: a value drawn once in the factory makes a delayed release of
// one hold delete the client's next hold. An error from the factory ends
// that client's program (recorded as an "error" event).
type Factory func(env locks.Env) (locks.Lock, error)

// Workload is how a client behaves in its critical section (it reads the
// protected counter, works for the drawn hold time, then writes).
type Workload string

const (
	// Careful code checks its belief (the lease's validity, extended by
	// renewals reported through Env.Renewed) on its own clock before each
	// write and writes nothing once it has run out; a section that would
	// outlast it stops at its deadline. The check sits before the
	// before-write pause point, so a pause there still writes late
	// (Kleppmann). A lock whose belief outlives its key is then caught
	// with network faults alone.
	Careful Workload = "careful"
	// Careless code writes whatever its lease says: only fencing at the
	// resource can stop a late write.
	Careless Workload = "careless"
	// ScenarioWorkload, for Scenario only, runs the scenario's own
	// workload: its hold times (unless HoldMin/HoldMax are set) and
	// careless code. Run and Find run it as Careless.
	ScenarioWorkload Workload = "scenario"
)

// Outcome is one judged run.
type Outcome struct {
	// Seed is the run's seed (the world's: the one Run and Scenario take).
	Seed    uint64
	Faults  []faults.Fault
	Clients int
	Check   checker.Result
	SHA256  string // the trace's hash (Run.TraceSHA256)
	// Run is the run's outcome as locksim's sweeps and reports count it
	// (run.Judged.Outcome): the verdict and class, the checkers' counts,
	// the faults' reach and bite, the trace hash.
	Run run.Outcome
	// Options are the run's options, defaults filled in and Clients as
	// run: Run(t, f, Options, Seed, Faults) runs it again, except for an
	// outcome of Scenario (its world and workload are the scenario's:
	// Scenario(t, Scenario, f, Options, Seed) runs it again).
	Options Options
	// Scenario is the built-in scenario the run came from (Scenario), ""
	// for Run and Find.
	Scenario string
	// Persistence is each node's durability on crash, in node order (drawn
	// from the seed unless Options.Persistence set it).
	Persistence []sim.Persistence
	// Unfired are the schedule's armed faults (Fault.At: targeted client
	// pauses and faults of other kinds armed at a point) that never fired,
	// not counted as injected: their client never reached the point while
	// the fault was armed (a lock that never calls env.At for it, or a point the
	// run never came to).
	Unfired []faults.Fault
	// Effects says, per fault of the schedule, whether it was injected,
	// reached the lock and bit (run.Effects): a client clock fault does
	// not reach a lock that never reads env.Clock (one that calls
	// time.Now sees the simulation's one shared clock).
	Effects []run.FaultEffect
	// Tried is how many random schedules Find ran up to the first that
	// failed (0 for Run); FromFaults and FromClients are that schedule's
	// size, before run.Shrink shrank it.
	Tried                   int
	FromFaults, FromClients int
	// FailFile is the fail file Find wrote for the failing case, or
	// replayed it from ("" when none): the next go test replays its
	// unshrunk case first (not this outcome).
	FailFile string
	// Warnings are what the search noticed that may make it blind (pause
	// points drawn but never reached).
	Warnings []string
	// SearchSeed is the search's own seed, rapid's (Options.Seed, or
	// -rapid.seed, or the one drawn when neither was set): the same
	// search with it draws the same schedules and finds this case at
	// schedule Tried. 0 for Run and Scenario, and for a case replayed
	// from a fail file. Describe prints it as -rapid.seed=N; the word
	// "seed" alone is always the run's (Seed).
	SearchSeed uint64
	history    checker.History
}

// Verdict is the run's verdict: safe, unsafe, liveness or unknown.
func (o Outcome) Verdict() checker.Verdict { return o.Run.Verdict }

func info(f Factory, o Options) locks.Info {
	return o.withTraits(locks.Info{ID: "user-lock", Design: "the lock under test", Source: "your code", Topology: o.Topology,
		TTL: o.TTL, Fencing: o.Fencing, New: func(env locks.Env) (locks.Lock, error) { return f(env) }})
}

// Run runs one world with the given seed and fault schedule and judges it.
func Run(t *testing.T, f Factory, o Options, seed uint64, schedule []faults.Fault) Outcome {
	t.Helper()
	o = o.withDefaults()
	in := info(f, o)
	cfg, err := world(in, o, seed)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	cfg.Faults = schedule
	return runConfig(t, in, cfg, o, "locktest")
}

// runConfig runs a built world for the lock and judges it as scenario's.
func runConfig(t *testing.T, in locks.Info, cfg sim.Config, o Options, scenario string) Outcome {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("locktest: %v", err)
	}
	j, err := run.NewJob(scenario, in, cfg, checker.Options{RequireFairness: o.Fairness}).Run(sim.TestBubble(t))
	if err == nil && j.Err != nil {
		err = j.Err
	}
	if err != nil {
		t.Fatalf("locktest: seed %d: %v", cfg.Seed, err)
	}
	o.Clients = cfg.Clients
	ro := j.Outcome()
	out := Outcome{Seed: cfg.Seed, Faults: cfg.Faults, Clients: cfg.Clients, Check: j.Check, SHA256: ro.TraceSHA256, Run: ro,
		Options: o, Unfired: run.UnfiredPauses(j.History), Effects: run.Effects(j.History, j.Result, cfg), history: j.History}
	for _, n := range cfg.Nodes {
		out.Persistence = append(out.Persistence, n.Persistence)
	}
	return out
}

// Scenario runs the lock through a built-in scenario of locksim's
// catalogue (scenarios.IDs: "pause-after-check", "clock-jump", "failover",
// "split-brain", ...) or a scenario file, with one seed: the scenario's
// world, fault schedule (scaled by o.TTL where the scenario counts in
// TTLs) and judging, with the lock under test in the place of the
// scenario's locks. o gives the lock's Topology, TTL and Fencing and may
// set Persistence; its Clients, Nodes, Duration, Liveness, ReplLag and
// DownAfter override the scenario's when set.
//
// The clients run the same workload as Run and Find: o.Workload (careful
// code for a lock without fencing) with critical sections of
// o.HoldMin-o.HoldMax (TTL-relative by default), on the scenario's
// resource. Workload ScenarioWorkload runs the scenario's own instead:
// its hold times (unless HoldMin/HoldMax are set) and careless code.
func Scenario(t *testing.T, id string, f Factory, o Options, seed uint64) Outcome {
	t.Helper()
	sc, err := scenarios.Resolve(id)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	p := scenarios.Params{Clients: o.Clients, Nodes: o.Nodes, Duration: o.Duration, Liveness: o.Liveness,
		ReplLag: o.ReplLag, DownAfter: o.DownAfter, HoldMin: o.HoldMin, HoldMax: o.HoldMax}
	own := o.Workload == ScenarioWorkload
	if own {
		o.Workload = ""
	}
	o = o.withDefaults()
	if own {
		o.Workload = ScenarioWorkload
	} else {
		p.HoldMin, p.HoldMax, p.Careful = o.HoldMin, o.HoldMax, o.Workload == Careful
	}
	in := info(f, o)
	cfg, err := sc.Build(in, seed, p)
	if err != nil {
		t.Fatalf("locktest: scenario %s: %v", id, err)
	}
	if o.Persistence != "" {
		for i := range cfg.Nodes {
			cfg.Nodes[i].Persistence = o.Persistence
		}
	}
	if sc.File != nil && len(sc.File.Faults) > 0 && len(cfg.Faults) == 0 {
		t.Fatalf("locktest: scenario %s has faults, but none applies to a lock of topology %q (its faults are restricted with locks: to other topologies)", sc.ID, o.Topology)
	}
	out := runConfig(t, in, cfg, o, sc.ID)
	out.Scenario = sc.ID
	return out
}

// world is the default world for the lock under test, without faults.
func world(in locks.Info, o Options, seed uint64) (sim.Config, error) {
	cfg, err := o.baseWorld(in, seed)
	if err != nil {
		return cfg, err
	}
	if o.Persistence != "" {
		for i := range cfg.Nodes {
			cfg.Nodes[i].Persistence = o.Persistence
		}
	}
	return cfg, nil
}

func (o Options) params() scenarios.Params {
	return scenarios.Params{Clients: o.Clients, Nodes: o.Nodes, Duration: o.Duration, Liveness: o.Liveness,
		ReplLag: o.ReplLag, DownAfter: o.DownAfter, HoldMin: o.HoldMin, HoldMax: o.HoldMax, Careful: o.Workload == Careful}
}

// names lists the world's process names for fault targets.
func names(o Options) (clients, nodes []string, replicated bool) {
	for i := 0; i < o.Clients; i++ {
		clients = append(clients, fmt.Sprintf("c%d", i))
	}
	n := o.Nodes
	if n == 0 {
		n = scenarios.DefaultNodes(o.Topology)
	}
	replicated = o.Topology == locks.Replicated
	for i := 0; i < n; i++ {
		nodes = append(nodes, fmt.Sprintf("n%d", i))
	}
	return clients, nodes, replicated
}

// Check runs random fault schedules against the lock and fails t with a
// shrunk counterexample if any run is unsafe, or fails liveness (nobody
// could take the lock after the faults healed). The failure names the
// search's seed (-rapid.seed), the run's seed and shrunk fault schedule,
// a repro statement that replays it and fails while the lock is unsafe
// (RequireSafe), and the files that show the violation.
func Check(t *testing.T, f Factory, o Options) {
	t.Helper()
	o = o.withDefaults()
	failed := Find(t, f, o)
	if failed == nil {
		return
	}
	t.Fatal(Describe(t, *failed))
}

// RequireSafe fails t, with out's description (Describe), unless out's
// verdict is safe, and returns out. The repro line of a failure is a
// RequireSafe call: pasted into a test as printed, it replays the run and
// fails the test until the lock is fixed.
func RequireSafe(t *testing.T, out Outcome) Outcome {
	t.Helper()
	if out.Verdict() != checker.VerdictSafe {
		t.Fatal(Describe(t, out))
	}
	return out
}

// ExpectUnsafe is the documented negative test: it passes when some random
// schedule makes the lock unsafe (and logs the shrunk counterexample), and
// fails when none does within the budget.
func ExpectUnsafe(t *testing.T, f Factory, o Options) Outcome {
	t.Helper()
	failed, missed := expectUnsafe(t, f, o)
	if failed == nil {
		t.Fatal(missed)
	}
	// The violation found here is the expected outcome, not a bug to
	// keep: its fail file goes, so that every run searches afresh
	// (a fail file would be replayed first next time and make the test
	// pass whatever the search would find).
	if failed.FailFile != "" {
		os.Remove(failed.FailFile)
		os.Remove(filepath.Dir(failed.FailFile)) // if now empty
		failed.FailFile = ""
	}
	t.Log(Describe(t, *failed))
	return *failed
}

func kindsOf(o Options) any {
	if o.Kinds == nil {
		return "every fault kind"
	}
	return o.Kinds
}

// Standalone runs f with a *testing.T of its own, for Example functions
// (which get none). It reports whether f passed.
func Standalone(f func(t *testing.T)) bool { return sim.InTest(f) }

// Library returns the factory of a lock in locksim's catalogue (e.g.
// "redsync", "redislock", "set-nx-cad"), for comparing your lock with it.
// A catalogue lock keeps its own lease (locks.Lookup(id).TTL: redsync 8 s,
// redislock 3 s): set Options.TTL to it, so that the search and the
// workload are sized by the lease the lock really takes. The catalogue's
// designs are linked only by a program that imports them:
//
//	import _ "github.com/locksim/locksim/locks/catalogue"
//
// (without it, Library's factory fails with an error that says so):
// locktest itself links no lock library.
func Library(id string) Factory {
	info, err := locks.Lookup(id)
	if err != nil {
		return func(locks.Env) (locks.Lock, error) { return nil, err }
	}
	return Factory(info.New)
}
