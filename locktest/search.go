package locktest

import (
	"flag"
	"fmt"
	"hash/maphash"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	core "github.com/locksim/locksim/internal/search"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// Find runs random schedules (Options.Checks of them, else rapid's
// -rapid.checks: 100 by default, a fifth under -short) and returns the
// smallest unsafe outcome run.Shrink shrank it to, or nil when every run
// was safe. A liveness failure is returned as found.
//
// Find drives the search itself: rapid's generators draw each schedule
// from a case seed (Generator.Example), and Find never runs rapid.Check,
// so it sets none of rapid's flags and rapid's own wall-clock-bounded
// shrinking never runs (run.Shrink, bounded by runs, shrinks instead: the
// same seed gives the same counterexample everywhere). It reads
// -rapid.seed, -rapid.checks and -rapid.nofailfile from the command line.
//
// An unpinned search (Options.Seed 0) first replays the fail files stored
// under its name, then writes one for the case it finds (see failFile).
// Each Find call in a test has its own name (the first keeps the test's
// name, the next ones add "#2", "#3", ...), so a second call never
// replays the first one's failure. A targeted pause point that was drawn
// but never reached is logged (and named in a failure).
func Find(t *testing.T, f Factory, o Options) *Outcome {
	t.Helper()
	found, _ := search(t, f, o, false)
	return found
}

// passedOver is what a search that expects a class or kind of violation
// (Options.ExpectClass, ExpectKind) found of other ones.
type passedOver struct {
	n     int
	first *Outcome // unshrunk
}

// search is Find; with expect, a schedule counts as found only when its
// violation is the one o expects (matches), and the others are passed
// over.
func search(t *testing.T, f Factory, o Options, expect bool) (*Outcome, passedOver) {
	t.Helper()
	o = o.withDefaults()
	if err := o.check(); err != nil {
		t.Fatalf("locktest: %v", err)
	}
	var other passedOver
	key := failFileKey(t)
	var found *Outcome
	defer watchSearch(t, &f, o, &found).stop() // a progress line every 10 s (progress.go)
	tried := 0
	drawn, fired := map[string]int{}, map[string]int{}
	var clocks clockTally
	// try runs a case and reports whether it failed.
	try := func(c core.Case) (bool, error) {
		out := Run(t, f, o, c.Seed, c.Faults)
		tried++
		tally(c.Faults, out.Unfired, drawn, fired)
		clocks.add(out.Effects)
		if o.Determinism {
			if again := Run(t, f, o, c.Seed, c.Faults); again.SHA256 != out.SHA256 {
				t.Fatalf("locktest: seed %d is not deterministic: trace %s then %s (the lock reads a clock or random source locksim does not control?)", c.Seed, out.SHA256, again.SHA256)
			}
		}
		if !core.Failed(out.Check) {
			return false, nil
		}
		if expect && !o.matches(out.Check) {
			if other.n++; other.first == nil {
				out.Tried = tried
				other.first = &out
			}
			return false, nil
		}
		out.Tried, out.FromFaults, out.FromClients = tried, len(out.Faults), out.Clients
		found = &out
		return true, nil
	}
	pinned := o.Seed != 0
	s := core.Search{Cases: core.Cases(Schedules(o)), Seed: o.Seed, Checks: checks(o), Try: try}
	var replayed []string
	if !pinned {
		for _, path := range storedFailFiles(key) {
			if cs, ok := readFailFile(path); ok {
				s.Replay, replayed = append(s.Replay, cs), append(replayed, path)
			}
		}
		s.Seed = searchSeed()
	}
	hit, err := s.Run()
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	switch {
	case hit == nil:
	case hit.Replayed > 0:
		found.FailFile = replayed[hit.Replayed-1]
	default:
		found.SearchSeed = s.Seed
		if !pinned && !boolFlag("rapid.nofailfile") {
			found.FailFile = writeFailFile(t, key, hit.CaseSeed)
		}
	}
	warnings := o.warnings(drawn, fired, clocks)
	for _, w := range warnings {
		t.Log("locktest: warning: " + w)
	}
	if found == nil {
		return nil, other
	}
	min := minimize(t, f, o, *found)
	min.Warnings = warnings
	return &min, other
}

// warnings are what a search noticed that may have made it blind:
// pause points drawn and never reached (but "renewing" only for a lock
// that says it renews, or a search aimed at it: a lock that does not
// renew never reaches it, as expected), client clock faults that never
// reached the lock.
func (o Options) warnings(drawn, fired map[string]int, clocks clockTally) []string {
	if !o.Renews && !slices.Contains(o.PausePoints, locks.PointRenewing) {
		drawn = maps.Clone(drawn)
		delete(drawn, string(locks.PointRenewing))
	}
	warnings := pointWarnings(drawn, fired)
	if w := clocks.warning(); w != "" {
		warnings = append(warnings, w)
	}
	return warnings
}

// matches reports whether a judged run has the violation o expects
// (Options.ExpectClass, ExpectKind; anything unsafe when neither is set).
func (o Options) matches(r checker.Result) bool {
	if r.Verdict != checker.VerdictUnsafe {
		return o.ExpectClass == "" && o.ExpectKind == ""
	}
	kind := checker.Kind("")
	if r.First != nil {
		kind = r.First.Kind
	}
	return (o.ExpectClass == "" || r.Class == o.ExpectClass) && (o.ExpectKind == "" || kind == o.ExpectKind)
}

// expectation names what o expects, for messages: "unsafe", "unsafe
// (class double-hold)", ...
func (o Options) expectation() string {
	var parts []string
	if o.ExpectClass != "" {
		parts = append(parts, "class "+string(o.ExpectClass))
	}
	if o.ExpectKind != "" {
		parts = append(parts, "first violation "+string(o.ExpectKind))
	}
	if len(parts) == 0 {
		return "unsafe"
	}
	return "unsafe (" + strings.Join(parts, ", ") + ")"
}

// expectUnsafe is ExpectUnsafe's search: the expected violation's shrunk
// outcome, or nil and the failure message saying what was searched and
// what else was found.
func expectUnsafe(t *testing.T, f Factory, o Options) (*Outcome, string) {
	t.Helper()
	o = o.withDefaults()
	found, other := search(t, f, o, true)
	if found != nil {
		return found, ""
	}
	msg := fmt.Sprintf("locktest: expected the lock to be %s under %v, but none of the %d random schedules (Options.Checks or -rapid.checks) found such a violation", o.expectation(), kindsOf(o), checks(o))
	if other.first != nil {
		c := other.first.Check
		what := string(c.Verdict)
		if c.Class != "" {
			what += ", class " + string(c.Class)
		}
		if c.First != nil {
			what += ", first violation " + string(c.First.Kind)
		}
		msg += fmt.Sprintf("; %d were unsafe in another way (the first, schedule %d: seed %d, faults %v: %s; %s): the search found a failure, not the one expected",
			other.n, other.first.Tried, other.first.Seed, other.first.Faults, what, firstReason(c))
	}
	return nil, msg
}

// firstReason is a result's first reason line ("" when none).
func firstReason(r checker.Result) string {
	if len(r.Reasons) == 0 {
		return ""
	}
	return r.Reasons[0]
}

// checks is how many cases a search runs: Options.Checks, else rapid's
// -rapid.checks (a fifth of it under -short, as rapid.Check runs).
func checks(o Options) int {
	if o.Checks > 0 {
		return o.Checks
	}
	n := 100
	if fl := flag.Lookup("rapid.checks"); fl != nil {
		if v, err := strconv.Atoi(fl.Value.String()); err == nil {
			n = v
		}
	}
	if testing.Short() {
		n /= 5
	}
	return n
}

// searchSeed is an unpinned search's first case seed: -rapid.seed when
// set, else a fresh random one (a search is no simulated run: its seed
// may come from anywhere; every run inside it is seeded by its case).
func searchSeed() uint64 {
	if fl := flag.Lookup("rapid.seed"); fl != nil {
		if v, err := strconv.ParseUint(fl.Value.String(), 10, 64); err == nil && v != 0 {
			return v
		}
	}
	return new(maphash.Hash).Sum64()
}

// boolFlag reads one of rapid's boolean flags (false when absent).
func boolFlag(name string) bool {
	fl := flag.Lookup(name)
	if fl == nil {
		return false
	}
	v, _ := strconv.ParseBool(fl.Value.String())
	return v
}

// A fail file keeps the case seed of a search's failing case, so that the
// next unpinned Find under the same name replays that case first. Fail
// files live beside rapid's own (testdata/rapid/NAME/), named
// NAME-*.seed, which rapid's own replay (NAME-*.fail) never reads.
const failFileHeader = "# locktest fail file: the case seed of a failing search case\n"

func failFileDir(key string) string {
	safe := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, key)
	return filepath.Join("testdata", "rapid", safe)
}

