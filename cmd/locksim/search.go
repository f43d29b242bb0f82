package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/outfile"
	core "github.com/locksim/locksim/internal/search"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// locksim search: the search locktest.Find runs (internal/search), over
// a catalogue design in a scenario's world.

// The search's bounds: its number of schedules and the faults a schedule
// has (locktest.Options' defaults: 1 to 4 faults).
const (
	defaultSearchChecks = 100
	maxSearchChecks     = 100_000
	searchMaxFaults     = 4
)

type searchFlags struct {
	lock     string
	scenario string
	checks   intValue
	seed     seedValue
	kinds    []string
	out      string
	runs     intValue // --shrink-runs
	unarmed  bool
}

func newSearchCmd(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	f := &searchFlags{checks: intValue{min: 1, max: maxSearchChecks, v: defaultSearchChecks}, runs: intValue{min: 1, max: 100_000}}
	cmd := &cobra.Command{
		Use:   "search --lock ID [--scenario NAME|FILE] [--checks N] [--seed S] [--kinds K,...]",
		Short: "Search random fault schedules for one that breaks a lock, and shrink it",
		Long: `Search random fault schedules for one that breaks a lock design: the search
locktest.Find runs (each schedule drawn from its case seed by rapid, 1 to 4
faults sized by the lock's TTL, with a world seed of its own), in the
scenario's world with the scenario's faults replaced by each drawn
schedule. It stops at the first unsafe run (or liveness failure), shrinks
it (as run --shrink does), writes the shrunk schedule to a --faults file
and prints the run's summary with the shrunk counterexample and its repro
line: a 'locksim run' command with that faults file.

The same flags give the same schedules, the same counterexample and the
same output. Exit codes: 0 no violation in N schedules; 1 an unsafe run
was found; 3 a liveness failure was found (not shrunk); 64 bad usage
(an unknown lock, scenario or fault kind); 70 internal error.`,
		Example: `  locksim search --lock set-nx-del
  locksim search --lock redlock --checks 500 --seed 7
  locksim search --lock watchdog --kinds partition,delay,loss
  locksim search --lock set-nx-cad --scenario failover`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			j, err := f.job()
			if err != nil {
				return err
			}
			*code = h(func(b sim.Bubble) int { return j.run(b, stdout, stderr) })
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.lock, "lock", "", "lock design id (see 'locksim list locks'); required")
	fl.StringVar(&f.scenario, "scenario", "default", "built-in scenario id (see 'locksim list scenarios') or a scenario `FILE` (YAML): its world, with each drawn schedule in place of its faults")
	fl.Var(&f.checks, "checks", fmt.Sprintf("at most `N` schedules, 1..%d (default %d)", maxSearchChecks, defaultSearchChecks))
	fl.Var(&f.seed, "seed", "the search's seed `S` (0..18446744073709551615; default 1): the same seed draws the same schedules")
	fl.StringSliceVar(&f.kinds, "kinds", nil, "draw only these fault `KINDS`, comma-separated ("+kindNames()+"; default every kind that applies to the lock)")
	fl.BoolVar(&f.unarmed, "unarmed", false, "draw every fault at its own start time (without it, as locktest's search: about half of the partitions, delays, losses and client pauses wait for a client to reach its next acquire, release or renewal)")
	fl.StringVar(&f.out, "shrink-out", "", "write the shrunk schedule to `FILE` (default locksim-search-<lock>-<seed>.faults.json in the temporary directory)")
	fl.Var(&f.runs, "shrink-runs", fmt.Sprintf("at most `N` runs to shrink what was found, 1..100000 (default %d; at the bound the smallest failing run so far is printed)", run.DefaultShrinkRuns))
	return cmd
}

