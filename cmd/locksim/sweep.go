package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/internal/store"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// exitInterrupted is the exit code of a sweep or report stopped by SIGINT
// or SIGTERM after finishing its running jobs (128 + SIGINT, as shells do).
const exitInterrupted = 130

type sweepFlags struct {
	scenario  string
	locks     string
	seeds     intValue
	firstSeed seedValue
	param     string
	out       string
	jobs      intValue
	shard     string
	clients   intValue
	nodes     intValue
	duration  durationValue
	liveness  durationValue
	charts    bool
	backend   string
	ttl       durationValue
	cache     string
	noCache   bool
	cacheMax  intValue // MiB
}

func newSweepCmd(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	return newSweepFlags().command(stdout, stderr, h, code)
}

func newSweepFlags() *sweepFlags {
	return &sweepFlags{
		seeds:    intValue{min: 1, max: 10_000_000},
		jobs:     intValue{min: 1, max: 1024},
		clients:  intValue{min: 1, max: sim.MaxClients},
		nodes:    intValue{min: 1, max: sim.MaxNodes},
		duration: durationValue{min: sim.MinDuration, max: sim.MaxDuration},
		liveness: durationValue{max: sim.MaxDuration},
		ttl:      durationValue{min: realredis.MinTTL, max: realredis.MaxTTL},
		cacheMax: intValue{min: 1, max: 1 << 24},
	}
}

func (f *sweepFlags) command(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep --out DIR [--scenario S] [--locks a,b] [--seeds N] [--param name=from:to:steps] [flags]",
		Short: "Run many seeds × locks × a parameter range and write violation rates",
		Long: `Run the cross product of parameter values × locks × seeds, one simulation
per job on -j workers, and append one JSON line per job to DIR/results.jsonl
(in job order: value, then lock, then seed). When every job is done it
writes DIR/results.csv, prints the violation rates with 95% Wilson score
intervals, and draws them (DIR/rates-*.png and .svg).

Resumable: rerunning the same command skips the jobs whose line is already
in DIR (a torn last line is discarded and rerun); a different sweep in the
same DIR is refused. Ctrl-C finishes the running jobs, writes their lines
and exits with status 130; run the command again to go on.

Sharding: --shard i/n runs only the jobs whose index mod n is i, so n
machines (a batch array job) can split a sweep; 'locksim merge' joins their
directories into results equal, byte for byte, to the unsharded run's.
sweep.json records the build that ran a sweep: shards of two builds do not
merge, and a folder does not resume under another build.

Parameters (--param): clients, nodes (whole numbers); duration, liveness,
repl-lag (seconds, or durations such as 500ms:5s:10); pause (a client pause
just before its protected write, as a multiple of the lock's TTL: c0 pauses
once, at its first write at or after 1 s; scenarios with targeted pauses of
their own get those lengthened instead; 0 removes them). A run in which
the pause did not happen in full inside the safety phase (the client
reached its write too late, or the heal cut the pause short) is marked
"pause_short": true in results.jsonl, left out of the rates and counted in
the table's last column; a value whose runs were all left out has no rate
("0/0 = n/a") and no point on the charts (a gap in its line).

A scenario file with a sweep: block (e.g. scenarios/builtin/drift.yaml's
shape) is swept over that block when --param is not given, or with
--param sweep: the parameter is "sweep:NAME" and each job runs what
'locksim run --scenario FILE --step N' runs. A file edited since the
sweep began is a different sweep and does not resume.

Result store: as 'locksim report' does, a simulated sweep takes each run
it can from --cache DIR (default: the user's cache directory,
locksim/results) and keeps there the runs it makes, keyed by what decides
the run's trace (see 'locksim report --help'); the same sweep again reruns
nothing and writes the same files. --no-cache runs everything. The real
arm (--backend real) never uses the store.`,
		Example: `  locksim sweep --scenario no-faults --locks set-nx-cad,redlock,fencing --seeds 200 --param pause=0:2:9 --out sweep-pause
  locksim sweep --scenario my-drift.yaml --locks redlock,fencing --seeds 100 --out sweep-drift
  locksim sweep --locks redlock --seeds 1000 --out redlock-default --shard 0/4
  locksim merge --out merged shard-0 shard-1 shard-2 shard-3`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd, stdout, stderr)
			if err != nil {
				return err
			}
			*code = h(func(b sim.Bubble) int { return o.main(b) })
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.out, "out", "", "write results to `DIR` (created; rerun to resume); required")
	fl.StringVar(&f.scenario, "scenario", "default", "scenario id (see 'locksim list scenarios') or a scenario file")
	fl.StringVar(&f.locks, "locks", "", "comma-separated lock ids (default: every lock in 'locksim list locks' this binary can run)")
	fl.Var(&f.seeds, "seeds", "seeds per lock and value, 1..10000000 (default 100)")
	fl.Var(&f.firstSeed, "first-seed", "the first seed; seeds are first-seed, first-seed+1, ... (default 1)")
	fl.Var(&onceString{v: &f.param}, "param", "sweep `name=from:to:steps` or name=v1,v2,... (names: "+sweep.ParamNames()+"), or \"sweep\": the scenario file's sweep: block; one parameter per sweep")
	fl.VarP(&f.jobs, "jobs", "j", fmt.Sprintf("parallel workers, 1..1024, lowered to what the machine holds (4 a core, ~64 MiB each; default the number of CPUs, %d here)", runtime.NumCPU()))
	fl.StringVar(&f.shard, "shard", "", "run only shard `i/n`: the jobs whose index mod n is i (0 <= i < n); auto: this Slurm array task's (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) or Kubernetes Indexed Job's (JOB_COMPLETION_INDEX, LOCKSIM_SHARDS)")
	fl.Var(&f.clients, "clients", "client processes for every job, 1..10000 (default: the scenario's)")
	fl.Var(&f.nodes, "nodes", "Redis nodes for every job, 1..64 (default: the lock's topology)")
	fl.Var(&f.duration, "duration", "safety phase of every job (default: the scenario's)")
	fl.Var(&f.liveness, "liveness", "liveness phase of every job (default: the scenario's)")
	fl.BoolVar(&f.charts, "charts", true, "draw the rates (rates-*.png and .svg) when the sweep is complete")
	fl.StringVar(&f.backend, "backend", "sim", "`sim` (the simulator) or real (every job against real redis-server processes on 127.0.0.1, in real time; see 'locksim run --help')")
	fl.Var(&f.ttl, "ttl", realTTLHelp)
	fl.StringVar(&f.cache, "cache", "", "keep each run's result in the result store in `DIR` and take from it the runs it holds (default: the user's cache directory, locksim/results; --backend sim only)")
	fl.BoolVar(&f.noCache, "no-cache", false, "run every run; read and write no result store")
	fl.Var(&f.cacheMax, "cache-max-mib", fmt.Sprintf("bound the result store to `N` MiB, removing the least recently used entries (default %d)", store.DefaultMaxBytes>>20))
	return cmd
}