func storedFailFiles(key string) []string {
	dir := failFileDir(key)
	paths, _ := filepath.Glob(filepath.Join(dir, filepath.Base(dir)+"-*.seed"))
	return paths
}

func readFailFile(path string) (uint64, bool) {
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(data), failFileHeader) {
		return 0, false
	}
	s, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(data), failFileHeader)), 10, 64)
	return s, err == nil
}

// writeFailFile stores a failing case seed and returns the file's path
// ("" when it could not be written: logged, not fatal).
func writeFailFile(t *testing.T, key string, caseSeed uint64) string {
	dir := failFileDir(key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("locktest: fail file: %v", err)
		return ""
	}
	f, err := os.CreateTemp(dir, filepath.Base(dir)+"-*.seed")
	if err != nil {
		t.Logf("locktest: fail file: %v", err)
		return ""
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s%d\n", failFileHeader, caseSeed); err != nil {
		t.Logf("locktest: fail file: %v", err)
		return ""
	}
	return f.Name()
}

// tally counts, per pause point, the runs whose schedule arms a fault
// there (a targeted pause, or another kind armed at it) and the runs in
// which such a fault fired.
func tally(schedule, unfired []faults.Fault, drawn, fired map[string]int) {
	for _, pt := range faults.PausePoints {
		n, missed := 0, 0
		for _, f := range schedule {
			if f.At == pt {
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
			out = append(out, fmt.Sprintf("%d schedules paused a client or armed a fault at %q and none of those fired: the lock never reached that point (an adapter marks it with env.At(locks.%s)), so the search never tried it",
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

// failFileKey is the name this Find call keys its fail file by: the
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

// minimize shrinks the search's failing run with locksim's one shrinker
// (run.Shrink: the same seed, fewer faults, fewer clients, shorter and
// earlier faults, while it still fails with the same kind of violation),
// then runs the shrunk schedule once more for its history. A liveness
// failure is returned as found: the shrinker keeps violation kinds, and
// a deadlock or starvation is none.
func minimize(t *testing.T, f Factory, o Options, out Outcome) Outcome {
	t.Helper()
	oc := withClients(o, out.Clients)
	in := info(f, oc)
	cfg, err := world(in, oc, out.Seed)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	cfg.Faults = out.Faults
	job := run.NewJob("locktest", in, cfg, checker.Options{RequireFairness: o.Fairness})
	res, ok, err := core.Shrink(sim.TestBubble(t), job, out.Check, run.ShrinkOptions{})
	if err != nil {
		t.Fatalf("locktest: shrinking seed %d: %v", out.Seed, err)
	}
	if !ok {
		return out
	}
	c := Run(t, f, withClients(o, res.Clients), out.Seed, res.Faults)
	if !o.matches(c.Check) {
		// The shrinker keeps the first violation's kind, not the class
		// or kind ExpectUnsafe asked for: a shrunk case that lost it is
		// not the counterexample the test wants.
		return out
	}
	c.FailFile, c.Tried, c.SearchSeed = out.FailFile, out.Tried, out.SearchSeed
	c.FromFaults, c.FromClients = out.FromFaults, out.FromClients
	return c
}

func withClients(o Options, n int) Options {
	o.Clients = n
	return o
}
