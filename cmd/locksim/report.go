package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/locksim/locksim/internal/store"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/sim"
)

type reportFlags struct {
	out       string
	quick     bool
	perYear   bool
	seeds     intValue
	jobs      intValue
	scenarios string
	locks     string
	parity    string
	force     bool
	dryRun    bool
	cache     string
	noCache   bool
	cacheMax  intValue // MiB
	fixed     bool
	fullLive  bool
	profile   string // --cpuprofile: the parent process's CPU profile (hidden)
}

// phases returns what says on stderr how long each of the report's steps
// took since the one before, with --cpuprofile (nothing otherwise).
func (r *reportRun) phases(stderr io.Writer) func(name string) {
	if !r.timed {
		return func(string) {}
	}
	last := r.t0
	return func(name string) {
		now := time.Now()
		fmt.Fprintf(stderr, "locksim: report: %s took %v\n", name, now.Sub(last).Round(time.Millisecond))
		last = now
	}
}

// userCache is set by main: only the real CLI keeps runs in the user's
// cache directory by default (a test passes --cache or gets none).
var userCache = false

func newReportCmd(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	f := &reportFlags{seeds: intValue{min: 1, max: 1_000_000}, jobs: intValue{min: 1, max: 1024}, cacheMax: intValue{min: 1, max: 1 << 24}}
	cmd := &cobra.Command{
		Use:   "report --out DIR [--quick] [--seeds N]",
		Short: "Run every built-in scenario with its locks and write the debate report",
		Long: `Run the matrix of built-in scenarios × locks (every lock whose topology
fits the scenario: the topologies of the locks its file lists; go-zero only
in a binary built with -tags gozero), N seeds per cell, plus a sweep
of a client pause before the protected write (0 to 2 TTLs) for single-node,
Redlock and the two fencing designs, the same pause in seconds (0.5 to
30 s; --quick 0.5, 2, 10) for every design with a lease, and write into DIR:

  index.html    the report: a verdict per design (TTL in seconds), what
                neither side expected, what it found, a heat map of every
                cell (hover: what each side of the debate expects), the debate's curves
                with 95% Wilson intervals (self-contained: images are files
                beside it)
  lock/ID.html  one page a lock: where it breaks, how often, its worst
                counterexample timeline and repro command
  scenario/ID.html  one page a scenario: its table, chart and timelines
  report.md     the numbers in Markdown
  results.json  {"cells": [{"scenario", "lock", "runs", "lease_overlap_runs",
                "resource_violation_runs", "verdict", ...}, ...]}
  img/          rate charts (PNG and SVG)
  timelines/    counterexample timelines (PNG)

The terminal names the cells that differ from their expectation; the last
line says how many runs came from the result store, the CPU the runs took and
the dearest cells (results.json: each cell's cpu_ns).
The same flags give the same files, byte for byte, except the cells'
measured cpu_ns (the same too when every run comes from the result store).

Result store: each run's outcome (and each drawn timeline) is kept in
--cache DIR (default: the user's cache directory, locksim/results), keyed by
a SHA-256 of what decides its trace: the locksim sources compiled into the
binary, its dependencies' versions and sums, the Go version and the build
settings (-tags included), the scenario file's bytes, the lock, the seed and
the parameters. A later report takes the runs it holds instead of running
them. Editing one scenario file reruns only that scenario's runs; editing a
design file of locks/catalogue that no other file uses reruns only its
locks' runs; any other change reruns everything (a binary that is not
locksim's own main module, or that replaces a dependency by a local folder,
is keyed by its executable's SHA-256). A damaged entry is found by its
checksum and rerun, as is one holding what no run gives; an entry a
timeline's rerun disagrees with is dropped and its cell run anew.
--no-cache runs everything; the store is kept under --cache-max-mib, least
recently used entries first. The store keeps to a folder of its own,
marked by the file .locksim-store it writes: it counts and removes only
its own entries, and refuses a non-empty folder without the marker (touch
DIR/.locksim-store to use one anyway). 'locksim sweep' uses the same
store.
--plan prints the cells, their runs and expected CPU cost and runs nothing. Default: seeds
1, 2, 3, ... per cell until the stated rule settles it, at most 200 (55,297 runs on
2026-11-27; --fixed: all 200, 76,000 runs); --quick: 20 seeds and
coarser curves (about a tenth of the runs). A cell's run of a design that
promises no fairness ends once every client has acquired after the heal
(liveness shown; not the curves' runs; --full-liveness runs every
liveness phase to its end). The report is written
beside DIR and moved into place when complete: Ctrl-C stops (exit 130) and writes
nothing.

DIR is created if it does not exist. If it exists, it must be empty or
hold an earlier report (its results.json is a locksim report's): the files
and folders above are then replaced, the old ones deleted (img/,
timelines/, lock/ and scenario/ as a whole), and every other file in DIR stays. A DIR that holds
anything else is refused before anything runs (exit 64), since the
report would delete its index.html, img/ and the rest; --force writes
there anyway, with the same replacement.`,
		Example: `  locksim report --out report
  locksim report --out quick --quick
  locksim report --out redlock --scenarios clock-jump,pause-after-check --locks redlock,fencing --seeds 500`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stopProfile, err := startProfile(f.profile)
			if err != nil {
				return err
			}
			r, err := f.plan()
			if err != nil {
				stopProfile()
				return err
			}
			if f.dryRun {
				r.printPlan(stdout)
				stopProfile()
				*code = exitSafe
				return nil
			}
			*code = h(func(b sim.Bubble) int { defer stopProfile(); return r.main(b, stdout, stderr) })
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.out, "out", "", "write the report into `DIR`: new, empty, or an earlier report's (replaced; see above); required")
	fl.BoolVar(&f.quick, "quick", false, fmt.Sprintf("%d seeds per cell and a coarser sweep", reports.QuickSeeds))
	fl.Var(&f.seeds, "seeds", fmt.Sprintf("seeds per cell at most (default %d, %d with --quick)", reports.DefaultSeeds, reports.QuickSeeds))
	fl.BoolVar(&f.perYear, "per-year", false, "add the per-year estimate (locksim risk for each design of the debate in the report) to a report of some --scenarios or --locks; a report of all of them has it always")
	fl.BoolVar(&f.fixed, "fixed", false, "run every seed of every cell (the fixed plan); without it a cell stops early once its result is settled by the rule the report states")
	fl.BoolVar(&f.fullLive, "full-liveness", false, "run every cell's liveness phase to its end; by default a cell's run ends once every client has acquired after the heal (designs that promise no fairness: 'locksim run --end-when-live', which its repro line carries)")
	fl.VarP(&f.jobs, "jobs", "j", fmt.Sprintf("parallel workers, 1..1024, lowered to what the machine holds (4 a core, ~64 MiB each; default the number of CPUs, %d here)", runtime.NumCPU()))
	fl.StringVar(&f.scenarios, "scenarios", "", "only these comma-separated scenario ids (default: every built-in)")
	fl.StringVar(&f.locks, "locks", "", "only these comma-separated lock ids (default: every lock)")
	fl.BoolVar(&f.force, "force", false, "write into an --out folder that is not empty and holds no earlier report, replacing its index.html, report.md, results.json, img/, timelines/, lock/ and scenario/ (other files stay)")
	fl.BoolVar(&f.dryRun, "plan", false, "a dry run: print the cells with their runs and the ten dearest with their expected CPU cost, run nothing, write nothing (--out not needed)")
	fl.StringVar(&f.cache, "cache", "", "keep each run's result in the result store in `DIR` and take from it the runs it holds (default: the user's cache directory, locksim/results)")
	fl.BoolVar(&f.noCache, "no-cache", false, "run every run; read and write no result store")
	fl.Var(&f.cacheMax, "cache-max-mib", fmt.Sprintf("bound the result store to `N` MiB, removing the least recently used entries (default %d)", store.DefaultMaxBytes>>20))
	fl.StringVar(&f.profile, "cpuprofile", "", "write this process's CPU profile (not its workers') to `FILE`, for go tool pprof")
	fl.MarkHidden("cpuprofile")
	fl.StringVar(&f.parity, "parity", "", "add a \"simulation vs real Redis\" section from the `DIR` a 'locksim parity --out DIR' wrote")
	return cmd
}