// sweepOptions is a validated sweep, ready to run.
type sweepOptions struct {
	sweep.Sweep
	stderr io.Writer
	// progress shows a bar on stderr (only when it is a terminal).
	progress bool
	// afterLine, if set, is called after each line is written with the
	// lines written so far by this run (tests).
	afterLine func(written int)
	// signals: the command handles SIGINT/SIGTERM itself (not in tests).
	signals bool
	// store is the result store (nil: none; Sweep.Store is it).
	store *reports.Store
}

func (f *sweepFlags) options(cmd *cobra.Command, stdout, stderr io.Writer) (*sweepOptions, error) {
	if f.out == "" {
		return nil, usageErrorf("--out: required (the directory for results.jsonl)")
	}
	sc, err := scenarios.Resolve(f.scenario)
	if err != nil {
		var fe *scenarios.FileError
		if errors.As(err, &fe) {
			return nil, usageErrorf("--scenario: %v", err)
		}
		return nil, usageErrorf("--scenario: unknown scenario %q (one of: %s; or a scenario file)", f.scenario, strings.Join(scenarios.IDs(), ", "))
	}
	spec := sweep.Spec{Format: 1, Scenario: f.scenario, ScenarioSHA256: run.ScenarioHash(f.scenario), Seeds: 100, FirstSeed: 1, Shards: 1,
		Clients: f.clients.v, Nodes: f.nodes.v, DurationNS: int64(f.duration.v), LivenessNS: int64(f.liveness.v)}
	if f.seeds.set {
		spec.Seeds = f.seeds.v
	}
	if f.firstSeed.set {
		spec.FirstSeed = f.firstSeed.v
	}
	for _, name := range []string{"out", "scenario", "locks", "param"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed && fl.Value.String() == "" {
			return nil, usageErrorf("--%s: empty value (leave the flag out for its default)", name)
		}
	}
	if spec.Locks, err = sweep.ParseLocks(f.locks); err != nil {
		return nil, sweepError(err)
	}
	switch {
	case f.param == "sweep" || (f.param == "" && sc.File != nil && sc.File.Sweep != nil):
		// The scenario file's own sweep: block.
		if spec.Param, spec.Values, err = sweep.FileSweep(f.scenario); err != nil {
			return nil, usageErrorf("--param: %v", err)
		}
	case f.param != "":
		if spec.Param, spec.Values, err = sweep.ParseParam(f.param); err != nil {
			return nil, usageErrorf("--param: %v", err)
		}
	}
	if f.shard == "auto" {
		if spec.Shard, spec.Shards, err = sweep.AutoShard(os.Getenv); err != nil {
			return nil, usageErrorf("--shard: %v", err)
		}
	} else if f.shard != "" {
		if spec.Shard, spec.Shards, err = sweep.ParseShard(f.shard); err != nil {
			return nil, usageErrorf("--shard: %v", err)
		}
	}
	workers := runtime.NumCPU()
	if f.jobs.set {
		var note string
		if workers, note = boundWorkers(f.jobs.v); note != "" {
			fmt.Fprintf(stderr, "locksim: %s\n", note)
		}
	}
	if err := checkBackend(f.backend); err != nil {
		return nil, usageErrorf("%v", err)
	}
	if f.backend == "real" && f.cache != "" {
		return nil, usageErrorf("--cache: only with --backend sim (a real run is not decided by its inputs)")
	}
	var newRunner func() (sweep.Runner, error)
	if f.backend == "real" {
		ttl := f.ttl.v
		if ttl == 0 {
			ttl = realredis.DefaultTTL
		}
		spec.Backend, spec.TTLNS = "real", int64(ttl)
		// Every lock's first job must be one the real arm runs.
		for i, l := range spec.Locks {
			j := sweep.Job{Lock: l, Seed: spec.FirstSeed, Index: i * spec.Seeds}
			if len(spec.Values) > 0 {
				j.HasValue, j.Value = true, spec.Values[0]
			}
			if _, err := realredis.Build(spec.Run(j), ttl); err != nil {
				return nil, usageErrorf("--backend real: %s: %s", l, configError(err))
			}
		}
		if err := checkRealEnv(); err != nil {
			return nil, err
		}
		redis.SetLogger(quietLogger{})
		newRunner = func() (sweep.Runner, error) { return realredis.SweepRunner{TTL: ttl}, nil }
	} else if cmd.Flags().Lookup("ttl").Changed {
		return nil, usageErrorf("--ttl: only with --backend real")
	}
	id, err := store.This()
	if err != nil {
		return nil, err
	}
	spec.Build = id.Runs(run.Spec{Scenario: spec.Scenario}.ScenarioID(), spec.Locks)
	var st *reports.Store
	if f.backend != "real" {
		if st, err = openStore(f.cache, f.noCache, f.cacheMax, false); err != nil {
			return nil, err
		}
	}
	if err := sweep.Prepare(f.out, spec); err != nil {
		return nil, sweepError(err)
	}
	o := &sweepOptions{Sweep: sweep.Sweep{Spec: spec, Dir: f.out, Workers: workers, Worker: workerCommand(workers), Log: stderr, Draw: f.charts, Summary: stdout, NewRunner: newRunner},
		stderr: stderr, progress: isTerminal(stderr), signals: true, store: st}
	if st != nil {
		o.Sweep.Store = st
	}
	return o, nil
}

