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
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// Verdicts, as printed and in --json (DESIGN §8a).
const (
	verdictSafe     = "safe"
	verdictUnsafe   = "unsafe"
	verdictLiveness = "liveness"
	verdictUnknown  = "unknown"
)

var verdictExit = map[string]int{
	verdictSafe:     exitSafe,
	verdictUnsafe:   exitUnsafe,
	verdictLiveness: exitLiveness,
	verdictUnknown:  exitUnknown,
}

type runFlags struct {
	lock     string
	scenario string
	seed     seedValue
	clients  intValue
	nodes    intValue
	duration durationValue
	liveness durationValue
	trace    string
	json     bool
	fairness bool
	traceMax intValue // --trace-max-mb
	cexDir   string
	shrink   shrinkFlags // --faults, --shrink, --shrink-out, --shrink-runs (shrink.go)
}

// newRunFlags is run's flag values with their allowed ranges (replay
// takes the same ones).
func newRunFlags() runFlags {
	return runFlags{
		clients:  intValue{min: 1, max: sim.MaxClients},
		nodes:    intValue{min: 1, max: sim.MaxNodes},
		duration: durationValue{min: sim.MinDuration, max: sim.MaxDuration},
		liveness: durationValue{max: sim.MaxDuration},
		traceMax: intValue{min: 1, max: 1 << 20, v: defaultTraceMaxMB},
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
	fl.StringVar(&f.trace, "trace", "", "write the trace as JSON Lines to `FILE` (written only if the run completes)")
	fl.Var(&f.traceMax, "trace-max-mb", fmt.Sprintf("the most a --trace file may hold, in MiB, 1..%d (default %d): a longer trace is not written, and the run says so", 1<<20, defaultTraceMaxMB))
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of the summary")
	fl.BoolVar(&f.fairness, "fairness", false, "judge fairness: a client that never acquires after the heal while others do fails liveness (by default it is a fairness figure, as for any design that promises no fairness)")
	fl.StringVar(&f.cexDir, "counterexample", "", "when unsafe, write the counterexample to `DIR`: slice.jsonl (the events that show the first violation) and porcupine.html (the resource history, faults annotated)")
	f.shrink.register(fl)
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
	if f.lock == "" {
		return nil, usageErrorf("--lock: required (one of: %s)", strings.Join(locks.IDs(), ", "))
	}
	info, err := locks.Get(f.lock)
	if err != nil {
		return nil, usageErrorf("--lock: unknown lock %q (one of: %s)", f.lock, strings.Join(locks.IDs(), ", "))
	}
	if info.Unavailable != "" {
		return nil, usageErrorf("--lock: %s is %s", f.lock, info.Unavailable)
	}
	// --scenario: a built-in id, or a scenario file (scenarios.Resolve).
	sc, err := scenarios.Resolve(f.scenario)
	if err != nil {
		var fe *scenarios.FileError
		if errors.As(err, &fe) {
			return nil, usageErrorf("--scenario: %v", err)
		}
		return nil, usageErrorf("--scenario: unknown scenario %q (one of: %s; or a scenario file)", f.scenario, strings.Join(scenarios.IDs(), ", "))
	}
	if !f.seed.set {
		return nil, usageErrorf("--seed: required (0..18446744073709551615)")
	}
	p := scenarios.Params{Clients: f.clients.v, Nodes: f.nodes.v, Duration: f.duration.v, Liveness: f.liveness.v}
	cfg, err := sc.Build(info, f.seed.v, p)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return nil, usageErrorf("%s", configError(err))
	}
	// --faults and --shrink (shrink.go).
	shrink, faultsRepro, err := f.shrink.apply(cmd, f, &cfg)
	if err != nil {
		return nil, err
	}

	repro := fmt.Sprintf("locksim run --scenario %s --lock %s --seed %d", f.scenario, f.lock, f.seed.v)
	for _, name := range []string{"clients", "nodes", "duration", "liveness"} {
		if fl := cmd.Flags().Lookup(name); fl.Changed {
			repro += fmt.Sprintf(" --%s %s", name, fl.Value)
		}
	}
	if f.fairness {
		repro += " --fairness"
	}
	if f.cexDir != "" {
		if err := checkOutDir(f.cexDir, "slice.jsonl", "porcupine.html"); err != nil {
			return nil, usageErrorf("--counterexample: %v", err)
		}
	}
	repro += faultsRepro
	j := &runJob{scenario: sc.ID, info: info, cfg: cfg, judging: sc.Judging(info), repro: repro, json: f.json, cexDir: f.cexDir, fairness: f.fairness,
		shrink: shrink, headerScenario: f.scenario}
	j.traceMaxBytes = int64(f.traceMax.v) << 20
	if f.trace != "" {
		if err := j.openTrace(f.trace); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// configError names the flag behind a scenario or sim.Config validation
// error where there is one ("nodes: 70 out of range 1..64" → "--nodes: ...").
func configError(err error) string {
	msg := err.Error()
	for _, name := range []string{"nodes", "clients", "duration", "liveness"} {
		if strings.HasPrefix(msg, name+":") {
			return "--" + msg
		}
	}
	return "invalid scenario configuration: " + msg
}

// runJob is one validated run, ready to be hosted in a bubble.
type runJob struct {
	scenario string
	info     locks.Info
	cfg      sim.Config
	judging  scenarios.Judging // the scenario's resource and liveness bound
	repro    string
	json     bool

	cexDir        string // --counterexample: where to write the slice and the porcupine HTML
	skipPorcupine bool
	fairness      bool       // --fairness: starvation fails liveness
	shrink        *shrinkJob // --shrink (shrink.go)

	tracePath string   // the file the user asked for
	traceTmp  *os.File // a temp file beside it, renamed over it on success
	// traceMaxBytes bounds the trace file (0: no bound).
	traceMaxBytes int64
	// headerScenario is --scenario as given, for the trace file's header.
	headerScenario string
	// replay, set by 'replay', compares the run's trace with a recording
	// written by the locksim version recordedBy.
	replay     *traceComparer
	recordedBy string
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
		return usageErrorf("--trace: cannot write %q: %v", path, unwrapPathError(err))
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return usageErrorf("--trace: cannot write %q: %v", path, unwrapPathError(err))
	}
	j.tracePath, j.traceTmp = path, tmp
	return nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// run runs the job's world in bubble b, prints the summary (or JSON) to
// stdout, and returns the exit code. It never panics: a panic outside the
// bubble is an internal error (exit 70).
func (j *runJob) run(b sim.Bubble, stdout, stderr io.Writer) (code int) {
	var traceBuf *bufio.Writer
	var capped *cappedWriter
	if j.traceTmp != nil {
		traceBuf = bufio.NewWriterSize(j.traceTmp, 1<<20)
		if err := writeHeader(traceBuf, j.header(j.headerScenario)); err != nil {
			j.discardTrace()
			fmt.Fprintf(stderr, "locksim: --trace: %v\n", err)
			return exitInternal
		}
		capped = &cappedWriter{w: traceBuf, max: j.traceMaxBytes}
		j.cfg.Trace = capped
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

	res, runErr := sim.Run(b, j.cfg)
	if res == nil {
		if runErr == nil {
			runErr = errors.New("the simulator returned no result")
		}
		fmt.Fprintf(stderr, "locksim: internal error: %v\n", runErr)
		return exitInternal
	}
	if j.traceTmp != nil {
		if runErr != nil {
			// An incomplete run leaves no trace file behind.
			j.discardTrace()
		} else if capped.over {
			j.discardTrace()
			fmt.Fprintf(stderr, "locksim: --trace: not written: the trace passed the bound of %d MiB (--trace-max-mb) after %d lines; raise the bound or shorten the run\n", j.traceMaxBytes>>20, capped.lines)
			defer func() { code = exitInternal }()
		} else if err := j.commitTrace(traceBuf); err != nil {
			fmt.Fprintf(stderr, "locksim: --trace: %v\n", err)
			return exitInternal
		}
	}

	r := judge(j, res, runErr)
	if c := j.replay; c != nil {
		c.finish()
		r.Replay = &replayReport{File: c.file, Identical: c.diff == nil, Events: c.lines, Diff: c.diff}
	}
	if j.shrink != nil && r.Counterexample != nil && runErr == nil {
		if code := j.shrink.run(b, j, r, stderr); code != 0 {
			return code
		}
	}
	if r.Counterexample != nil && j.cexDir != "" {
		if err := writeCounterexample(j.cexDir, r); err != nil {
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
		printSummary(stdout, j, r)
	}
	return verdictExit[r.Verdict]
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
		return fmt.Errorf("writing %q: %v", j.tracePath, unwrapPathError(err))
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

// runReport is the judged run: the --json object and the summary's data.
type runReport struct {
	Scenario            string            `json:"scenario"`
	Lock                string            `json:"lock"`
	Seed                uint64            `json:"seed"`
	Verdict             string            `json:"verdict"`
	VerdictReason       string            `json:"verdict_reason"`
	LeaseOverlaps       int               `json:"lease_overlaps"`
	LeaseOverlapNS      int64             `json:"lease_overlap_ns"`
	FirstOverlap        *overlapReport    `json:"first_overlap,omitempty"`
	ResourceViolations  int               `json:"resource_violations"`
	Porcupine           string            `json:"porcupine"`
	Claim               string            `json:"claim"`
	OwnershipViolations int               `json:"ownership_violations"`
	StaleSections       int               `json:"stale_sections"`
	StaleAccepted       int               `json:"stale_accepted"`
	FencedRejections    int               `json:"fenced_rejections"`
	Starved             []string          `json:"starved"`
	LongestWaitNS       int64             `json:"longest_wait_ns"`
	Blockers            []checker.Blocker `json:"blockers,omitempty"`
	Acquisitions        outcomeCounts     `json:"acquisitions"`
	LivenessAcquired    int               `json:"liveness_acquisitions"`
	Clients             int               `json:"clients"`
	Nodes               int               `json:"nodes"`
	DurationNS          int64             `json:"duration_ns"`
	LivenessNS          int64             `json:"liveness_ns"`
	FaultSchedule       []faults.Fault    `json:"fault_schedule"`
	Stats               sim.Stats         `json:"stats"`
	TraceEvents         int64             `json:"trace_events"`
	HistoryCapped       bool              `json:"history_capped"`
	TraceSHA256         string            `json:"trace_sha256"`
	TraceFile           string            `json:"trace_file,omitempty"`
	Error               string            `json:"error,omitempty"`
	Counterexample      *counterexample   `json:"counterexample,omitempty"`
	Replay              *replayReport     `json:"replay,omitempty"` // set by 'replay'

	check   *checker.Result
	history checker.History
}

type outcomeCounts struct {
	OK      int `json:"ok"`
	Fail    int `json:"fail"`
	Unknown int `json:"unknown"`
}

type overlapReport struct {
	A       string `json:"a"`
	B       string `json:"b"`
	StartNS int64  `json:"start_ns"`
	EndNS   int64  `json:"end_ns"`
}

type counterexample struct {
	Repro     string             `json:"repro"`
	Faults    int                `json:"faults"`
	Clients   int                `json:"clients"`
	Violation *checker.Violation `json:"violation,omitempty"`
	// Files written with --counterexample DIR.
	SliceFile string `json:"slice_file,omitempty"`
	HTMLFile  string `json:"html_file,omitempty"`
	// Shrink is set with --shrink: Repro, Faults and Clients are then the
	// shrunk run's (shrink.go).
	Shrink *shrinkReport `json:"shrink,omitempty"`
}

// judge checks the history and decides the verdict: unsafe iff two clients
// believed they held the lock at once; otherwise unknown if the run or its
// history is incomplete; otherwise liveness if no client acquired the lock
// after the heal; otherwise safe.
func judge(j *runJob, res *sim.Result, runErr error) *runReport {
	cfg := j.cfg
	r := &runReport{
		Scenario:      j.scenario,
		Lock:          j.info.ID,
		Seed:          cfg.Seed,
		Clients:       cfg.Clients,
		Nodes:         len(cfg.Nodes),
		DurationNS:    int64(cfg.Duration),
		LivenessNS:    int64(cfg.Liveness),
		FaultSchedule: cfg.Faults,
		Stats:         res.Stats,
		TraceEvents:   res.TraceEvents,
		HistoryCapped: res.TraceCapped,
		TraceSHA256:   res.TraceSHA256,
		TraceFile:     j.tracePath,
	}
	if r.FaultSchedule == nil {
		r.FaultSchedule = []faults.Fault{}
	}
	if runErr != nil {
		r.Error = runErr.Error()
		r.TraceFile = ""
	}

	h := scenarios.History(res, cfg, j.info, j.judging.Resource, j.judging.Initial)
	chk := checker.Check(h, checker.Options{SkipPorcupine: j.skipPorcupine, MaxUnavailable: j.judging.MaxUnavailable, RequireFairness: j.fairness})
	r.check = &chk
	r.history = h
	for _, ev := range res.History {
		if ev.Op != "acquire" {
			continue
		}
		switch ev.Kind {
		case "ok":
			r.Acquisitions.OK++
			if ev.T >= h.Heal {
				r.LivenessAcquired++
			}
		case "fail":
			r.Acquisitions.Fail++
		case "unknown":
			r.Acquisitions.Unknown++
		}
	}
	r.LeaseOverlaps = chk.LeaseOverlaps
	r.LeaseOverlapNS = chk.OverlapNS
	if o := chk.FirstOverlap; o != nil {
		r.FirstOverlap = &overlapReport{A: o.A, B: o.B, StartNS: o.Start, EndNS: o.End}
	}
	r.ResourceViolations = chk.ResourceViolations
	r.Porcupine = chk.Porcupine
	r.OwnershipViolations = chk.OwnershipViolations
	r.StaleSections, r.StaleAccepted, r.FencedRejections = chk.Stale.Sections, chk.Stale.Accepted, chk.Stale.FencedRejections
	r.Starved, r.LongestWaitNS = chk.Liveness.Starved, chk.Liveness.LongestWaitNS
	if r.Starved == nil {
		r.Starved = []string{}
	}
	if chk.Verdict == checker.VerdictLiveness {
		r.Blockers = chk.Liveness.Blockers
	}
	r.Claim = chk.Claim
	r.Verdict = chk.Verdict
	if len(chk.Reasons) > 0 {
		r.VerdictReason = chk.Reasons[0]
	}
	if runErr != nil && r.Verdict != verdictUnsafe {
		r.Verdict = verdictUnknown
		r.VerdictReason = "the run did not complete: " + runErr.Error()
	}
	if r.Verdict == verdictUnsafe {
		r.Counterexample = &counterexample{Repro: j.repro, Faults: len(cfg.Faults), Clients: cfg.Clients, Violation: chk.First}
	}
	return r
}

// printSummary writes the human summary; its last line is the trace hash.
func printSummary(w io.Writer, j *runJob, r *runReport) {
	line := func(key, format string, a ...any) {
		fmt.Fprintf(w, "%-16s%s\n", key+":", fmt.Sprintf(format, a...))
	}
	line("scenario", "%s", r.Scenario)
	line("lock", "%s (%s)", r.Lock, j.info.Source)
	line("seed", "%d", r.Seed)
	line("world", "%d clients, %d nodes", r.Clients, r.Nodes)
	line("virtual time", "%v (safety %v, then liveness %v)", time.Duration(r.Stats.VirtualNS), time.Duration(r.DurationNS), time.Duration(r.LivenessNS))
	line("events", "%d scheduler steps, %d trace lines", r.Stats.Events, r.TraceEvents)
	line("commands", "%d Redis commands", r.Stats.Commands)
	line("faults", "%d scheduled, %d injected", len(r.FaultSchedule), r.Stats.Faults)
	for _, f := range r.FaultSchedule {
		fmt.Fprintf(w, "%-16s%s\n", "", f)
	}
	line("failovers", "%d", r.Stats.Failovers)
	line("crashes", "%d", r.Stats.Crashes)
	line("acquisitions", "ok %d, fail %d, unknown %d (ok after the heal: %d)", r.Acquisitions.OK, r.Acquisitions.Fail, r.Acquisitions.Unknown, r.LivenessAcquired)
	if r.LeaseOverlaps == 0 {
		line("lease overlaps", "0")
	} else {
		o := r.FirstOverlap
		line("lease overlaps", "%d (total %v)", r.LeaseOverlaps, time.Duration(r.LeaseOverlapNS))
		line("first overlap", "%s and %s from t=%v to t=%v (%v)", o.A, o.B, time.Duration(o.StartNS), time.Duration(o.EndNS), time.Duration(o.EndNS-o.StartNS))
	}
	line("resource", "%d violations (storage truth), porcupine: %s", r.ResourceViolations, r.Porcupine)
	line("ownership", "%d violations", r.OwnershipViolations)
	line("stale", "%d sections acted on a dead lease (%d with a stale write accepted); %d operations fenced by the storage", r.StaleSections, r.StaleAccepted, r.FencedRejections)
	if r.check != nil && r.check.Liveness.Judged {
		lv := r.check.Liveness
		if len(lv.Starved) == 0 {
			line("fairness", "every client progressed after the heal; longest wait %v (%s)", time.Duration(lv.LongestWaitNS), orNone(lv.LongestWaitClient))
		} else {
			line("fairness", "%d starved (%s); longest wait %v (%s)", len(lv.Starved), strings.Join(lv.Starved, ", "), time.Duration(lv.LongestWaitNS), lv.LongestWaitClient)
		}
	}
	line("claim", "%s", r.Claim)
	line("verdict", "%s", r.VerdictReason)
	if r.check != nil {
		for _, why := range r.check.Reasons[min(1, len(r.check.Reasons)):] {
			fmt.Fprintf(w, "%-16s%s\n", "", why)
		}
	}
	if r.Counterexample != nil {
		printShrink(w, r.Counterexample)
		line("repro", "%s", r.Counterexample.Repro)
	}
	if r.TraceFile != "" {
		line("trace file", "%s", r.TraceFile)
	}
	if rp := r.Replay; rp != nil {
		switch {
		case rp.Diff != nil:
			line("replay", "DIVERGED at line %d (see stderr)", rp.Diff.Line)
		case rp.File == "":
			line("replay", "identical in two runs (%d event lines)", rp.Events)
		default:
			line("replay", "identical to %s (%d event lines)", rp.File, rp.Events)
		}
	}
	fmt.Fprintf(w, "trace sha256: %s\n", r.TraceSHA256)
}

// writeCounterexample writes the first violation's slice of the history as
// JSON Lines and porcupine's visualization of the resource history.
func writeCounterexample(dir string, r *runReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	slice := checker.Slice(r.history, *r.check, int64(5*time.Second))
	var b strings.Builder
	for _, ev := range slice {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	slicePath := filepath.Join(dir, "slice.jsonl")
	if err := writeFileAtomic(slicePath, []byte(b.String())); err != nil {
		return err
	}
	r.Counterexample.SliceFile = slicePath
	if r.check.Linearizability.Info != nil {
		htmlPath := filepath.Join(dir, "porcupine.html")
		if err := checker.WriteVisualization(htmlPath, r.history, *r.check); err != nil {
			return err
		}
		r.Counterexample.HTMLFile = htmlPath
	}
	return nil
}

// writeFileAtomic writes data to a temp file beside path and renames it.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
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
