// Package locktest runs a lock through locksim's simulated world from a Go
// test: random fault schedules (pgregory.net/rapid, which shrinks them),
// every run checked, and on failure a shrunk counterexample with a one-line
// repro and the files that show it.
//
// A test reads like:
//
//	func TestMyLock(t *testing.T) {
//		locktest.Check(t, func(env locks.Env) (locks.Lock, error) {
//			return mylock.New(env.Primary, env.Key, env.Clock), nil
//		}, locktest.Options{Topology: locks.Single, TTL: 3 * time.Second})
//	}
//
// The lock gets go-redis v9 clients whose connections go through the
// simulated network, its own clock (locks.Env.Clock), and a random stream.
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
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// Factory builds one client's instance of the lock under test.
type Factory func(env locks.Env) (locks.Lock, error)

// Options describe the world and the fault budget. Zero values take the
// defaults in brackets.
type Options struct {
	// Topology is what the lock talks to [locks.Single]: one node,
	// Independent nodes (Nodes of them [5]), or a Replicated primary with
	// two async replicas and Sentinel failover.
	Topology locks.Topology
	Nodes    int
	Clients  int // [3]
	// TTL is the lock's lease, used to size pauses that outlive it [3 s].
	TTL time.Duration
	// Fencing is the resource check the lock relies on ["" = none: the lock
	// itself must exclude]; see locks.Fencing.
	Fencing locks.Fencing
	// Kinds are the fault kinds that may be drawn [every kind that applies
	// to the topology]; MaxFaults bounds a schedule [4].
	Kinds     []faults.Kind
	MaxFaults int
	// Duration of the safety phase [30 s] and of the liveness phase [10 s].
	Duration, Liveness time.Duration
	// ReplLag is the replication lag of a Replicated topology [0-50 ms,
	// drawn from the seed].
	ReplLag time.Duration
	// DownAfter is how long Sentinel waits before failing over [5 s].
	DownAfter time.Duration
	// HoldMin and HoldMax bound a critical section [50 ms, 1 s].
	HoldMin, HoldMax time.Duration
	// Checks is the number of random schedules [rapid's -rapid.checks:
	// 100, a fifth under -short]. Setting it sets that flag for the
	// duration of the call (do not combine with t.Parallel).
	Checks int
	// Determinism re-runs every failing case and demands the same trace hash.
	Determinism bool
	// Fairness judges fairness: a client that never acquires after the heal
	// while others do is a liveness failure (checker.Options.RequireFairness),
	// and Check and Find fail on liveness verdicts as well as unsafe ones.
	// Without it, starvation is a figure (Outcome.Check.Liveness.Starved).
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
		o.Duration = 30 * time.Second
	}
	if o.Liveness == 0 {
		o.Liveness = 10 * time.Second
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
	// RapidReport is rapid's own failure report, with its repro flags.
	RapidReport string
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
	if err := cfg.Validate(); err != nil {
		t.Fatalf("locktest: %v", err)
	}
	j, err := job(in, cfg, o).Run(sim.TestBubble(t))
	if err == nil && j.Err != nil {
		err = j.Err
	}
	if err != nil {
		t.Fatalf("locktest: seed %d: %v", seed, err)
	}
	return Outcome{Seed: seed, Faults: schedule, Clients: cfg.Clients, Check: j.Check, SHA256: j.Result.TraceSHA256, history: j.History}
}

// world is the default world for the lock under test, without faults.
func world(in locks.Info, o Options, seed uint64) (sim.Config, error) {
	return scenarios.World(in, seed, scenarios.Params{Clients: o.Clients, Nodes: o.Nodes, Duration: o.Duration, Liveness: o.Liveness,
		ReplLag: o.ReplLag, DownAfter: o.DownAfter, HoldMin: o.HoldMin, HoldMax: o.HoldMax})
}