// reportRun is a validated report, ready to run: its plan and where it
// is written.
type reportRun struct {
	plan    *reports.Plan
	out     *reports.Output
	store   *reports.Store // nil: none
	workers int
	note    string // said on stderr when the report starts (-j lowered)
	// progress shows a bar on stderr; signals: the command handles
	// SIGINT/SIGTERM itself (not in tests).
	progress bool
	signals  bool
	timed    bool      // --cpuprofile: say each step's time on stderr
	t0       time.Time // when the flags were read
}

func (f *reportFlags) plan() (*reportRun, error) {
	t0 := time.Now()
	if f.out == "" && !f.dryRun {
		return nil, usageErrorf("--out: required (the directory for the report)")
	}
	opt := reports.Options{Quick: f.quick, Version: versionLine(), Parity: f.parity, Fixed: f.fixed, EndWhenLive: !f.fullLive}
	if f.seeds.set {
		opt.Seeds = f.seeds.v
	}
	if f.scenarios != "" {
		opt.Scenarios = strings.Split(f.scenarios, ",")
	}
	opt.PerYear = f.perYear || (f.scenarios == "" && f.locks == "")
	if f.locks != "" {
		var err error
		if opt.Locks, err = sweep.ParseLocks(f.locks); err != nil {
			return nil, sweepError(err)
		}
	}
	r := &reportRun{workers: runtime.NumCPU(), signals: true, timed: f.profile != "", t0: t0}
	if f.jobs.set {
		r.workers, r.note = boundWorkers(f.jobs.v)
	}
	var err error
	if r.plan, err = reports.NewPlan(opt); err != nil {
		return nil, sweepError(err)
	}
	if r.store, err = f.openStore(); err != nil {
		return nil, err
	}
	if f.dryRun {
		return r, nil
	}
	if r.out, err = reports.Stage(f.out, f.force); err != nil {
		if errors.Is(err, reports.ErrNotReport) {
			return nil, usageErrorf("--out: %v: the report would replace its index.html, report.md, results.json, img/, timelines/, lock/ and scenario/; choose a new or empty folder, or add --force to write there anyway", err)
		}
		return nil, usageErrorf("--out: %v", err)
	}
	return r, nil
}