func kindNames() string {
	var names []string
	for _, k := range faults.Kinds {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// searchJob is a validated search.
type searchJob struct {
	base   run.Spec // the world: scenario and lock (Seed and Faults set per case)
	seed   uint64
	checks int
	bounds faults.Bounds
	out    string // the --faults file to write
	runs   int    // --shrink-runs (0: the default)
}

// job validates the flags and builds the search's bounds from the
// scenario's world for the lock, before any bubble is hosted. Every
// error is an input error (exit 64).
func (f *searchFlags) job() (*searchJob, error) {
	if f.lock == "" {
		return nil, usageErrorf("--lock: required (one of: %s)", strings.Join(catalogue.IDs(), ", "))
	}
	if f.scenario == "" {
		return nil, usageErrorf("--scenario: empty value (leave the flag out for its default)")
	}
	if info, err := catalogue.Get(f.lock); err == nil && info.RealOnly != "" {
		return nil, usageErrorf("--lock: %s runs on the %s", f.lock, info.RealOnly)
	}
	var kinds []faults.Kind
	for _, k := range f.kinds {
		k = strings.TrimSpace(k)
		if !slices.Contains(faults.Kinds, faults.Kind(k)) {
			return nil, usageErrorf("--kinds: unknown fault kind %q (one of: %s)", k, kindNames())
		}
		if !slices.Contains(kinds, faults.Kind(k)) {
			kinds = append(kinds, faults.Kind(k))
		}
	}
	spec := run.Spec{Scenario: f.scenario, Lock: f.lock, Seed: 1, Faults: []faults.Fault{}}
	job, err := spec.Build()
	if err != nil {
		return nil, specError(err)
	}
	seed := uint64(1)
	if f.seed.set {
		seed = f.seed.v
	}
	b := searchBounds(job, kinds, !f.unarmed)
	if len(kinds) > 0 && len(b.Kinds) == 0 {
		return nil, usageErrorf("--kinds: no kind of %s applies to lock %s in scenario %s (failover needs a replicated topology)", strings.Join(f.kinds, ","), f.lock, job.Scenario)
	}
	if err := b.Check(); err != nil {
		return nil, usageErrorf("--kinds: %v (lock %s, scenario %s)", err, f.lock, job.Scenario)
	}
	out := f.out
	if out == "" {
		out = filepath.Join(os.TempDir(), fmt.Sprintf("locksim-search-%s-%d.faults.json", f.lock, seed))
	} else if err := outfile.CheckWritable(out); err != nil {
		return nil, usageErrorf("--shrink-out: %v", err)
	}
	spec.Seed, spec.Faults = 0, nil
	return &searchJob{base: spec, seed: seed, checks: f.checks.v, bounds: b, out: out, runs: f.runs.v}, nil
}

// searchBounds are the bounds locktest draws a schedule in (its
// Options.bounds), for the world job built: its clients and its nodes
// by name, failover only when replicated, sizes relative to the lock's
// TTL, faults in the safety phase; armed, some faults wait for a client
// to reach the points locktest arms them at (locktest/options.go,
// armPoints: the workload's own, and renewing for a lock that renews).
func searchBounds(job *run.Job, kinds []faults.Kind, armed bool) faults.Bounds {
	cfg := job.Config
	var clients, nodes []string
	for i := range cfg.Clients {
		clients = append(clients, fmt.Sprintf("c%d", i))
	}
	for _, n := range cfg.Nodes {
		nodes = append(nodes, n.Name)
	}
	replicated := cfg.Topology.Replicated
	if !replicated {
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k faults.Kind) bool { return k == faults.Failover })
	}
	b := faults.Bounds{Duration: cfg.Duration, Clients: clients, Nodes: nodes, Replicated: replicated,
		MinFaults: 1, MaxFaults: searchMaxFaults, Kinds: kinds, TTL: job.Lock.TTL}
	if armed {
		b.ArmPoints = slices.Clone(faults.HarnessPoints)
		if job.Lock.Renews {
			b.ArmPoints = append(b.ArmPoints, string(locks.PointRenewing))
		}
	}
	return b
}

// caseJob is the world of one case: the scenario's, with the case's seed
// and schedule.
func (s *searchJob) caseJob(c core.Case, clients int) (*run.Job, error) {
	spec := s.base
	spec.Seed, spec.Faults = c.Seed, c.Faults
	if spec.Faults == nil {
		spec.Faults = []faults.Fault{}
	}
	if clients > 0 {
		spec.Params.Clients = clients
	}
	return spec.Build()
}

// run searches in bubble b, prints what it found, and returns the exit
// code. A panic is an internal error (exit 70).
func (s *searchJob) run(b sim.Bubble, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "locksim: internal error: panic: %v\n%s", r, debug.Stack())
			code = exitInternal
		}
	}()
	var found *run.Judged
	search := core.Search{Cases: core.Cases(faults.Gen(s.bounds)), Seed: s.seed, Checks: s.checks,
		Try: func(c core.Case) (bool, error) {
			job, err := s.caseJob(c, 0)
			if err != nil {
				return false, fmt.Errorf("world seed %d, faults %v: %v", c.Seed, c.Faults, err)
			}
			jd, err := job.Run(b)
			if err == nil && jd.Err != nil {
				err = jd.Err
			}
			if err != nil {
				return false, fmt.Errorf("world seed %d: %v", c.Seed, err)
			}
			if !core.Failed(jd.Check) {
				return false, nil
			}
			found = jd
			return true, nil
		}}
	hit, err := search.Run()
	if err != nil {
		fmt.Fprintf(stderr, "locksim: internal error: %v\n", err)
		return exitInternal
	}
	if hit == nil {
		fmt.Fprintf(stdout, "no violation in %d schedules (seed %d) of lock %s in scenario %s\n", s.checks, s.seed, s.base.Lock, s.base.ScenarioID())
		return exitSafe
	}
	fmt.Fprintf(stdout, "found by schedule %d of %d (seed %d, case seed %d): world seed %d, %d faults, %d clients\n",
		hit.Tried, s.checks, s.seed, hit.CaseSeed, hit.Case.Seed, len(hit.Case.Faults), found.Job.Config.Clients)
	spec := found.Job.Spec
	spec.FaultsFile = s.out
	r := found.Report(spec.Repro())
	res, ok, err := core.Shrink(b, found.Job, found.Check, run.ShrinkOptions{MaxRuns: s.runs})
	if err != nil {
		fmt.Fprintf(stderr, "locksim: shrinking: %v\n", err)
		return exitInternal
	}
	schedule := hit.Case.Faults
	if ok {
		schedule = res.Faults
	}
	if err := run.WriteFaults(s.out, schedule); err != nil {
		fmt.Fprintf(stderr, "locksim: --shrink-out: %v\n", err)
		return exitInternal
	}
	if ok {
		r.Shrunk(res, s.out)
	}
	if r.Counterexample != nil {
		r.WriteSummary(stdout)
		return verdictExit[r.Verdict]
	}
	// A liveness failure has no counterexample section: its repro goes
	// before the summary's last line (the trace hash, always last).
	var sum strings.Builder
	r.WriteSummary(&sum)
	text := strings.TrimSuffix(sum.String(), "\n")
	head, last := "", text
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		head, last = text[:i+1], text[i+1:]
	}
	fmt.Fprintf(stdout, "%s%-16s%s\n%s\n", head, "repro:", spec.Repro(), last)
	return verdictExit[r.Verdict]
}
