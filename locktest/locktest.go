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
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// Factory builds one client's instance of the lock under test.
type Factory func(env locks.Env) (locks.Lock, error)

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
	// 100, a fifth under -short]. rapid reads it from that flag only, so
	// a Find with Checks set holds the flag for the whole search: Find
	// calls of parallel tests wait for it (and it for them).
	Checks int
	// Seed fixes the search's random source (rapid's -rapid.seed) and
	// neither replays nor writes rapid's fail files, so Find draws the
	// same schedules on every machine and every run: a search in CI that
	// finds a bug finds it always [0: rapid's own, a new seed each run
	// unless -rapid.seed is set, replaying the test's fail files first].
	// It wins over -rapid.seed and -rapid.failfile on the command line.
	// Like Checks, a Find with Seed set holds rapid's flags for the whole
	// search; a rapid.Check of your own in a parallel test may see them.
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
	if o.Workload == "" {
		o.Workload = Careless
		if o.Fencing == "" || o.Fencing == locks.FenceNone {
			o.Workload = Careful
		}
	}
	return o
}

// Outcome is one judged run.
type Outcome struct {
	Seed    uint64
	Faults  []faults.Fault
	Clients int
	Check   checker.Result
	SHA256  string
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
	// Unfired are the schedule's targeted client pauses (Fault.At) that
	// never fired: their client never reached the point while the fault
	// was armed (a lock that never calls env.At for it, or a point the
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
	// RapidReport is rapid's own failure report; FailFile the fail file
	// rapid wrote for it ("" when none), which the next go test replays
	// first (rapid's unshrunk case, not this outcome).
	RapidReport string
	FailFile    string
	// Warnings are what the search noticed that may make it blind (pause
	// points drawn but never reached).
	Warnings []string
	// HTML is porcupine's visualization of the resource history, written
	// by Describe (empty if not written).
	HTML    string
	history checker.History
}

// Verdict is the checker's verdict: safe, unsafe, liveness or unknown.
func (o Outcome) Verdict() checker.Verdict { return o.Check.Verdict }

func info(f Factory, o Options) locks.Info {
	return locks.Info{ID: "user-lock", Design: "the lock under test", Source: "your code", Topology: o.Topology,
		TTL: o.TTL, Fencing: o.Fencing, New: func(env locks.Env) (locks.Lock, error) { return f(env) }}
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
	out := Outcome{Seed: cfg.Seed, Faults: cfg.Faults, Clients: cfg.Clients, Check: j.Check, SHA256: j.Result.TraceSHA256,
		Options: o, Unfired: run.UnfiredPauses(j.History), Effects: run.Effects(j.History, j.Result, cfg), history: j.History}
	for _, n := range cfg.Nodes {
		out.Persistence = append(out.Persistence, n.Persistence)
	}
	return out
}

