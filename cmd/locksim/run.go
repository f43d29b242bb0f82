package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/realredis"
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
	pause     floatValue
	step      intValue
	trace     string
	json      bool
	fairness  bool
	traceMax  intValue // --trace-max-mb
	cexDir    string
	shrink    shrinkFlags // --faults, --shrink, --shrink-out, --shrink-runs (shrink.go)
	backend   string      // --backend: sim or real (real.go)
	ttl       durationValue
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
	}
}

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

Verdicts: safe (exit 0); unsafe (exit 1: the lock's claim broke: two clients
believed they held it at once, or for fenced designs the protected resource
lost an update or accepted a stale write); liveness (exit 3: a client could
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
			if cmd.Flags().Lookup("ttl").Changed {
				return usageErrorf("--ttl: only with --backend real (the simulator runs each lock with its own TTL)")
			}
			j, err := f.job(cmd)
			if err != nil {
				return err
			}
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
	fl.Var(&f.pause, "pause", "make every targeted client pause last `F` × the lock's TTL, 0..100, or add one (c0 stops just before its first protected write at or after 1 s); 0 removes them (sweep's pause parameter)")
	fl.Var(&f.step, "step", "run a scenario file's own sweep (its sweep: block) at step `N`, 0-based (what 'locksim sweep' runs for such a file)")
	fl.StringVar(&f.trace, "trace", "", "write the trace as JSON Lines to `FILE` (written only if the run completes)")
	fl.Var(&f.traceMax, "trace-max-mb", fmt.Sprintf("the most a --trace file may hold, in MiB, 1..%d (default %d): a longer trace is not written, and the run says so", 1<<20, defaultTraceMaxMB))
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of the summary")
	fl.BoolVar(&f.fairness, "fairness", false, "judge fairness: a client that never acquires after the heal while others do fails liveness (by default it is a fairness figure, as for any design that promises no fairness)")
	fl.StringVar(&f.cexDir, "counterexample", "", "when unsafe, write the counterexample to `DIR`: slice.jsonl (the events that show the first violation) and porcupine.html (the resource history, faults annotated)")
	f.shrink.register(fl)
	fl.StringVar(&f.backend, "backend", "sim", "`sim` (the simulator) or real (real redis-server processes on 127.0.0.1, real time; needs: apt-get install -y redis-server redis-sentinel faketime)")
	fl.Var(&f.ttl, "ttl", realTTLHelp)
	return cmd
}