// sweepError is an error of packages sweep or reports as the CLI reports
// it: an input error (exit 64) names its flag; anything else is internal
// (70).
func sweepError(err error) error { return sweepErrorIn("", err) }

// sweepErrorIn is sweepError with the command's name before the message
// ("merge: ").
func sweepErrorIn(cmd string, err error) error {
	var ie *sweep.InputError
	if errors.As(err, &ie) {
		if ie.Field == "" {
			return usageErrorf("%s%s", cmd, ie.Error())
		}
		return usageErrorf("%s--%s", cmd, ie.Error())
	}
	return &codeError{code: exitInternal, err: fmt.Errorf("%s%v", cmd, err)}
}

// workerCommand is the command line of a worker process for n workers:
// a copy of this binary ("locksim worker") when the CLI may start one and
// n > 1; nil (in-process) otherwise.
func workerCommand(n int) []string {
	if !subprocessWorkers || n < 2 || os.Getenv("LOCKSIM_INPROCESS") != "" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil // in-process: slower, never wrong
	}
	return []string{exe, "worker"}
}

// subprocessWorkers is set by main: only the real CLI can start copies of
// itself (a test binary is not locksim).
var subprocessWorkers = false

// isTerminal reports whether w is a terminal (progress bars go only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// main runs the sweep in the host's bubble factory and returns the exit code.
func (o *sweepOptions) main(b sim.Bubble) int {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if o.signals {
		defer watchSignals(ctx, stop, o.stderr, "finishing the running jobs")()
	}
	st, err := o.run(ctx, b)
	if o.store != nil {
		closeStore(o.store, o.stderr, "the results are written")
		fmt.Fprintf(o.stderr, "locksim: sweep: %s\n", storeLine(o.store))
	}
	if err != nil {
		fmt.Fprintf(o.stderr, "locksim: %s\n", errorLine(err))
		var ce *codeError
		if errors.As(err, &ce) {
			return ce.code
		}
		return exitInternal
	}
	if st.Interrupted {
		fmt.Fprintf(o.stderr, "locksim: interrupted: %d of %d jobs done; run the same command again to resume\n", st.Done, st.Mine)
		return exitInterrupted
	}
	return exitSafe
}