// Scenario runs the lock through a built-in scenario of locksim's
// catalogue (scenarios.IDs: "pause-after-check", "clock-jump", "failover",
// "split-brain", ...) or a scenario file, with one seed: the scenario's
// world, workload, fault schedule (scaled by o.TTL where the scenario
// counts in TTLs) and judging, with the lock under test in the place of
// the scenario's locks. o gives the lock's Topology, TTL and Fencing and
// may set Persistence; its Clients, Nodes, Duration, Liveness, ReplLag,
// DownAfter and HoldMin/HoldMax override the scenario's when set. The
// scenario's workload is its own (Options.Workload does not apply).
func Scenario(t *testing.T, id string, f Factory, o Options, seed uint64) Outcome {
	t.Helper()
	sc, err := scenarios.Resolve(id)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	p := scenarios.Params{Clients: o.Clients, Nodes: o.Nodes, Duration: o.Duration, Liveness: o.Liveness,
		ReplLag: o.ReplLag, DownAfter: o.DownAfter, HoldMin: o.HoldMin, HoldMax: o.HoldMax}
	o = o.withDefaults()
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
	cfg, err := scenarios.World(in, seed, o.params())
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
// seed, the shrunk fault schedule, a locktest.Run line that replays it,
// and the files that show the violation.
func Check(t *testing.T, f Factory, o Options) {
	t.Helper()
	o = o.withDefaults()
	failed := Find(t, f, o)
	if failed == nil {
		return
	}
	t.Fatal(Describe(t, *failed))
}

// ExpectUnsafe is the documented negative test: it passes when some random
// schedule makes the lock unsafe (and logs the shrunk counterexample), and
// fails when none does within the budget.
func ExpectUnsafe(t *testing.T, f Factory, o Options) Outcome {
	t.Helper()
	o = o.withDefaults()
	failed := Find(t, f, o)
	if failed == nil {
		t.Fatalf("locktest: expected the lock to be unsafe under %v, but none of the random schedules (Options.Checks or -rapid.checks) found a violation", kindsOf(o))
	}
	// The violation found here is the expected outcome, not a bug to
	// keep: its rapid fail file goes, so that every run searches afresh
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

// Find runs random schedules (rapid: -rapid.checks of them, 100 by
// default, a fifth under -short) and returns the smallest unsafe outcome
// run.Shrink shrank it to (rapid's own shrinking is off: noRapidShrink),
// or nil when every run was safe. A liveness failure is returned as found.
// Each Find call in a test has its own rapid fail file (the first keeps
// the test's name, the next ones add "#2", "#3", ...), so a second call
// never replays the first one's failure. rapid's own output is kept out
// of the test log; a targeted pause point that was drawn but never
// reached is logged (and named in a failure).
func Find(t *testing.T, f Factory, o Options) *Outcome {
	t.Helper()
	o = o.withDefaults()
	gen := Schedules(o)
	var last *Outcome
	tried, found := 0, false
	drawn, fired := map[string]int{}, map[string]int{}
	var clocks clockTally
	prop := func(rt *rapid.T) {
		seed := rapid.Uint64Range(1, 1<<32).Draw(rt, "seed")
		schedule := gen.Draw(rt, "faults")
		out := Run(t, f, o, seed, schedule)
		if !found {
			tried++
			tally(schedule, out.Unfired, drawn, fired)
			clocks.add(out.Effects)
		}
		if o.Determinism {
			if again := Run(t, f, o, seed, schedule); again.SHA256 != out.SHA256 {
				rt.Fatalf("locktest: seed %d is not deterministic: trace %s then %s (the lock reads a clock or random source locksim does not control?)", seed, out.SHA256, again.SHA256)
			}
		}
		if out.Check.Verdict == checker.VerdictUnsafe || out.Check.Verdict == checker.VerdictLiveness {
			if !found {
				found = true
				out.Tried, out.FromFaults, out.FromClients = tried, len(out.Faults), out.Clients
			} else {
				out.Tried, out.FromFaults, out.FromClients = last.Tried, last.FromFaults, last.FromClients
			}
			last = &out
			rt.Fatalf("%s: %s", out.Check.Verdict, strings.Join(out.Check.Reasons, "; "))
		}
	}
	if o.Checks > 0 || o.Seed != 0 {
		rapidFlags.Lock()
		defer rapidFlags.Unlock()
		var restore []func()
		defer func() { // before the Unlock
			for _, r := range restore {
				r()
			}
		}()
		set := func(name, v string) {
			if fl := flag.Lookup(name); fl != nil {
				old := fl.Value.String()
				flag.Set(name, v)
				restore = append(restore, func() { flag.Set(name, old) })
			}
		}
		if o.Checks > 0 {
			n := o.Checks
			if testing.Short() {
				n *= 5 // rapid divides by 5 under -short; Checks means what it says
			}
			set("rapid.checks", strconv.Itoa(n))
		}
		if o.Seed != 0 {
			set("rapid.seed", strconv.FormatUint(o.Seed, 10))
			set("rapid.nofailfile", "true") // write none
			set("rapid.failfile", "")       // replay none given by flag
		}
	} else {
		rapidFlags.RLock()
		defer rapidFlags.RUnlock()
	}
	noRapidShrink.Do(func() {
		if fl := flag.Lookup("rapid.shrinktime"); fl != nil && fl.Value.String() == fl.DefValue {
			flag.Set("rapid.shrinktime", "1ns")
		}
	})
	rec := &recorder{T: t, name: failFileKey(t)}
	if o.Seed != 0 {
		// rapid replays every fail file stored under the test's name
		// before it searches; a name no test has (they start with "Test")
		// makes a pinned search replay none.
		rec.name = "seeded-" + rec.name
	}
	rapid.Check(rec, prop)
	warnings := pointWarnings(drawn, fired)
	if w := clocks.warning(); w != "" {
		warnings = append(warnings, w)
	}
	for _, w := range warnings {
		t.Log("locktest: warning: " + w)
	}
	if !rec.failed {
		return nil
	}
	if last == nil {
		t.Fatalf("locktest: %s", rec.msg.String())
	}
	last.RapidReport = rec.msg.String()
	last.FailFile = rapidFlag(last.RapidReport, "-rapid.failfile=")
	min := minimize(t, f, o, *last)
	min.Warnings = warnings
	return &min
}

// rapidFlags guards rapid's flags: a Find that sets -rapid.checks holds
// it exclusively, the others shared.
var rapidFlags sync.RWMutex

// noRapidShrink turns rapid's own shrinking off once per process, unless
// the user set -rapid.shrinktime (to other than its default): it is
// bounded by wall time (30 s), so
// what it returns depends on the machine's speed (and on -race), and
// run.Shrink, bounded by runs, shrinks instead: the same rapid seed gives
// the same counterexample everywhere. Never restored, so parallel tests
// never see it change.
var noRapidShrink sync.Once

// tally counts, per pause point, the runs whose schedule targets it and
// the runs in which such a pause fired.
func tally(schedule, unfired []faults.Fault, drawn, fired map[string]int) {
	for _, pt := range faults.PausePoints {
		n, missed := 0, 0
		for _, f := range schedule {
			if f.Kind == faults.ClientPause && f.At == pt {
				n++
			}
		}
		for _, f := range unfired {
			if f.At == pt {
				missed++
			}
		}
		if n > 0 {
			drawn[pt]++
			if missed < n {
				fired[pt]++
			}
		}
	}
}

// clockTally counts the client clock faults (jumps, drift) a search
// injected and those that reached the lock.
type clockTally struct{ injected, reached int }

func (c *clockTally) add(es []run.FaultEffect) {
	for _, e := range es {
		if e.Injected && (e.Fault.Kind == faults.ClockJump || e.Fault.Kind == faults.ClockDrift) && isClient(e.Fault.Targets) {
			c.injected++
			if e.Reached {
				c.reached++
			}
		}
	}
}

// warning says when at least minPointRuns client clock faults were
// injected and none reached the lock.
func (c clockTally) warning() string {
	if c.injected < minPointRuns || c.reached > 0 {
		return ""
	}
	return fmt.Sprintf("%d client clock faults (jumps, drift) were injected and none reached the lock: it never read env.Clock (code that calls time.Now reads the simulation's one shared clock), so the search never tested a wrong client clock", c.injected)
}

// isClient reports whether a fault's targets name a client (c0, c1, ...).
func isClient(targets []string) bool {
	for _, t := range targets {
		if strings.HasPrefix(t, "c") {
			return true
		}
	}
	return false
}

// minPointRuns is how many runs must have targeted a pause point, none
// of them firing, before Find warns that the lock never reaches it (a
// point the lock marks can still be missed by a few runs: the targeted
// client may not come to it again after the pause is armed).
const minPointRuns = 5

// pointWarnings names the pause points that at least minPointRuns runs
// targeted and that none of them reached.
func pointWarnings(drawn, fired map[string]int) []string {
	var out []string
	for _, pt := range faults.PausePoints {
		if drawn[pt] >= minPointRuns && fired[pt] == 0 {
			out = append(out, fmt.Sprintf("%d schedules paused a client at %q and none of those pauses fired: the lock never reached that point (an adapter marks it with env.At(locks.%s)), so the search never tried it",
				drawn[pt], pt, pointConst[pt]))
		}
	}
	return out
}

var pointConst = map[string]string{"acquiring": "PointAcquiring", "after-check": "PointAfterCheck", "before-write": "PointBeforeWrite", "renewing": "PointRenewing"}

// findCalls counts the Find calls of each running test, to key their
// fail files apart.
var findCalls = struct {
	sync.Mutex
	n map[*testing.T]int
}{n: map[*testing.T]int{}}

// failFileKey is the name rapid keys this Find call's fail file by: the
// test's name for its first call, then name#2, name#3, ...
func failFileKey(t *testing.T) string {
	findCalls.Lock()
	defer findCalls.Unlock()
	if findCalls.n[t] == 0 {
		t.Cleanup(func() {
			findCalls.Lock()
			defer findCalls.Unlock()
			delete(findCalls.n, t)
		})
	}
	findCalls.n[t]++
	if n := findCalls.n[t]; n > 1 {
		return fmt.Sprintf("%s#%d", t.Name(), n)
	}
	return t.Name()
}

// minimize shrinks rapid's failing run with locksim's one shrinker
// (run.Shrink: the same seed, fewer faults, fewer clients, shorter and
// earlier faults, while it still fails with the same kind of violation),
// then runs the shrunk schedule once more for its history. A liveness
// failure is returned as found: the shrinker keeps violation kinds, and
// a deadlock or starvation is none.
func minimize(t *testing.T, f Factory, o Options, out Outcome) Outcome {
	t.Helper()
	kind := checker.Kind("")
	switch {
	case out.Check.First != nil:
		kind = out.Check.First.Kind
	case out.Check.Porcupine == checker.LinIllegal:
		kind = checker.KindLinearizability
	}
	if out.Check.Verdict != checker.VerdictUnsafe || kind == "" {
		return out
	}
	oc := withClients(o, out.Clients)
	in := info(f, oc)
	cfg, err := world(in, oc, out.Seed)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	cfg.Faults = out.Faults
	job := run.NewJob("locktest", in, cfg, checker.Options{RequireFairness: o.Fairness})
	res, err := run.Shrink(sim.TestBubble(t), job, kind, run.ShrinkOptions{})
	if err != nil {
		t.Fatalf("locktest: shrinking seed %d: %v", out.Seed, err)
	}
	c := Run(t, f, withClients(o, res.Clients), out.Seed, res.Faults)
	c.RapidReport, c.FailFile, c.Tried = out.RapidReport, out.FailFile, out.Tried
	c.FromFaults, c.FromClients = out.FromFaults, out.FromClients
	return c
}

func withClients(o Options, n int) Options {
	o.Clients = n
	return o
}

// recorder is the testing.TB rapid reports to: it keeps rapid's failure
// report (with its fail file) instead of failing the test, and drops its
// log lines (the failing case's draws), so Check can fail with
// the shrunk counterexample, ExpectUnsafe can pass quietly, and each Find
// call keys its own fail file (Name).
type recorder struct {
	*testing.T
	name   string
	failed bool
	msg    strings.Builder
}

func (r *recorder) Name() string        { return r.name }
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Log(...any)          {}
func (r *recorder) Errorf(format string, a ...any) {
	r.failed = true
	fmt.Fprintf(&r.msg, format+"\n", a...)
}
func (r *recorder) Error(a ...any)                 { r.failed = true; fmt.Fprintln(&r.msg, a...) }
func (r *recorder) Fatalf(format string, a ...any) { r.Errorf(format, a...) }
func (r *recorder) Fatal(a ...any)                 { r.Error(a...) }
func (r *recorder) FailNow()                       { r.failed = true }
func (r *recorder) Fail()                          { r.failed = true }
func (r *recorder) Failed() bool                   { return r.failed }

// Describe renders an outcome as the failure message: what broke, how it
// was found, the shrunk schedule and the nodes' persistence, a
// locktest.Run line that replays exactly that run, and the files to look
// at (it writes porcupine's HTML of the resource history, faults
// annotated).
func Describe(t *testing.T, out Outcome) string {
	var b strings.Builder
	switch out.Check.Verdict {
	case checker.VerdictLiveness:
		b.WriteString("locksim: the lock failed liveness (after the faults healed, clients could not get it)\n")
	default:
		fmt.Fprintf(&b, "locksim: the lock is %s\n", out.Check.Verdict)
	}
	for _, r := range out.Check.Reasons {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	if out.Tried > 0 {
		shrunk := ", then shrunk"
		if out.Check.Verdict != checker.VerdictUnsafe {
			shrunk = " (a liveness failure is not shrunk)"
		}
		fmt.Fprintf(&b, "  found by random schedule %d of the search (%d faults, %d clients)%s\n", out.Tried, out.FromFaults, out.FromClients, shrunk)
	}
	fmt.Fprintf(&b, "  counterexample: seed %d, %d clients, %d faults:\n", out.Seed, out.Clients, len(out.Faults))
	for _, f := range out.Faults {
		fmt.Fprintf(&b, "    %s\n", f)
	}
	var nodes []string
	for i, p := range out.Persistence {
		nodes = append(nodes, fmt.Sprintf("n%d %s", i, p))
	}
	fmt.Fprintf(&b, "  persistence: %s\n", strings.Join(nodes, ", "))
	for _, f := range out.Unfired {
		fmt.Fprintf(&b, "  never fired: %s (the client never reached %q while it was armed)\n", f, f.At)
	}
	for _, e := range out.Effects {
		if e.Injected && !e.Reached {
			fmt.Fprintf(&b, "  did not reach the lock: %s (%s)\n", e.Fault, e.Why)
		}
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	if out.Scenario != "" {
		fmt.Fprintf(&b, "  repro: locktest.Scenario(t, %q, yourFactory, %s, %d)\n", out.Scenario, GoOptions(out.Options), out.Seed)
	} else {
		fmt.Fprintf(&b, "  repro: locktest.Run(t, yourFactory, %s, %d, %s)\n", GoOptions(out.Options), out.Seed, GoSchedule(out.Faults))
	}
	if out.FailFile != "" {
		fmt.Fprintf(&b, "  rapid's fail file (the next go test replays its unshrunk case first): %s\n", out.FailFile)
	}
	if out.Check.Linearizability.Info != nil {
		dir := filepath.Join(os.TempDir(), "locksim-"+strings.NewReplacer("/", "_", " ", "_", "#", "_").Replace(t.Name()))
		path := filepath.Join(dir, "porcupine.html")
		if err := os.MkdirAll(dir, 0o755); err == nil && checker.WriteVisualization(path, out.history, out.Check) == nil {
			fmt.Fprintf(&b, "  resource history (porcupine, faults annotated): %s\n", path)
		}
	}
	return b.String()
}

// GoOptions prints o as a Go composite literal for a Run line: the fields
// that decide a run (Topology, Clients, TTL) and every other field of the
// world that differs from what the defaults make of them (the search's
// fields, Kinds to Checks, do not change a Run).
func GoOptions(o Options) string {
	o = o.withDefaults()
	d := Options{Topology: o.Topology, TTL: o.TTL, Fencing: o.Fencing}.withDefaults()
	fields := []string{"Topology: " + topologyConst[o.Topology], fmt.Sprintf("Clients: %d", o.Clients), "TTL: " + goDuration(o.TTL)}
	add := func(set bool, f string, a ...any) {
		if set {
			fields = append(fields, fmt.Sprintf(f, a...))
		}
	}
	add(o.Nodes != 0, "Nodes: %d", o.Nodes)
	add(o.Fencing != "", "Fencing: %q", o.Fencing)
	add(o.Persistence != "", "Persistence: %q", o.Persistence)
	add(o.Duration != d.Duration, "Duration: %s", goDuration(o.Duration))
	add(o.Liveness != d.Liveness, "Liveness: %s", goDuration(o.Liveness))
	add(o.ReplLag != 0, "ReplLag: %s", goDuration(o.ReplLag))
	add(o.DownAfter != 0, "DownAfter: %s", goDuration(o.DownAfter))
	add(o.HoldMin != d.HoldMin || o.HoldMax != d.HoldMax, "HoldMin: %s, HoldMax: %s", goDuration(o.HoldMin), goDuration(o.HoldMax))
	add(o.Workload != d.Workload, "Workload: locktest.%s", workloadConst[o.Workload])
	add(o.Fairness, "Fairness: true")
	return "locktest.Options{" + strings.Join(fields, ", ") + "}"
}

var topologyConst = map[locks.Topology]string{locks.Single: "locks.Single", locks.Independent: "locks.Independent", locks.Replicated: "locks.Replicated"}
var workloadConst = map[Workload]string{Careful: "Careful", Careless: "Careless"}

// GoSchedule prints a fault schedule as a Go []faults.Fault literal.
func GoSchedule(fs []faults.Fault) string {
	if len(fs) == 0 {
		return "nil"
	}
	var parts []string
	for _, f := range fs {
		kind, ok := kindConst[f.Kind]
		if !ok {
			kind = strconv.Quote(string(f.Kind))
		}
		fields := []string{"Kind: " + kind, "Start: " + goDuration(f.Start)}
		add := func(set bool, s string, a ...any) {
			if set {
				fields = append(fields, fmt.Sprintf(s, a...))
			}
		}
		add(f.Duration != 0, "Duration: %s", goDuration(f.Duration))
		add(f.Targets != nil, "Targets: %s", goStrings(f.Targets))
		add(f.From != nil, "From: %s", goStrings(f.From))
		add(f.To != nil, "To: %s", goStrings(f.To))
		add(f.OneWay, "OneWay: true")
		add(f.DriftPPM != 0, "DriftPPM: %d", f.DriftPPM)
		add(f.Jump != 0, "Jump: %s", goDuration(f.Jump))
		add(f.Delay != 0, "Delay: %s", goDuration(f.Delay))
		add(f.LossProb != 0, "LossProb: %s", strconv.FormatFloat(f.LossProb, 'g', -1, 64))
		add(f.At != "", "At: %q", f.At)
		add(f.NodeClock, "NodeClock: true")
		parts = append(parts, "{"+strings.Join(fields, ", ")+"}")
	}
	return "[]faults.Fault{" + strings.Join(parts, ", ") + "}"
}

var kindConst = map[faults.Kind]string{faults.ClientPause: "faults.ClientPause", faults.NodePause: "faults.NodePause", faults.ClockDrift: "faults.ClockDrift",
	faults.ClockJump: "faults.ClockJump", faults.Partition: "faults.Partition", faults.Delay: "faults.Delay", faults.Loss: "faults.Loss",
	faults.Crash: "faults.Crash", faults.Failover: "faults.Failover"}

func goStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}

// goDuration prints d as a Go expression of package time, exactly.
func goDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "time.Hour"}, {time.Minute, "time.Minute"}, {time.Second, "time.Second"}, {time.Millisecond, "time.Millisecond"}, {time.Microsecond, "time.Microsecond"}} {
		if d%u.d == 0 {
			if d == u.d {
				return u.name
			}
			return fmt.Sprintf("%d * %s", d/u.d, u.name)
		}
	}
	return fmt.Sprintf("%d", int64(d))
}

