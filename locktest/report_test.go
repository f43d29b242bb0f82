package locktest_test

import (
	"context"
	"flag"
	"go/parser"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// brokenQuick is a world where the plain-DEL lock breaks within a few
// schedules: its release deletes the next holder's key once a section runs
// to the lease's end. p = 0.110, 0.112 (TestSearchPower): 150 schedules
// miss with chance 3e-8; the seed is pinned.
var brokenQuick = locktest.Options{Duration: 10 * time.Second, Liveness: 5 * time.Second, Kinds: []faults.Kind{faults.Delay}, Checks: 150, Seed: 1}

// The failure's repro line replays exactly the shrunk counterexample: it
// is valid Go, and running it gives the same trace hash and verdict. It
// also says how many schedules the search tried.
func TestReproReplaysShrunkCase(t *testing.T) {
	t.Cleanup(func() { os.RemoveAll(filepath.Join("testdata", "rapid", t.Name())) })
	failed := locktest.Find(t, newMyLock(false, false), brokenQuick)
	if failed == nil {
		t.Fatal("the plain-DEL lock was not found")
	}
	msg := locktest.Describe(t, *failed)
	m := regexp.MustCompile(`repro \(fails the test while the lock is unsafe\): (locktest\.RequireSafe\(t, locktest\.Run\(t, yourFactory, .*\)\))\n`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("no locktest.RequireSafe(t, locktest.Run(...)) repro line:\n%s", msg)
	}
	if _, err := parser.ParseExpr(m[1]); err != nil {
		t.Fatalf("the repro line is not Go: %v\n%s", err, m[1])
	}
	if !strings.Contains(m[1], locktest.GoSchedule(failed.Faults)) || !strings.Contains(m[1], locktest.GoOptions(failed.Options)) {
		t.Fatalf("the repro line does not carry the shrunk schedule and options:\n%s", msg)
	}
	again := locktest.Run(t, newMyLock(false, false), failed.Options, failed.Seed, failed.Faults)
	if again.SHA256 != failed.SHA256 || again.Verdict() != failed.Verdict() {
		t.Fatalf("replaying the repro: trace %s verdict %s, the counterexample had %s %s", again.SHA256, again.Verdict(), failed.SHA256, failed.Verdict())
	}
	if !strings.Contains(msg, "of the search with -rapid.seed=1 (Options.Seed 1), then shrunk") || failed.SearchSeed != 1 {
		t.Fatalf("the message does not name the search's seed (SearchSeed %d):\n%s", failed.SearchSeed, msg)
	}
	if failed.Tried < 1 || !strings.Contains(msg, "found by random schedule ") {
		t.Fatalf("the message does not say how many schedules were tried (Tried %d):\n%s", failed.Tried, msg)
	}
}

// The repro statement, as printed, fails the test that runs it while the
// lock is unsafe, with the description (the child process runs the
// statement TestDescribeGolden's message prints, with the broken lock as
// yourFactory), and passes with a fixed lock.
func TestReproFailsTheTest(t *testing.T) {
	out, err := helperRun("repro-broken")
	if err == nil || !strings.Contains(out, "--- FAIL: TestHelper") || !strings.Contains(out, "locksim: the lock is unsafe") {
		t.Fatalf("the repro statement did not fail its test (err %v):\n%s", err, out)
	}
	if out, err := helperRun("repro-fixed"); err != nil {
		t.Fatalf("the repro statement failed with the fixed lock: %v\n%s", err, out)
	}
}

// Two Find calls in one test keep separate fail files: the second does not
// replay the first's failure.
func TestFailFilePerFind(t *testing.T) {
	t.Cleanup(func() {
		os.RemoveAll(filepath.Join("testdata", "rapid", t.Name()))
		os.RemoveAll(filepath.Join("testdata", "rapid", t.Name()+"_2"))
	})
	// rapid's own seed (a pinned Seed writes no fail file), so budgets
	// that miss with chance ≤ 1e-7: 200 schedules at p = 0.110, and
	// getDelDelays (TestSearchPower).
	opts := brokenQuick
	opts.Checks, opts.Seed = 200, 0
	first := locktest.Find(t, newMyLock(false, false), opts)
	second := locktest.Find(t, newGetDelLock, getDelDelays)
	if first == nil || second == nil {
		t.Fatalf("both locks are broken: first %v, second %v", first != nil, second != nil)
	}
	if first.FailFile == "" || second.FailFile == "" || first.FailFile == second.FailFile {
		t.Fatalf("fail files: first %q, second %q; want two different files", first.FailFile, second.FailFile)
	}
	if filepath.Dir(first.FailFile) == filepath.Dir(second.FailFile) {
		t.Fatalf("fail files share a directory, so Find would replay both for each call: %q, %q", first.FailFile, second.FailFile)
	}
}

// The failure message, pinned (README's Go API section shows it): the
// search for the plain-DEL lock under delays, with rapid's seed fixed.
// rapid's own shrinking never runs under Find (it stops at a wall-clock bound, so
// what it reaches depends on the machine's speed, e.g. under -race);
// run.Shrink, bounded by a count of runs, does all the shrinking.
func TestDescribeGolden(t *testing.T) {
	failed := locktest.Find(t, newMyLock(false, false), brokenQuick) // Seed 1
	if failed == nil {
		t.Fatal("not found")
	}
	got := strings.ReplaceAll(locktest.Describe(t, *failed), os.TempDir(), "$TMPDIR")
	path := filepath.Join("testdata", "describe.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("Describe changed (go test -run TestDescribeGolden -update to accept):\n--- got\n%s--- want\n%s", got, want)
	}
}

// helper runs this test binary's TestHelper with mode and flags, and
// returns its output.
func helper(t *testing.T, mode string, args ...string) string {
	t.Helper()
	out, err := helperRun(mode, args...)
	if err != nil {
		t.Fatalf("helper %s: %v\n%s", mode, err, out)
	}
	return out
}

// helperRun runs TestHelper in mode in a child process: its output and
// exit error.
func helperRun(mode string, args ...string) (string, error) {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelper$", "-rapid.nofailfile"}, args...)...)
	cmd.Env = append(os.Environ(), "LOCKTEST_HELPER="+mode)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestHelper is run by helper in a child process.
func TestHelper(t *testing.T) {
	switch os.Getenv("LOCKTEST_HELPER") {
	case "":
		t.Skip("run by helper")
	case "repro-broken", "repro-fixed":
		// The repro statement testdata/describe.golden prints.
		yourFactory := newMyLock(false, false)
		if os.Getenv("LOCKTEST_HELPER") == "repro-fixed" {
			yourFactory = newMyLock(true, false)
		}
		locktest.RequireSafe(t, locktest.Run(t, yourFactory, locktest.Options{Topology: locks.Single, Clients: 3, TTL: 3 * time.Second, Duration: 10 * time.Second, Liveness: 5 * time.Second}, 1, []faults.Fault{{Kind: faults.Delay, Start: 2995227329, Duration: 1385875, From: []string{"c2"}, To: []string{"n0"}, OneWay: true, Delay: 3000000117}}))
	case "expect-unsafe":
		locktest.ExpectUnsafe(t, newMyLock(false, false), brokenQuick)
	case "factory-typo":
		locktest.Check(t, locktest.Library("redsnyc"), locktest.Options{NoFaults: true})
	case "acquire-errs":
		locktest.Check(t, func(env locks.Env) (locks.Lock, error) { return errLock{env}, nil }, locktest.Options{NoFaults: true})
	case "unmarked-points":
		// myLock marks no pause point of its own: pauses at acquiring and
		// after-check never fire.
		locktest.Check(t, newMyLock(true, true), locktest.Options{Fencing: locks.FenceMaxToken, Kinds: []faults.Kind{faults.ClientPause}, Checks: 40})
	}
}

// A passing ExpectUnsafe is quiet: nothing without -v, and with -v the
// shrunk counterexample only, not rapid's draws or its unshrunk verdict.
func TestExpectUnsafeIsQuiet(t *testing.T) {
	quiet := helper(t, "expect-unsafe")
	if strings.TrimSpace(quiet) != "PASS" {
		t.Errorf("without -v, want only PASS:\n%s", quiet)
	}
	verbose := helper(t, "expect-unsafe", "-test.v")
	if !strings.Contains(verbose, "counterexample: seed") {
		t.Errorf("with -v, want the shrunk counterexample:\n%s", verbose)
	}
	for _, noise := range []string{"[rapid]", "[TestHelper]", "faults (", "seed (", "unsafe: "} {
		if strings.Contains(verbose, noise) {
			t.Errorf("with -v, rapid's own output (%q) is logged:\n%s", noise, verbose)
		}
	}
}

// Targeted pauses at points the lock never marks are reported: a lock
// that calls env.At for none of its points gets a warning naming each
// such point.
func TestUnmarkedPausePointsWarn(t *testing.T) {
	// A fixed rapid seed: with a random one, a point is now and then
	// drawn in fewer than the 5 schedules a warning needs.
	out := helper(t, "unmarked-points", "-test.v", "-rapid.seed=1")
	for _, pt := range []string{`"acquiring"`, `"after-check"`} {
		if !regexp.MustCompile(`warning: \d+ schedules paused a client or armed a fault at ` + regexp.QuoteMeta(pt) + ` and none of those fired`).MatchString(out) {
			t.Errorf("no warning for %s:\n%s", pt, out)
		}
	}
	if strings.Contains(out, `at "before-write" and none`) {
		t.Errorf("before-write is marked by the workload, yet warned about:\n%s", out)
	}
	// One run: the outcome lists the pause that never fired.
	pause := []faults.Fault{{Kind: faults.ClientPause, Start: time.Second, Duration: 5 * time.Second, Targets: []string{"c0"}, At: "after-check"}}
	run := locktest.Run(t, newMyLock(true, false), locktest.Options{}, 1, pause)
	if len(run.Unfired) != 1 || !strings.Contains(locktest.Describe(t, run), "never fired: client-pause@1s+5s c0 at after-check") {
		t.Fatalf("Unfired %v:\n%s", run.Unfired, locktest.Describe(t, run))
	}
}

// A built-in scenario runs a user's lock: Kleppmann's pause after the
// check breaks an unfenced lock and not a fenced one. The pause fires only
// because the adapter marks after-check. (The scenario's own careless
// workload: careful code would not write with the lease the pause ran
// out, see TestScenarioRunsTheSameWorkload.)
func TestScenario(t *testing.T) {
	o := locktest.Options{Workload: locktest.ScenarioWorkload}
	unfenced := locktest.Scenario(t, "pause-after-check", newWatchdogLock(false), o, 1)
	if unfenced.Verdict() != "unsafe" || len(unfenced.Unfired) != 0 {
		t.Fatalf("pause-after-check, unfenced: %s, unfired %v: %v", unfenced.Verdict(), unfenced.Unfired, unfenced.Check.Reasons)
	}
	if !strings.Contains(locktest.Describe(t, unfenced), `: locktest.RequireSafe(t, locktest.Scenario(t, "pause-after-check", yourFactory, `) {
		t.Errorf("no Scenario repro line:\n%s", locktest.Describe(t, unfenced))
	}
	o.Fencing = locks.FenceMaxToken
	if fenced := locktest.Scenario(t, "no-faults", newMyLock(true, true), o, 1); fenced.Verdict() != "safe" {
		t.Fatalf("no-faults, fenced: %s: %v", fenced.Verdict(), fenced.Check.Reasons)
	}
}

// Scenarios whose faults are restricted to catalogue locks (locks: in the
// file) give a user's lock the faults of its topology's stand-in: before,
// clock-jump ran a user's single-node lock with no fault at all and called
// it safe.
func TestScenarioRestrictedFaults(t *testing.T) {
	for _, c := range []struct {
		id   string
		o    locktest.Options
		f    locktest.Factory
		want string
	}{
		{"clock-jump", locktest.Options{}, newMyLock(true, false), "unsafe"},
		{"restart-no-persistence", locktest.Options{}, newMyLock(true, false), "unsafe"},
		{"clock-jump", locktest.Options{Topology: locks.Independent}, newRedlockLock(false), "unsafe"},
	} {
		t.Run(c.id+"/"+string(c.o.Topology), func(t *testing.T) {
			out := locktest.Scenario(t, c.id, c.f, c.o, 1)
			if len(out.Faults) == 0 {
				t.Fatalf("%s ran no faults", c.id)
			}
			if string(out.Verdict()) != c.want {
				t.Fatalf("%s: %s, want %s: %v\n%s", c.id, out.Verdict(), c.want, out.Check.Reasons, locktest.Describe(t, out))
			}
		})
	}
}

// The Go API's page (docs/LOCKTEST.md, where README's Go API section
// moved) shows the golden failure message verbatim.
func TestReadmeShowsGolden(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "docs", "LOCKTEST.md"))
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "describe.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```\n"+string(golden)+"```\n") {
		t.Fatal("docs/LOCKTEST.md does not show testdata/describe.golden verbatim in a code block")
	}
}

