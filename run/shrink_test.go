package run

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// kleppmannSeed is the seed of the pause scenario below: with it the run
// fails with a stale write (resource), its noise alone does not, and the
// noise includes a partition that names every client (the shrinker must
// drop it, or names from it, before it can drop clients).
const kleppmannSeed = 2

// kleppmann builds Kleppmann's pause scenario: set-nx-cad (3 s lease), 5
// clients, 30 s of faults; c0 pauses for 8 s right after its lock check,
// at the first acquisition after t=10s, longer than the lease; plus 4..8
// noise faults of every kind from the seed's swarm.
func kleppmann(t *testing.T, seed uint64) (sim.Config, locks.Info) {
	t.Helper()
	info, err := catalogue.Get("set-nx-cad")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := scenarios.Build("default", info.ID, seed, scenarios.Params{Duration: 30 * time.Second, Liveness: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	noise := swarmOf(t, cfg, seed, nil, 4, 8)
	pause := faults.Fault{Kind: faults.ClientPause, At: string(locks.PointAfterCheck), Start: 10 * time.Second,
		Duration: 8 * time.Second, Targets: []string{"c0"}}
	cfg.Faults = append(noise, pause)
	faults.Sort(cfg.Faults)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg, info
}

// TestShrinkKleppmannPause: the pause scenario fails; Shrink brings it to
// at most 3 faults and 3 clients with the same violation kind; and the
// repro, a config built afresh from the scenario with --clients N and the
// shrunk schedule (what 'locksim run --clients N --faults FILE' builds),
// gives the very same run (trace hash) and the same violation kind.
func TestShrinkKleppmannPause(t *testing.T) {
	b := sim.TestBubble(t)
	cfg, info := kleppmann(t, kleppmannSeed)
	orig, err := runChecked(b, cfg, "default", info, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if orig.Check.Verdict != checker.VerdictUnsafe || orig.Check.First == nil || orig.Check.First.Kind != checker.KindResource {
		t.Fatalf("the pause scenario did not fail with a stale write: %s %v", orig.Check.Verdict, orig.Check.Reasons)
	}
	kind := orig.Check.First.Kind
	t.Logf("original: %d faults, %d clients, first violation %s: %s", len(cfg.Faults), cfg.Clients, kind, orig.Check.First.Detail)

	res, err := Shrink(b, NewJob("default", info, cfg, checker.Options{}), kind, ShrinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range res.Faults {
		lines = append(lines, f.String())
	}
	t.Logf("shrunk in %d runs (exhausted %v): %d faults, %d clients: %s\n\t%s",
		res.Runs, res.Exhausted, len(res.Faults), res.Clients, res.Check.Reasons[0], strings.Join(lines, "\n\t"))
	t.Logf("repro: locksim run --scenario default --lock %s --seed %d --duration 30s --liveness 10s --clients %d --faults FILE",
		info.ID, kleppmannSeed, res.Clients)
	if len(res.Faults) > 3 || res.Clients > 3 {
		t.Errorf("shrunk to %d faults and %d clients, want at most 3 of each", len(res.Faults), res.Clients)
	}
	if res.Check.Verdict != checker.VerdictUnsafe || violationsOf(res.Check, kind) == 0 {
		t.Errorf("shrunk result %s %v, want unsafe with a %s violation", res.Check.Verdict, res.Check.Reasons, kind)
	}
	if res.Runs > DefaultShrinkRuns {
		t.Errorf("%d runs, bound %d", res.Runs, DefaultShrinkRuns)
	}
	if res.FromFaults != len(cfg.Faults) || res.FromClients != cfg.Clients {
		t.Errorf("from %d faults %d clients, want %d and %d", res.FromFaults, res.FromClients, len(cfg.Faults), cfg.Clients)
	}

	// The repro, built afresh.
	repro, err := scenarios.Build("default", info.ID, kleppmannSeed, scenarios.Params{Clients: res.Clients, Duration: 30 * time.Second, Liveness: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	repro.Faults = res.Faults
	again, err := runChecked(b, repro, "default", info, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Check.Verdict != checker.VerdictUnsafe || violationsOf(again.Check, kind) == 0 {
		t.Fatalf("the repro gives %s %v, want unsafe with a %s violation", again.Check.Verdict, again.Check.Reasons, kind)
	}
	shrunk, err := runChecked(b, res.Job.Config, "default", info, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if shrunk.Result.TraceSHA256 != again.Result.TraceSHA256 {
		t.Errorf("the repro's trace %s differs from the shrunk run's %s", again.Result.TraceSHA256, shrunk.Result.TraceSHA256)
	}
}

// TestShrinkBoundAndDeterminism: at the run bound Shrink returns the best
// so far (still failing, Exhausted set, no more runs than the bound); the
// same inputs give the same result; a run that does not fail is refused.
func TestShrinkBoundAndDeterminism(t *testing.T) {
	b := sim.TestBubble(t)
	cfg, info := kleppmann(t, kleppmannSeed)
	orig, err := runChecked(b, cfg, "default", info, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if orig.Check.First == nil {
		t.Fatalf("the pause scenario did not fail: %s %v", orig.Check.Verdict, orig.Check.Reasons)
	}
	kind := orig.Check.First.Kind
	var a, c ShrinkResult
	for i, out := range []*ShrinkResult{&a, &c} {
		runs := 0
		*out, err = Shrink(b, NewJob("default", info, cfg, checker.Options{}), kind, ShrinkOptions{MaxRuns: 12, Progress: func(int, bool, int, int) { runs++ }})
		if err != nil {
			t.Fatal(err)
		}
		if !out.Exhausted || out.Runs != 12 || runs != 12 {
			t.Errorf("shrink %d: exhausted %v after %d runs (%d reported), want true after 12", i, out.Exhausted, out.Runs, runs)
		}
		if out.Check.Verdict != checker.VerdictUnsafe || violationsOf(out.Check, kind) == 0 {
			t.Errorf("shrink %d: best so far is %s %v", i, out.Check.Verdict, out.Check.Reasons)
		}
		if len(out.Faults) > len(cfg.Faults) || out.Clients > cfg.Clients {
			t.Errorf("shrink %d: grew to %d faults, %d clients", i, len(out.Faults), out.Clients)
		}
	}
	if !reflect.DeepEqual(a.Faults, c.Faults) || a.Clients != c.Clients || a.Runs != c.Runs {
		t.Errorf("two shrinks differ:\n%v, %d clients\n%v, %d clients", a.Faults, a.Clients, c.Faults, c.Clients)
	}

	cfg.Faults = nil
	_, err = Shrink(b, NewJob("default", info, cfg, checker.Options{}), kind, ShrinkOptions{})
	if !errors.Is(err, ErrNotFailing) {
		t.Errorf("shrinking a run without faults: %v, want ErrNotFailing", err)
	}
}

// An armed fault names its client by On: dropping clients keeps it, so a
// shrink never proposes a world without the client a fault waits for.
func TestHighestClientNamedArmed(t *testing.T) {
	fs := []faults.Fault{
		{Kind: faults.Partition, From: []string{"n0"}, To: []string{"c0", "c1"}},
		{Kind: faults.Delay, From: []string{"n0"}, To: []string{"c0"}, At: "releasing", On: "c3"},
	}
	if got := highestClientNamed(fs); got != 3 {
		t.Fatalf("highestClientNamed = %d, want 3 (the armed delay's On)", got)
	}
}