// run runs the sweep with the command's progress display.
func (o *sweepOptions) run(ctx context.Context, b sim.Bubble) (sweep.Status, error) {
	sw := o.Sweep
	var bar *progressbar.ProgressBar
	var lines *progressLines
	first := -1
	sw.Progress = func(done, total int) {
		if first < 0 {
			first = done
			if o.progress {
				bar = newBar(o.stderr, "sweep", total, done)
			} else {
				lines = newProgressLines(o.stderr, "sweep", done)
			}
			return
		}
		if bar != nil {
			bar.Set(done)
		}
		if lines != nil {
			lines.update(done, total)
		}
		if o.afterLine != nil {
			o.afterLine(done - first)
		}
	}
	st, err := sw.Run(ctx, b)
	if bar != nil {
		bar.Exit()
		fmt.Fprintln(o.stderr)
	}
	if err != nil {
		return st, sweepError(err)
	}
	return st, nil
}

// watchSignals cancels on the first SIGINT/SIGTERM (the caller finishes
// what is running) and exits at once on the second. The returned func
// stops watching.
func watchSignals(ctx context.Context, cancel func(), stderr io.Writer, what string) func() {
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigc:
			fmt.Fprintf(stderr, "\nlocksim: interrupted: %s (Ctrl-C again to stop at once)\n", what)
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sigc:
			fmt.Fprintf(stderr, "locksim: %v: stopped at once\n", s)
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigc)
		close(done)
	}
}

func newBar(w io.Writer, what string, total, done int) *progressbar.ProgressBar {
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("runs"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetWidth(30),
	)
	if done > 0 {
		bar.Set(done)
	}
	return bar
}

// progressEvery is how often a sweep or report whose stderr is no
// terminal (a CI log) prints a progress line.
var progressEvery = 10 * time.Second

// progressLines prints a plain progress line to w about every
// progressEvery: runs done of total, the rate since the command began and
// the time left at that rate.
type progressLines struct {
	w     io.Writer
	what  string
	start time.Time
	last  time.Time
	first int // runs already done when the command began (a resumed sweep)
}

func newProgressLines(w io.Writer, what string, done int) *progressLines {
	now := time.Now()
	return &progressLines{w: w, what: what, start: now, last: now, first: done}
}

func (p *progressLines) update(done, total int) {
	now := time.Now()
	if now.Sub(p.last) < progressEvery || done >= total {
		return
	}
	p.last = now
	rate := float64(done-p.first) / now.Sub(p.start).Seconds()
	eta := "unknown"
	if rate > 0 {
		eta = time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "locksim: %s: %d/%d runs, %.0f runs/s, ETA %s\n", p.what, done, total, rate, eta)
}