// helperFails runs the helper in a mode where the test must fail, and
// returns its output.
func helperFails(t *testing.T, mode string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelper$", "-rapid.nofailfile", "-test.short")
	cmd.Env = append(os.Environ(), "LOCKTEST_HELPER="+mode)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("helper %s passed; want a failure:\n%s", mode, out)
	}
	return string(out)
}

// A factory that fails fails the test, naming its error; before, the
// clients quietly never ran and Check passed (nobody took the lock, a
// liveness verdict Check ignored).
func TestFactoryErrorFails(t *testing.T) {
	out := helperFails(t, "factory-typo")
	if !strings.Contains(out, "the factory failed for client c0") || !strings.Contains(out, `"redsnyc"`) {
		t.Fatalf("the failure does not name the factory's error:\n%s", out)
	}
}

// A lock nobody can take (its Acquire always errs) fails Check: a
// liveness verdict fails like an unsafe one.
func TestUnavailableLockFails(t *testing.T) {
	out := helperFails(t, "acquire-errs")
	if !strings.Contains(out, "locksim: the lock failed liveness") || !strings.Contains(out, "NOSUCHCOMMAND") {
		t.Fatalf("want a liveness failure:\n%s", out)
	}
}

// errLock's Acquire always fails with a server error.
type errLock struct{ env locks.Env }