// job validates the flags and builds everything the run needs, before any
// bubble is hosted. Every error it returns is an input error (exit 64).
func (f *runFlags) job(cmd *cobra.Command) (*runJob, error) {
	for _, name := range []string{"trace", "counterexample", "scenario", "faults", "shrink-out"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed && fl.Value.String() == "" {
			return nil, usageErrorf("--%s: empty value (leave the flag out for its default)", name)
		}
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
	shrink, err := f.shrink.check(cmd, f)
	if err != nil {
		return nil, err
	}
	if f.cexDir != "" {
		if err := checkOutDir(f.cexDir, "slice.jsonl", "porcupine.html"); err != nil {
			return nil, usageErrorf("--counterexample: %v", err)
		}
	}
	j := &runJob{job: job, repro: spec.Repro(), json: f.json, cexDir: f.cexDir, shrink: shrink}
	j.traceMaxBytes = int64(f.traceMax.v) << 20
	if f.trace != "" {
		if err := j.openTrace(f.trace); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// spec is the run the flags name.
func (f *runFlags) spec() run.Spec {
	s := run.Spec{Scenario: f.scenario, Lock: f.lock, Seed: f.seed.v, Fairness: f.fairness,
		Params: scenarios.Params{Clients: f.clients.v, Nodes: f.nodes.v, Duration: f.duration.v, Liveness: f.liveness.v,
			ReplLag: f.replLag.v, DownAfter: f.downAfter.v, HoldMin: f.holdMin.v, HoldMax: f.holdMax.v}}
	if f.pause.set {
		v := f.pause.v
		s.Pause = &v
	}
	if f.step.set {
		v := f.step.v
		s.Step = &v
	}
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

	tracePath string   // the file the user asked for
	traceTmp  *os.File // a temp file beside it, renamed over it on success
	// traceMaxBytes bounds the trace file (0: no bound).
	traceMaxBytes int64
	// replay, set by 'replay', compares the run's trace with a recording
	// (replayFile; "" for replay's own first run) written by the locksim
	// version recordedBy.
	replay     *run.Comparer
	replayFile string
	recordedBy string
	// replayChecked: the recording's footer vouched for its lines, so a
	// recording that ends early is a divergence, not a damaged file.
	replayChecked bool
}

// openTrace creates the temporary trace file beside path, so a bad path is
// an input error before the run starts.
func (j *runJob) openTrace(path string) error {
	if err := checkWritable(path); err != nil {
		return usageErrorf("--trace: %v", err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return usageErrorf("--trace: cannot write %q: %v", path, run.UnwrapPathError(err))
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return usageErrorf("--trace: cannot write %q: %v", path, run.UnwrapPathError(err))
	}
	j.tracePath, j.traceTmp = path, tmp
	return nil
}

// run runs the job's world in bubble b, prints the summary (or JSON) to
// stdout, and returns the exit code. It never panics: a panic outside the
// bubble is an internal error (exit 70).
func (j *runJob) run(b sim.Bubble, stdout, stderr io.Writer) (code int) {
	var traceBuf *bufio.Writer
	var capped *cappedWriter
	var header run.Header
	if j.traceTmp != nil {
		traceBuf = bufio.NewWriterSize(j.traceTmp, 1<<20)
		header = j.job.Header(versionLine())
		if err := run.WriteHeader(traceBuf, header); err != nil {
			j.discardTrace()
			fmt.Fprintf(stderr, "locksim: --trace: %v\n", err)
			return exitInternal
		}
		capped = &cappedWriter{w: traceBuf, max: j.traceMaxBytes}
		j.job.Config.Trace = capped
		stop := j.removeTraceOnSignal(stderr)
		defer stop()
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "locksim: internal error: panic: %v\n%s", r, debug.Stack())
			code = exitInternal
		}
		if j.traceTmp != nil && code == exitInternal {
			j.discardTrace()
		}
	}()

	jd, err := j.job.Run(b)
	if err != nil {
		fmt.Fprintf(stderr, "locksim: internal error: %v\n", err)
		return exitInternal
	}
	runErr := jd.Err
	if j.traceTmp != nil {
		if runErr != nil {
			// An incomplete run leaves no trace file behind.
			j.discardTrace()
		} else if capped.over {
			j.discardTrace()
			fmt.Fprintf(stderr, "locksim: --trace: not written: the trace passed the bound of %d MiB (--trace-max-mb) after %d lines; raise the bound or shorten the run\n", j.traceMaxBytes>>20, capped.lines)
			defer func() { code = exitInternal }()
		} else if err := j.writeFooter(traceBuf, header, capped.lines, jd.Result); err != nil {
			j.discardTrace()
			fmt.Fprintf(stderr, "locksim: --trace: %v\n", err)
			return exitInternal
		} else if err := j.commitTrace(traceBuf); err != nil {
			fmt.Fprintf(stderr, "locksim: --trace: %v\n", err)
			return exitInternal
		}
	}

	r := jd.Report(j.repro)
	if runErr == nil {
		r.TraceFile = j.tracePath
	}
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
			fmt.Fprintf(stderr, "locksim: --counterexample: %v\n", err)
			return exitInternal
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
	return verdictExit[r.Verdict]
}

// writeFooter ends the trace file with the count and hashes of its lines
// (run.Footer), so replay can tell an edited file from a divergence.
func (j *runJob) writeFooter(w io.Writer, h run.Header, events int64, res *sim.Result) error {
	if res == nil {
		return fmt.Errorf("writing %q: the run has no result", j.tracePath)
	}
	f, err := run.NewFooter(h, events, res.TraceSHA256)
	if err == nil {
		err = run.WriteFooter(w, f)
	}
	if err != nil {
		return fmt.Errorf("writing %q: %v", j.tracePath, err)
	}
	return nil
}

// commitTrace flushes, syncs and closes the temp file and renames it over
// the requested path; on any error it removes the temp file.
func (j *runJob) commitTrace(w *bufio.Writer) error {
	tmp := j.traceTmp
	j.traceTmp = nil
	err := w.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), j.tracePath)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %q: %v", j.tracePath, run.UnwrapPathError(err))
	}
	return nil
}

// discardTrace closes and removes the temp file.
func (j *runJob) discardTrace() {
	if j.traceTmp == nil {
		return
	}
	j.traceTmp.Close()
	os.Remove(j.traceTmp.Name())
	j.traceTmp = nil
}

// removeTraceOnSignal removes the temp trace file if the process is
// interrupted mid-run, so no half-written file is left behind. The
// returned func stops watching.
func (j *runJob) removeTraceOnSignal(stderr io.Writer) (stop func()) {
	name := j.traceTmp.Name()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigc:
			os.Remove(name)
			fmt.Fprintf(stderr, "locksim: %v: stopped, no trace written\n", s)
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigc)
		close(done)
	}
}

// cappedWriter passes at most max bytes (0: no bound) to w; past the bound
// it drops the rest and records that it did.
type cappedWriter struct {
	w     io.Writer
	max   int64
	n     int64
	lines int64
	over  bool
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.over {
		return len(p), nil
	}
	if c.max > 0 && c.n+int64(len(p)) > c.max {
		c.over = true
		return len(p), nil
	}
	c.n += int64(len(p))
	c.lines += int64(bytes.Count(p, []byte{'\n'}))
	return c.w.Write(p)
}
