package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/outfile"
	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

var verdictExit = map[checker.Verdict]int{
	checker.VerdictSafe:     exitSafe,
	checker.VerdictUnsafe:   exitUnsafe,
	checker.VerdictLiveness: exitLiveness,
	checker.VerdictUnknown:  exitUnknown,
}

type runFlags struct {
	lock      string
	scenario  string
	seed      seedValue
	clients   intValue
	nodes     intValue
	duration  durationValue
	liveness  durationValue
	replLag   durationValue
	downAfter durationValue
	holdMin   durationValue
	holdMax   durationValue
	careful   bool
	pause     floatValue
	step      intValue
	trace     string
	json      bool
	fairness  bool
	endLive   bool
	traceMax  intValue // --trace-max-mb
	cexDir    string
	shrink    shrinkFlags // --faults, --shrink, --shrink-out, --shrink-runs (shrink.go)
	backend   string      // --backend: sim or real (real.go)
	driver    string      // --driver: a lock driver folder or program, with --backend real (real.go)
	ttl       durationValue
	maxEvents intValue // --max-events
}

// newRunFlags is run's flag values with their allowed ranges (replay
// takes the same ones).
func newRunFlags() runFlags {
	return runFlags{
		clients:   intValue{min: 1, max: sim.MaxClients},
		nodes:     intValue{min: 1, max: sim.MaxNodes},
		duration:  durationValue{min: sim.MinDuration, max: sim.MaxDuration},
		liveness:  durationValue{max: sim.MaxDuration},
		replLag:   durationValue{max: 600 * time.Second},
		downAfter: durationValue{max: sim.MaxDuration},
		holdMin:   durationValue{max: sim.MaxDuration},
		holdMax:   durationValue{max: sim.MaxDuration},
		pause:     floatValue{min: 0, max: 100},
		step:      intValue{min: 0, max: 999},
		traceMax:  intValue{min: 1, max: 1 << 20, v: defaultTraceMaxMB},
		ttl:       durationValue{min: realredis.MinTTL, max: realredis.MaxTTL},
		maxEvents: intValue{min: minMaxEvents, max: maxMaxEvents},
	}
}

// The range of --max-events: the event budget of one world.
const (
	minMaxEvents = 1000
	maxMaxEvents = 1 << 40
)

// longWorld is the most events a world may cost, at run.HighEventRate,
// before run says up front what it will cost and shows its progress on a
// terminal (about a minute at the engine's speed).
const longWorld = 5_000_000

// defaultTraceMaxMB bounds a --trace file (a 24 h run wrote 3.9 GB).
const defaultTraceMaxMB = 1024