func (l errLock) Acquire(ctx context.Context) (locks.Lease, error) {
	return locks.Lease{}, l.env.Primary.Do(ctx, "NOSUCHCOMMAND").Err()
}
func (errLock) Release(context.Context, locks.Lease) error { return nil }

// rapid's flags are not changed under a parallel Find: one Find with
// Checks set and one without, in parallel, each run their own number of
// schedules (before, the second read the first's -rapid.checks, or the
// first restored it under the second).
func TestParallelFindsKeepTheirChecks(t *testing.T) {
	counted := func(n *atomic.Int64) locktest.Factory {
		return func(env locks.Env) (locks.Lock, error) {
			if env.Client == "c0" {
				n.Add(1) // one c0 per run
			}
			return newMyLock(true, false)(env)
		}
	}
	defaults := 100
	if testing.Short() {
		defaults = 20
	}
	var a, b atomic.Int64
	t.Run("group", func(t *testing.T) {
		t.Run("checks", func(t *testing.T) {
			t.Parallel()
			if locktest.Find(t, counted(&a), locktest.Options{NoFaults: true, Checks: 7}) != nil {
				t.Fatal("a correct lock failed with no faults")
			}
		})
		t.Run("default", func(t *testing.T) {
			t.Parallel()
			if locktest.Find(t, counted(&b), locktest.Options{NoFaults: true}) != nil {
				t.Fatal("a correct lock failed with no faults")
			}
		})
	})
	if a.Load() != 7 || b.Load() != int64(defaults) {
		t.Fatalf("runs: %d with Checks 7 (want 7), %d with the default (want %d)", a.Load(), b.Load(), defaults)
	}
}