// job is the run of a world built for the lock under test, judged as
// the default scenario's (the bonus pool).
func job(in locks.Info, cfg sim.Config, o Options) *run.Job {
	return run.NewJob("locktest", in, cfg, checker.Options{RequireFairness: o.Fairness})
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
// shrunk counterexample if any run is unsafe. The failure names the seed,
// the shrunk fault schedule, the rapid repro flags, and the files that show
// the violation.
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
	// The violation found here is the expected outcome, not a bug to
	// keep: no rapid fail file, so that every run searches afresh (a
	// fail file would be replayed first next time and make the test pass
	// whatever the search would find).
	if fl := flag.Lookup("rapid.nofailfile"); fl != nil {
		old := fl.Value.String()
		flag.Set("rapid.nofailfile", "true")
		defer flag.Set("rapid.nofailfile", old)
	}
	failed := Find(t, f, o)
	if failed == nil {
		t.Fatalf("locktest: expected the lock to be unsafe under %v, but no random schedule (Options.Checks or -rapid.checks) found a violation", kindsOf(o))
		return Outcome{}
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
// rapid shrank to, or nil when every run was safe.
func Find(t *testing.T, f Factory, o Options) *Outcome {
	t.Helper()
	o = o.withDefaults()
	gen := Schedules(o)
	var last *Outcome
	prop := func(rt *rapid.T) {
		seed := rapid.Uint64Range(1, 1<<32).Draw(rt, "seed")
		schedule := gen.Draw(rt, "faults")
		out := Run(t, f, o, seed, schedule)
		if o.Determinism {
			if again := Run(t, f, o, seed, schedule); again.SHA256 != out.SHA256 {
				rt.Fatalf("locktest: seed %d is not deterministic: trace %s then %s (the lock reads a clock or random source locksim does not control?)", seed, out.SHA256, again.SHA256)
			}
		}
		if out.Check.Verdict == checker.VerdictUnsafe || (o.Fairness && out.Check.Verdict == checker.VerdictLiveness) {
			last = &out
			rt.Fatalf("%s: %s", out.Check.Verdict, strings.Join(out.Check.Reasons, "; "))
		}
	}
	if o.Checks > 0 {
		n := o.Checks
		if testing.Short() {
			n *= 5 // rapid divides by 5 under -short; Checks means what it says
		}
		if fl := flag.Lookup("rapid.checks"); fl != nil {
			old := fl.Value.String()
			flag.Set("rapid.checks", strconv.Itoa(n))
			defer flag.Set("rapid.checks", old)
		}
	}
	rec := &recorder{T: t}
	rapid.Check(rec, prop)
	if !rec.failed {
		return nil
	}
	if last == nil {
		t.Fatalf("locktest: %s", rec.msg.String())
	}
	last.RapidReport = rec.msg.String()
	min := minimize(t, f, o, *last)
	return &min
}

// minimize shrinks rapid's failing run with locksim's one shrinker
// (run.Shrink: the same seed, fewer faults, fewer clients, shorter and
// earlier faults, while it still fails with the same kind of violation),
// then runs the shrunk schedule once more for its history. A liveness
// failure (Options.Fairness) is kept as rapid shrank it: the shrinker
// keeps violation kinds, and starvation is none.
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
	res, err := run.Shrink(sim.TestBubble(t), job(in, cfg, oc), kind, run.ShrinkOptions{})
	if err != nil {
		t.Fatalf("locktest: shrinking seed %d: %v", out.Seed, err)
	}
	c := Run(t, f, withClients(o, res.Clients), out.Seed, res.Faults)
	c.RapidReport = out.RapidReport
	return c
}

func withClients(o Options, n int) Options {
	o.Clients = n
	return o
}

func named(fs []faults.Fault, name string) bool {
	for _, f := range fs {
		for _, l := range [][]string{f.Targets, f.From, f.To} {
			for _, n := range l {
				if n == name {
					return true
				}
			}
		}
	}
	return false
}

// recorder is the testing.TB rapid reports to: it keeps rapid's failure
// report (with its -rapid.seed repro flag) instead of failing the test, so
// Check can fail with the counterexample and ExpectUnsafe can pass.
type recorder struct {
	*testing.T
	failed bool
	msg    strings.Builder
}

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

// Describe renders an outcome as the failure message: what broke, the
// seed, the shrunk schedule, how to reproduce it, and the files to look at
// (it writes porcupine's HTML of the resource history, faults annotated).
func Describe(t *testing.T, out Outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "locksim: the lock is %s\n", out.Check.Verdict)
	for _, r := range out.Check.Reasons {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	fmt.Fprintf(&b, "  shrunk counterexample: seed %d, %d clients, %d faults:\n", out.Seed, out.Clients, len(out.Faults))
	for _, f := range out.Faults {
		fmt.Fprintf(&b, "    %s\n", f)
	}
	switch seed, file := rapidFlag(out.RapidReport, "-rapid.seed="), rapidFlag(out.RapidReport, "-rapid.failfile="); {
	case file != "":
		fmt.Fprintf(&b, "  repro: go test -run '^%s$' -rapid.failfile=%s\n", t.Name(), file)
	case seed != "":
		fmt.Fprintf(&b, "  repro: go test -run '^%s$' -rapid.seed=%s\n", t.Name(), seed)
	}
	if out.Check.Linearizability.Info != nil {
		dir := filepath.Join(os.TempDir(), "locksim-"+strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
		path := filepath.Join(dir, "porcupine.html")
		if err := os.MkdirAll(dir, 0o755); err == nil && checker.WriteVisualization(path, out.history, out.Check) == nil {
			fmt.Fprintf(&b, "  resource history (porcupine, faults annotated): %s\n", path)
		}
	}
	return b.String()
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
func Library(id string) Factory {
	info, err := locks.Get(id)
	if err != nil {
		return func(locks.Env) (locks.Lock, error) { return nil, err }
	}
	return Factory(info.New)
}