// main runs the plan and writes the report; it returns the exit code.
func (r *reportRun) main(b sim.Bubble, stdout, stderr io.Writer) int {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	defer r.out.Discard()
	if r.signals {
		defer watchSignals(ctx, stop, stderr, "finishing the running simulations; no report is written")()
	}
	r.progress = isTerminal(stderr)
	if r.note != "" {
		fmt.Fprintf(stderr, "locksim: %s\n", r.note)
	}
	start := time.Now()
	ex := reports.Exec{Workers: r.workers, Worker: workerCommand(r.workers), Log: stderr, Store: r.store}
	var bar *progressbar.ProgressBar
	if r.progress {
		bar = newBar(stderr, "report", r.plan.Runs(), 0)
		ex.Progress = func(done, total int) {
			if total != bar.GetMax() {
				bar.ChangeMax(total)
			}
			bar.Set(done)
		}
	} else {
		lines := newProgressLines(stderr, "report", 0)
		ex.Progress = lines.update
	}
	phase := r.phases(stderr)
	phase("plan and store open")
	err := r.plan.Run(ctx, b, r.out.Dir(), ex)
	phase("runs")
	if bar != nil {
		bar.Exit()
		fmt.Fprintln(stderr)
	}
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
		fmt.Fprintf(stderr, "locksim: interrupted: no report written\n")
		return exitInterrupted
	}
	var res reports.Results
	if err == nil {
		res, err = r.plan.Write(r.out.Dir())
		phase("write")
	}
	if err == nil {
		cerr := r.out.Commit()
		phase("commit")
		if cerr != nil {
			err = fmt.Errorf("moving the report into %q: %v", r.out.Final(), cerr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "locksim: %s\n", errorLine(err))
		return exitInternal
	}
	unsafe, missed := res.Unsafe()
	fmt.Fprintf(stdout, "report: %s (%d cells, %d unsafe, %d differ from the expectation; %d runs)\n",
		filepath.Join(r.out.Final(), "index.html"), len(res.Cells), unsafe, missed, r.plan.Runs())
	writeDiffers(stdout, res)
	wall := time.Since(start)
	// The time includes the timeline reruns, so the rate counts them.
	runs := r.plan.Runs() + r.plan.Reruns()
	fmt.Fprintf(stderr, "locksim: report: %d runs in %v (%.0f runs/s, %d %s; %d of them reran an unsafe cell's first unsafe seed to draw its timeline)\n",
		runs, wall.Round(time.Millisecond), float64(runs)/wall.Seconds(), r.workers, plural(r.workers, "worker", "workers"), r.plan.Reruns())
	closeStore(r.store, stderr, "the report is complete")
	phase("store trim")
	fmt.Fprintf(stderr, "locksim: report: %s; %s\n", r.storeLine(), r.plan.CostLine(dearestNamed))
	return exitSafe
}