// GoSchedule prints every field of a fault that is set: a field it left
// out would make a printed repro a different schedule (NodeClock once was).
func TestGoScheduleEveryField(t *testing.T) {
	var f faults.Fault
	v := reflect.ValueOf(&f).Elem()
	for i := range v.NumField() {
		switch fv := v.Field(i); fv.Kind() {
		case reflect.String:
			fv.SetString("x")
		case reflect.Int64:
			fv.SetInt(7)
		case reflect.Float64:
			fv.SetFloat(0.5)
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Slice:
			fv.Set(reflect.ValueOf([]string{"c0"}))
		default:
			t.Fatalf("field %s: kind %s not covered by this test", v.Type().Field(i).Name, fv.Kind())
		}
	}
	out := locktest.GoSchedule([]faults.Fault{f})
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; !strings.Contains(out, name+":") {
			t.Errorf("GoSchedule leaves out %s: %s", name, out)
		}
	}
}

// A pinned search (Options.Seed) replays no fail file: here the second
// Find's name has one stored, from a search that found the bug (an
// unpinned Find replays every file under its name before it searches).
// It must find what a pinned search with no file beside it finds; an
// unpinned search under that name replays the stored case first.
func TestSeedReplaysNoFailFile(t *testing.T) {
	dirs := []string{t.Name(), t.Name() + "_2"}
	t.Cleanup(func() {
		for _, d := range dirs {
			os.RemoveAll(filepath.Join("testdata", "rapid", d))
		}
	})
	unpinned := brokenQuick
	unpinned.Seed = 0
	first := locktest.Find(t, newMyLock(false, false), unpinned)
	if first == nil || first.FailFile == "" {
		t.Fatalf("the unpinned search wrote no fail file: %+v", first)
	}
	stale := filepath.Join("testdata", "rapid", dirs[1], dirs[1]+"-stale.seed")
	data, err := os.ReadFile(first.FailFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, data, 0o644); err != nil {
		t.Fatal(err)
	}
	beside := locktest.Find(t, newMyLock(false, false), brokenQuick) // "#2": the stale file's name
	alone := locktest.Find(t, newMyLock(false, false), brokenQuick)  // "#3": none
	if beside == nil || alone == nil {
		t.Fatal("a pinned search missed the plain-DEL lock")
	}
	if beside.Tried != alone.Tried || beside.Seed != alone.Seed || beside.SHA256 != alone.SHA256 {
		t.Fatalf("beside a stale fail file the pinned search found schedule %d (seed %d), alone schedule %d (seed %d): it replayed the file",
			beside.Tried, beside.Seed, alone.Tried, alone.Seed)
	}
	// The next call, #4, unpinned, with the file copied under its name:
	// it replays the stored case first and finds it there.
	dirs = append(dirs, t.Name()+"_4")
	replay := filepath.Join("testdata", "rapid", dirs[2], dirs[2]+"-copy.seed")
	if err := os.MkdirAll(filepath.Dir(replay), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(replay, data, 0o644); err != nil {
		t.Fatal(err)
	}
	again := locktest.Find(t, newMyLock(false, false), unpinned)
	if again == nil || again.Tried != 1 || again.FailFile != replay || again.Seed != first.Seed {
		t.Fatalf("the unpinned search did not replay the stored case first: %+v (stored: seed %d)", again, first.Seed)
	}
}

// Find sets none of rapid's flags, not even while it searches: a
// rapid.Check of the user's own in a parallel test sees the command line.
func TestFindLeavesRapidFlags(t *testing.T) {
	values := func() map[string]string {
		m := map[string]string{}
		flag.VisitAll(func(f *flag.Flag) {
			if strings.HasPrefix(f.Name, "rapid.") {
				m[f.Name] = f.Value.String()
			}
		})
		return m
	}
	before := values()
	if len(before) == 0 {
		t.Fatal("no rapid flags registered")
	}
	runs := 0
	watch := func(env locks.Env) (locks.Lock, error) {
		if env.Client == "c0" {
			runs++
			if now := values(); !maps.Equal(now, before) {
				t.Errorf("during a search rapid's flags are %v, before %v", now, before)
			}
		}
		return newMyLock(true, false)(env)
	}
	if locktest.Find(t, watch, locktest.Options{NoFaults: true, Checks: 3, Seed: 7}) != nil {
		t.Fatal("a correct lock failed with no faults")
	}
	if runs != 3 {
		t.Fatalf("%d runs, want Checks 3", runs)
	}
	if after := values(); !maps.Equal(after, before) {
		t.Fatalf("after a search rapid's flags are %v, before %v", after, before)
	}
}