// rapidFlag pulls a flag's value out of rapid's report (e.g.
// "-rapid.seed=N" or "-rapid.failfile=PATH"), "" when absent.
func rapidFlag(report, flag string) string {
	i := strings.Index(report, flag)
	if i < 0 {
		return ""
	}
	v := report[i+len(flag):]
	if strings.HasPrefix(v, `"`) { // rapid quotes paths with %q
		if j := strings.Index(v[1:], `"`); j >= 0 {
			return v[1 : j+1]
		}
	}
	if j := strings.IndexAny(v, " \n)"); j >= 0 {
		v = v[:j]
	}
	return v
}

// Standalone runs f with a *testing.T of its own, for Example functions
// (which get none). It reports whether f passed.
func Standalone(f func(t *testing.T)) bool { return sim.InTest(f) }

// Library returns the factory of a lock in locksim's catalogue (e.g.
// "redsync", "redislock", "set-nx-cad"), for comparing your lock with it.
// A catalogue lock keeps its own lease (locks.Get(id).TTL: redsync 8 s,
// redislock 3 s): set Options.TTL to it, so that the search and the
// workload are sized by the lease the lock really takes.
func Library(id string) Factory {
	info, err := catalogue.Get(id)
	if err != nil {
		return func(locks.Env) (locks.Lock, error) { return nil, err }
	}
	return Factory(info.New)
}