// closeStore warns of the store's failed writes and trims it to its bound
// (s nil: nothing); done says what is complete despite a failed write.
func closeStore(s *reports.Store, stderr io.Writer, done string) {
	if s == nil {
		return
	}
	if err := s.Err(); err != nil {
		fmt.Fprintf(stderr, "locksim: warning: %s (%s; those runs will run again)\n", errorLine(err), done)
	}
	if removed, _, err := s.Trim(); err != nil {
		fmt.Fprintf(stderr, "locksim: warning: result store: %s\n", errorLine(err))
	} else if removed > 0 {
		fmt.Fprintf(stderr, "locksim: result store: %d least recently used %s removed to keep it under its bound\n", removed, plural(removed, "entry", "entries"))
	}
}

// writeDiffers names the cells that differ from their expectation, one a
// line, at most maxNamed.
func writeDiffers(w io.Writer, res reports.Results) {
	cells := res.MissedCells()
	for i, c := range cells {
		if i == maxNamed {
			fmt.Fprintf(w, "  ... and %d more (results.json: matches_expected false)\n", len(cells)-maxNamed)
			break
		}
		want := "?"
		if c.Expected != nil {
			want = c.Expected.Want
		}
		fmt.Fprintf(w, "  differs: %s × %s: measured %s (%d/%d runs unsafe), expected %s\n", c.Scenario, c.Lock, c.Verdict, c.UnsafeRuns, c.Runs, want)
	}
}

// printPlan is --plan: the plan and its expected cost; nothing runs.
func (r *reportRun) printPlan(w io.Writer) { r.plan.WritePlan(w, r.store, r.workers) }

// openStore opens the result store the flags name (nil: --no-cache, or
// a test without --cache).
func (f *reportFlags) openStore() (*reports.Store, error) {
	return openStore(f.cache, f.noCache, f.cacheMax, f.dryRun)
}

// openStore opens the result store --cache, --no-cache and --cache-max-mib
// name, for report and sweep (nil: --no-cache, or a test without --cache);
// dryRun opens it read-only.
func openStore(cache string, noCache bool, cacheMax intValue, dryRun bool) (*reports.Store, error) {
	if noCache {
		if cache != "" {
			return nil, usageErrorf("--cache and --no-cache: choose one")
		}
		return nil, nil
	}
	dir := cache
	if dir == "" {
		if !userCache {
			return nil, nil
		}
		d, err := store.DefaultDir()
		if err != nil {
			return nil, nil // no cache directory: every run runs
		}
		dir = d
	}
	if err := notAFolder(dir); err != nil {
		return nil, usageErrorf("--cache: %v", err) // report, sweep and --plan alike
	}
	var max int64
	if cacheMax.set {
		max = int64(cacheMax.v) << 20
	}
	s, err := reports.OpenStore(dir, max, dryRun)
	if err != nil {
		return nil, usageErrorf("--cache: %v", err)
	}
	return s, nil
}

// storeLine says how many runs the result store gave.
func (r *reportRun) storeLine() string { return storeLine(r.store) }

// storeLine says how many runs the result store s gave (nil: none).
func storeLine(s *reports.Store) string {
	if s == nil {
		return "no result store (every run ran)"
	}
	hits, total := s.Hits.Load(), s.Hits.Load()+s.Misses.Load()
	line := fmt.Sprintf("%d of %d runs from the result store %s", hits, total, s.Dir())
	if strings.HasPrefix(s.How, "the executable") {
		line += " (this binary is keyed by its executable's SHA-256: a rebuild with any change reruns everything)"
	}
	if c := s.Corrupt.Load(); c > 0 {
		line += fmt.Sprintf(" (%d corrupt %s found and rerun)", c, plural(int(c), "entry", "entries"))
	}
	return line
}

// dearestNamed is how many of the dearest cells the report's last line
// names.
const dearestNamed = 5

// maxNamed bounds the differing cells the report names on the terminal.
const maxNamed = 20

// plural is one or many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