func newRunCmd(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	rf := newRunFlags()
	f := &rf
	cmd := &cobra.Command{
		Use:   "run --lock ID --seed N [flags]",
		Short: "Run one scenario with one lock and one seed, and judge it",
		Long: `Run one scenario with one lock design and one seed: build the world, inject
the seed's fault schedule, heal, run the liveness phase, and judge the
history. The summary's last line is "trace sha256: <64 hex>"; the same
flags always give the same hash.

Verdicts: safe (exit 0); unsafe (exit 1: the lock's claim broke, in one of
three classes, worst first: double-hold, two clients believed they held it
at the same instant (unfenced designs); resource, the protected resource
lost an update or accepted a stale write; ownership, neither, but a client
deleted or re-timed the key while another client held it); liveness (exit 3: a client could
not get the lock after the heal); unknown (exit 4: the run could not be
judged completely).`,
		Example: `  locksim run --lock redlock --seed 1
  locksim run --lock set-nx-cad --seed 42 --clients 10 --json
  locksim run --lock redsync --seed 7 --trace redsync-7.jsonl
  locksim run --scenario pause-after-check --lock fencing --seed 3
  locksim run --scenario my-scenario.yaml --lock redlock --seed 1 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkBackend(f.backend); err != nil {
				return usageErrorf("%v", err)
			}
			if f.backend == "real" {
				rj, err := f.realJob(cmd)
				if err != nil {
					return err
				}
				*code = runReal(rj, f, stdout, stderr)
				return nil
			}
			if f.driver != "" {
				return usageErrorf("--driver: only with --backend real (a driver is a real process)")
			}
			if cmd.Flags().Lookup("ttl").Changed {
				return usageErrorf("--ttl: only with --backend real (the simulator runs each lock with its own TTL)")
			}
			if info, err := catalogue.Get(f.lock); err == nil && info.RealOnly != "" {
				return usageErrorf("--lock: %s runs on the %s", f.lock, info.RealOnly)
			}
			j, err := f.job(cmd)
			if err != nil {
				return err
			}
			// From here an interrupt says what it lost (the CLI's host
			// exits the process: stop is for a test's host).
			stop := j.stopOnSignal(stderr)
			defer stop()
			j.preamble(stderr)
			// Everything is validated: hosting the bubble is the last step
			// (the CLI's host exits the process).
			*code = h(func(b sim.Bubble) int { return j.run(b, stdout, stderr) })
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.lock, "lock", "", "lock design id (see 'locksim list locks'); required")
	fl.Var(&f.seed, "seed", "the seed `N` that decides everything (0..18446744073709551615); required")
	fl.StringVar(&f.scenario, "scenario", "default", "built-in scenario id (see 'locksim list scenarios') or a scenario `FILE` (YAML)")
	fl.Var(&f.clients, "clients", fmt.Sprintf("client processes, 1..%d (default %d)", sim.MaxClients, scenarios.DefaultParams.Clients))
	fl.Var(&f.nodes, "nodes", fmt.Sprintf("Redis nodes, 1..%d (default 5 for independent-node locks, 3 for replicated)", sim.MaxNodes))
	fl.Var(&f.duration, "duration", fmt.Sprintf("virtual time of the safety phase, with faults; up to %v (default %v)", sim.MaxDuration, scenarios.DefaultParams.Duration))
	fl.Var(&f.liveness, "liveness", fmt.Sprintf("virtual time of the liveness phase, after the heal; up to %v (default %v)", sim.MaxDuration, scenarios.DefaultParams.Liveness))
	fl.Var(&f.replLag, "repl-lag", "replication lag added to every replication message, on replicated topologies (default the scenario's)")
	fl.Var(&f.downAfter, "down-after", "Sentinel's down-after on replicated topologies (default the scenario's)")
	fl.Var(&f.holdMin, "hold-min", "the shortest critical section (default the scenario's)")
	fl.Var(&f.holdMax, "hold-max", "the longest critical section (default the scenario's)")
	fl.BoolVar(&f.careful, "careful", false, "the careful workload: holders check their belief before each write, and a section ends at the end of the validity its own clock shows")
	fl.Var(&f.pause, "pause", "make every targeted client pause last `F` × the lock's TTL, 0..100, or add one (c0 stops just before its first protected write at or after 1 s); 0 removes them (sweep's pause parameter)")
	fl.Var(&f.step, "step", "run a scenario file's own sweep (its sweep: block) at step `N`, 0-based (what 'locksim sweep' runs for such a file)")
	fl.StringVar(&f.trace, "trace", "", "write the trace as JSON Lines to `FILE` (written only if the run completes; one that cannot be written is said, and the exit code stays the verdict's)")
	fl.Var(&f.traceMax, "trace-max-mb", fmt.Sprintf("the most a --trace file may hold, in MiB, 1..%d (default %d): a longer trace is not written, and the run says so", 1<<20, defaultTraceMaxMB))
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of the summary")
	fl.BoolVar(&f.fairness, "fairness", false, "judge fairness: a client that never acquires after the heal while others do fails liveness (by default it is a fairness figure, as for any design that promises no fairness)")
	fl.BoolVar(&f.endLive, "end-when-live", false, "end the liveness phase as soon as every client has acquired after the heal (a design that promises no fairness, judged without --fairness or an unavailability bound); the run's trace then differs")
	fl.StringVar(&f.cexDir, "counterexample", "", "when unsafe, write the counterexample to `DIR`: slice.jsonl (the events that show the first violation) and porcupine.html (the resource history, faults annotated)")
	f.shrink.register(fl)
	fl.StringVar(&f.backend, "backend", "sim", "`sim` (the simulator) or real (real redis-server processes on 127.0.0.1, real time; needs: apt-get install -y redis-server redis-sentinel faketime)")
	fl.Var(&f.ttl, "ttl", realTTLHelp)
	fl.StringVar(&f.driver, "driver", "", driverHelp)
	fl.Var(&f.maxEvents, "max-events", fmt.Sprintf("the world's event budget: a run that takes more scheduler steps stops with verdict unknown, %d..%d (default %d); a world estimated past it is refused", minMaxEvents, int64(maxMaxEvents), run.DefaultMaxEvents))
	return cmd
}

// job validates the flags and builds everything the run needs, before any
// bubble is hosted. Every error it returns is an input error (exit 64).
func (f *runFlags) job(cmd *cobra.Command) (*runJob, error) {
	if err := refuseEmpty(cmd); err != nil {
		return nil, err
	}
	spec := f.spec()
	if f.shrink.faultsFile != "" {
		fs, err := run.ReadFaults(f.shrink.faultsFile)
		if err != nil {
			return nil, usageErrorf("--faults: %v", err)
		}
		spec.Faults, spec.FaultsFile = fs, f.shrink.faultsFile
	}
	job, err := spec.Build()
	if err != nil {
		// The lock and the scenario first, then the seed, then the rest.
		var ie *run.InputError
		if f.seed.set || (errors.As(err, &ie) && (ie.Field == "lock" || ie.Field == "scenario")) {
			return nil, specError(err)
		}
	}
	if !f.seed.set {
		return nil, usageErrorf("--seed: required (0..18446744073709551615)")
	}
	if why := job.IdleNodes(); why != "" {
		return nil, usageErrorf("--%s", why)
	}
	cost := job.Cost()
	if cost.Low > cost.Budget {
		return nil, usageErrorf("--duration, --clients: %d clients × %v of virtual time need at least %s events (%d a client-second), more than the event budget of %s (--max-events): shorten --duration or --liveness, lower --clients, or raise --max-events",
			cost.Clients, cost.Virtual, millions(cost.Low), run.LowEventRate, millions(cost.Budget))
	}
	shrink, err := f.shrink.check(cmd, f)
	if err != nil {
		return nil, err
	}
	if f.cexDir != "" {
		if err := outfile.CheckDir(f.cexDir, "slice.jsonl", "porcupine.html"); err != nil {
			return nil, usageErrorf("--counterexample: %v", err)
		}
	}
	j := &runJob{job: job, repro: spec.Repro(), json: f.json, cexDir: f.cexDir, shrink: shrink, warnings: job.ScheduleWarnings()}
	if cost.High >= longWorld {
		j.cost = &cost
	}
	j.traceMaxBytes = int64(f.traceMax.v) << 20
	if f.trace != "" {
		if err := j.openTrace(f.trace); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// refuseEmpty refuses a path or name flag given an empty value (--trace
// "" would write no trace and say nothing), for the simulator and the
// real arm alike.
func refuseEmpty(cmd *cobra.Command) error {
	for _, name := range []string{"trace", "counterexample", "scenario", "faults", "shrink-out", "driver"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed && fl.Value.String() == "" {
			return usageErrorf("--%s: empty value (leave the flag out for its default)", name)
		}
	}
	return nil
}

// spec is the run the flags name.
func (f *runFlags) spec() run.Spec {
	s := run.Spec{Scenario: f.scenario, Lock: f.lock, Seed: f.seed.v, Fairness: f.fairness, EndWhenLive: f.endLive,
		Params: scenarios.Params{Clients: f.clients.v, Nodes: f.nodes.v, Duration: f.duration.v, Liveness: f.liveness.v,
			ReplLag: f.replLag.v, DownAfter: f.downAfter.v, HoldMin: f.holdMin.v, HoldMax: f.holdMax.v, Careful: f.careful}}
	if f.pause.set {
		v := f.pause.v
		s.Pause = &v
	}
	if f.step.set {
		v := f.step.v
		s.Step = &v
	}
	s.MaxEvents = int64(f.maxEvents.v)
	return s
}

// configError is a run.Spec's build error as a message naming its flag
// where there is one ("--nodes: 70 out of range 1..64").
func configError(err error) string {
	var ie *run.InputError
	if errors.As(err, &ie) && ie.Field != "" {
		return "--" + ie.Error()
	}
	return err.Error()
}

// specError is a run.Spec's build error as an input error naming its flag.
func specError(err error) error { return usageErrorf("%s", configError(err)) }

// runJob is one validated run, ready to be hosted in a bubble, with what
// the command does around it (trace file, shrink, counterexample files).
type runJob struct {
	job   *run.Job
	repro string
	json  bool

	cexDir string     // --counterexample: where to write the slice and the porcupine HTML
	shrink *shrinkJob // --shrink (shrink.go)

	trace *outfile.File // --trace: written beside its path, renamed over it on success
	// traceMaxBytes bounds the trace file (0: no bound).
	traceMaxBytes int64
	// traceErr says why the trace was not written after the run ("" if
	// it was, or none was asked for).
	traceErr string
	// replay, set by 'replay', compares the run's trace with a recording
	// (replayFile; "" for replay's own first run) written by the locksim
	// version recordedBy.
	replay     *run.Comparer
	replayFile string
	recordedBy string

	// warnings are said before the run (run.Job.ScheduleWarnings); cost,
	// set for a long world, is its estimated cost, said before the run,
	// with progress on a terminal.
	warnings []string
	cost     *run.Cost
	// at and events are how far the world got (sim.Config.Progress), for
	// the progress line and for what an interrupt lost.
	at, events atomic.Int64
	watching   bool // stopOnSignal is installed
	// replayChecked: the recording's footer vouched for its lines, so a
	// recording that ends early is a divergence, not a damaged file.
	replayChecked bool
}

// millions prints an event count for people ("37.5 million").
func millions(n int64) string {
	switch {
	case n >= 1_000_000_000:
		return fmt.Sprintf("%.1f billion", float64(n)/1e9)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1f million", float64(n)/1e6)
	}
	return strconv.FormatInt(n, 10)
}

// preamble says on stderr, before the run, what the user may not expect:
// the schedule's warnings and a long world's estimated cost.
func (j *runJob) preamble(stderr io.Writer) {
	for _, w := range j.warnings {
		fmt.Fprintf(stderr, "locksim: warning: %s\n", w)
	}
	if c := j.cost; c != nil {
		budget := ""
		if c.High > c.Budget {
			budget = fmt.Sprintf("; it may exhaust the event budget of %s (--max-events)", millions(c.Budget))
		}
		fmt.Fprintf(stderr, "locksim: a long world: %d clients × %v of virtual time, about %s to %s events (%d to %d a client-second, by lock)%s\n",
			c.Clients, c.Virtual, millions(c.Low), millions(c.High), run.LowEventRate, run.HighEventRate, budget)
	}
}

// watchProgress makes the world report how far it got (for an interrupt's
// message), and, for a long world on a terminal, shows it on stderr. The
// returned func ends the progress line.
func (j *runJob) watchProgress(stderr io.Writer) (done func()) {
	show := j.cost != nil && isTerminal(stderr)
	total := j.job.Config.Duration + j.job.Config.Liveness
	j.job.Config.Progress = func(at time.Duration, events int64) {
		j.at.Store(int64(at))
		j.events.Store(events)
		if show {
			fmt.Fprintf(stderr, "\rlocksim: t=%v of %v virtual, %s events ", at.Truncate(time.Millisecond), total, millions(events))
		}
	}
	return func() {
		if show && j.events.Load() > 0 {
			fmt.Fprint(stderr, "\r\033[K")
		}
	}
}

// openTrace creates the temporary trace file beside path, so a bad path is
// an input error before the run starts.
func (j *runJob) openTrace(path string) error {
	f, err := outfile.Create(path, j.traceMaxBytes)
	if err != nil {
		return usageErrorf("--trace: %v", err)
	}
	j.trace = f
	return nil
}

// run runs the job's world in bubble b, prints the summary (or JSON) to
// stdout, and returns the exit code. It never panics: a panic outside the
// bubble is an internal error (exit 70).
func (j *runJob) run(b sim.Bubble, stdout, stderr io.Writer) (code int) {
	var header run.Header
	if j.trace != nil {
		header = j.job.Header(versionLine())
		if err := run.WriteHeader(j.trace.Raw(), header); err != nil {
			j.trace.Discard()
			fmt.Fprintf(stderr, "locksim: --trace: %v\n", err)
			return exitInternal
		}
		j.job.Config.Trace = j.trace.Body()
	}
	endProgress := j.watchProgress(stderr)
	if !j.watching {
		stop := j.stopOnSignal(stderr)
		defer stop()
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "locksim: internal error: panic: %v\n%s", r, debug.Stack())
			code = exitInternal
		}
		if code == exitInternal {
			j.trace.Discard()
		}
	}()

	jd, err := j.job.Run(b)
	endProgress()
	if err != nil {
		fmt.Fprintf(stderr, "locksim: internal error: %v\n", err)
		return exitInternal
	}
	runErr := jd.Err
	// A trace or counterexample that cannot be written does not cost the
	// verdict: the summary is printed, the exit code is the verdict's, and
	// the failure is said on stderr (and in the summary, for the trace).
	var failed []string
	if t := j.trace; t != nil {
		if runErr != nil {
			// An incomplete run leaves no trace file behind.
			t.Discard()
		} else if body := t.Body(); body.Over {
			t.Discard()
			j.traceErr = fmt.Sprintf("the trace passed the bound of %d MiB (--trace-max-mb) after %d lines; raise the bound or shorten the run", j.traceMaxBytes>>20, body.Lines)
		} else if err := j.writeFooter(t, header, body.Lines, jd.Result); err != nil {
			t.Discard()
			j.traceErr = err.Error()
		} else if err := t.Commit(); err != nil {
			j.traceErr = err.Error()
		}
		if j.traceErr != "" {
			failed = append(failed, "--trace: not written: "+j.traceErr)
		}
	}

	r := jd.Report(j.repro)
	if j.trace != nil && runErr == nil && j.traceErr == "" {
		r.TraceFile = j.trace.Path
	}
	r.TraceError = j.traceErr
	if c := j.replay; c != nil {
		diff, lines := c.Finish()
		r.Replay = &run.ReplayReport{File: j.replayFile, Identical: diff == nil, Events: lines, Diff: diff}
	}
	if j.shrink != nil && r.Counterexample != nil && runErr == nil {
		if code := j.shrink.run(b, j, r, stderr); code != 0 {
			return code
		}
	}
	if r.Counterexample != nil && j.cexDir != "" {
		if err := r.WriteCounterexample(j.cexDir); err != nil {
			failed = append(failed, fmt.Sprintf("--counterexample: not written to %q: %v", j.cexDir, run.UnwrapPathError(err)))
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "locksim: run incomplete, verdict %s: %v\n", r.Verdict, runErr)
	}
	if j.json {
		b, err := json.Marshal(r)
		if err != nil {
			fmt.Fprintf(stderr, "locksim: internal error: %v\n", err)
			return exitInternal
		}
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		r.WriteSummary(stdout)
	}
	for _, msg := range failed {
		fmt.Fprintf(stderr, "locksim: %s (the verdict, %s, stands)\n", msg, r.Verdict)
	}
	return verdictExit[r.Verdict]
}

// writeFooter ends the trace file with the count and hashes of its lines
// (run.Footer), so replay can tell an edited file from a divergence.
func (j *runJob) writeFooter(t *outfile.File, h run.Header, events int64, res *sim.Result) error {
	if res == nil {
		return fmt.Errorf("writing %q: the run has no result", t.Path)
	}
	f, err := run.NewFooter(h, events, res.TraceSHA256)
	if err == nil {
		err = run.WriteFooter(t.Raw(), f)
	}
	if err != nil {
		return fmt.Errorf("writing %q: %v", t.Path, err)
	}
	return nil
}

// stopOnSignal stops the process if it is interrupted mid-run and says
// what was lost: how far the world got, that no verdict was reached, and
// that the temp trace file (removed, so no half-written file is left
// behind) was not written. The returned func stops watching.
func (j *runJob) stopOnSignal(stderr io.Writer) (stop func()) {
	name := j.trace.TempName()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	j.watching = true
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigc:
			if name != "" {
				os.Remove(name)
			}
			fmt.Fprintf(stderr, "\nlocksim: %v: %s\n", s, j.lost(name != ""))
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigc)
		close(done)
		j.watching = false
	}
}

// lost is what an interrupted run loses, for its message.
func (j *runJob) lost(trace bool) string {
	cfg := j.job.Config
	where := fmt.Sprintf("stopped in its first %d events", sim.ProgressEvery)
	if n := j.events.Load(); n > 0 {
		where = fmt.Sprintf("stopped at t=%v of %v+%v virtual (%s events)", time.Duration(j.at.Load()).Truncate(time.Millisecond), cfg.Duration, cfg.Liveness, millions(n))
	}
	msg := where + ": the run was not judged (no verdict, no summary"
	if trace {
		msg += ", the --trace file was not written"
	}
	if j.cexDir != "" {
		msg += ", no counterexample"
	}
	return msg + "); rerun the same command to run it from the start"
}
