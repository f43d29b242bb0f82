package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/reports/charts"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// exitInterrupted is the exit code of a sweep or report stopped by SIGINT
// or SIGTERM after finishing its running jobs (128 + SIGINT, as shells do).
const exitInterrupted = 130

// Files a sweep writes into its --out directory.
const (
	sweepResultsFile = "results.jsonl" // one line per job, in job order
	sweepSpecFile    = "sweep.json"    // what was swept: a rerun must match it
	sweepCSVFile     = "results.csv"   // the same lines as CSV, written when the sweep is complete
)

// maxSweepJobs bounds a sweep's cross product (a complete results file
// is read into memory for the summary, the CSV and merge: about 1 KiB a job).
const maxSweepJobs = 10_000_000

// fsyncEvery is how often the results file is synced while a sweep runs.
const fsyncEvery = 2 * time.Second

// sweepSpec is what a sweep runs; it is written to sweep.json, and a rerun
// into the same directory must give the same spec (then it resumes).
type sweepSpec struct {
	Format    int       `json:"format"` // 1
	Scenario  string    `json:"scenario"`
	Locks     []string  `json:"locks"`
	Seeds     int       `json:"seeds"`
	FirstSeed uint64    `json:"first_seed"`
	Param     string    `json:"param,omitempty"`
	Values    []float64 `json:"values,omitempty"`
	// Base parameters every job gets (0: the scenario's default).
	Clients    int   `json:"clients,omitempty"`
	Nodes      int   `json:"nodes,omitempty"`
	DurationNS int64 `json:"duration_ns,omitempty"`
	LivenessNS int64 `json:"liveness_ns,omitempty"`
	Shard      int   `json:"shard"`
	Shards     int   `json:"shards"`
}

// sweepJob is one run of the cross product. Index is its position in job
// order: parameter value (outer), lock, seed (inner).
type sweepJob struct {
	Index    int
	Lock     string
	Seed     uint64
	HasValue bool
	Value    float64
}

func (s *sweepSpec) values() int { return max(1, len(s.Values)) }

// total is the number of jobs of the whole (unsharded) sweep.
func (s *sweepSpec) total() int { return s.values() * len(s.Locks) * s.Seeds }

func (s *sweepSpec) job(i int) sweepJob {
	per := len(s.Locks) * s.Seeds
	vi, rest := i/per, i%per
	j := sweepJob{Index: i, Lock: s.Locks[rest/s.Seeds], Seed: s.FirstSeed + uint64(rest%s.Seeds)}
	if len(s.Values) > 0 {
		j.HasValue, j.Value = true, s.Values[vi]
	}
	return j
}

// mine reports whether job i belongs to this shard.
func (s *sweepSpec) mine(i int) bool { return i%s.Shards == s.Shard }

// base is the scenario parameters before the swept one is applied.
func (s *sweepSpec) base() scenarios.Params {
	return scenarios.Params{Clients: s.Clients, Nodes: s.Nodes, Duration: time.Duration(s.DurationNS), Liveness: time.Duration(s.LivenessNS)}
}

// runSpec is one job for a runner: the run, and whether to draw it.
type runSpec struct {
	spec run.Spec
	// timeline, if set, asks the runner to draw the first violation.
	timeline *timelineRequest
}

func (s *sweepSpec) runSpec(j sweepJob) runSpec {
	rs := runSpec{spec: run.Spec{Scenario: s.Scenario, Lock: j.Lock, Seed: j.Seed, Params: s.base()}}
	if j.HasValue {
		def := sweepParams[s.Param]
		def.apply(&rs.spec, j.Value)
	}
	return rs
}

// runJudged builds, runs and judges one job in bubble b. A run the
// simulator could not finish (an event budget hit) is a judged run with
// verdict unknown, not an error; a panic or an invalid spec is an error.
func runJudged(b sim.Bubble, spec run.Spec) (j *run.Judged, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: panic in %s/%s seed %d: %v\n%s", spec.ScenarioID(), spec.Lock, spec.Seed, r, debug.Stack())
		}
	}()
	job, err := spec.Build()
	if err != nil {
		return nil, err
	}
	return job.Run(b)
}

// paramDef is a parameter a sweep can vary.
type paramDef struct {
	unit     string // for axis labels and help
	integer  bool
	min, max float64
	minOpen  bool // min itself is not allowed
	apply    func(rs *run.Spec, v float64)
	help     string
}

func seconds(v float64) time.Duration { return time.Duration(math.Round(v * 1e9)) }

var sweepParams = map[string]paramDef{
	"clients": {unit: "clients", integer: true, min: 1, max: sim.MaxClients, help: "client processes",
		apply: func(rs *run.Spec, v float64) { rs.Params.Clients = int(v) }},
	"nodes": {unit: "nodes", integer: true, min: 1, max: sim.MaxNodes, help: "Redis nodes",
		apply: func(rs *run.Spec, v float64) { rs.Params.Nodes = int(v) }},
	"duration": {unit: "s", min: 0, minOpen: true, max: sim.MaxDuration.Seconds(), help: "virtual time of the safety phase",
		apply: func(rs *run.Spec, v float64) { rs.Params.Duration = seconds(v) }},
	"liveness": {unit: "s", min: 0, minOpen: true, max: sim.MaxDuration.Seconds(), help: "virtual time of the liveness phase",
		apply: func(rs *run.Spec, v float64) { rs.Params.Liveness = seconds(v) }},
	"repl-lag": {unit: "s", min: 0, minOpen: true, max: 600, help: "replication lag on replicated topologies",
		apply: func(rs *run.Spec, v float64) { rs.Params.ReplLag = seconds(v) }},
	"pause": {unit: "× TTL", min: 0, max: 100, help: "a client pause just before the protected write, as a fraction of the lock's TTL",
		apply: func(rs *run.Spec, v float64) { rs.Pause = &v }},
}

func paramNames() string {
	names := make([]string, 0, len(sweepParams))
	for n := range sweepParams {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// maxParamSteps bounds --param's steps.
const maxParamSteps = 1000

// parseParam reads "name=from:to:steps" (steps evenly spaced values, both
// ends included) or "name=v1,v2,..." into the name and its values.
// Durations take a unit ("500ms:5s:10") or are seconds.
func parseParam(s string) (string, []float64, error) {
	name, spec, ok := strings.Cut(s, "=")
	if !ok || name == "" || spec == "" {
		return "", nil, fmt.Errorf("%q: want name=from:to:steps or name=v1,v2,... (names: %s)", s, paramNames())
	}
	def, ok := sweepParams[name]
	if !ok {
		return "", nil, fmt.Errorf("unknown parameter %q (one of: %s)", name, paramNames())
	}
	num := func(x string) (float64, error) {
		x = strings.TrimSpace(x)
		if def.unit == "s" {
			if d, err := time.ParseDuration(x); err == nil {
				return d.Seconds(), nil
			}
		}
		v, err := strconv.ParseFloat(x, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			unit := "a number"
			if def.unit == "s" {
				unit = "a number of seconds or a duration (500ms, 2s)"
			}
			return 0, fmt.Errorf("%s: %q is not %s", name, x, unit)
		}
		return v, nil
	}
	var vals []float64
	if parts := strings.Split(spec, ":"); len(parts) == 3 {
		from, err := num(parts[0])
		if err != nil {
			return "", nil, err
		}
		to, err := num(parts[1])
		if err != nil {
			return "", nil, err
		}
		steps, err := strconv.Atoi(strings.TrimSpace(parts[2]))
		if err != nil || steps < 1 || steps > maxParamSteps {
			return "", nil, fmt.Errorf("%s: steps %q out of range (1..%d)", name, parts[2], maxParamSteps)
		}
		for i := 0; i < steps; i++ {
			v := from
			if steps > 1 {
				v = from + (to-from)*float64(i)/float64(steps-1)
			}
			vals = append(vals, v)
		}
	} else if len(parts) == 1 {
		for _, x := range strings.Split(spec, ",") {
			v, err := num(x)
			if err != nil {
				return "", nil, err
			}
			vals = append(vals, v)
		}
	} else {
		return "", nil, fmt.Errorf("%s: %q: want from:to:steps or v1,v2,...", name, spec)
	}
	for i, v := range vals {
		// 12 significant digits: 0.1*3 prints as 0.3, in JSON and on axes.
		v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
		vals[i] = v
		if def.integer && v != math.Trunc(v) {
			return "", nil, fmt.Errorf("%s: value %s is not a whole number (choose from:to:steps so every step is one)", name, run.FormatValue(v))
		}
		if v < def.min || (def.minOpen && v == def.min) || v > def.max {
			lo := "["
			if def.minOpen {
				lo = "("
			}
			return "", nil, fmt.Errorf("%s: value %s out of range %s%s, %s]", name, run.FormatValue(v), lo, run.FormatValue(def.min), run.FormatValue(def.max))
		}
		if slices.Contains(vals[:i], v) {
			return "", nil, fmt.Errorf("%s: value %s appears twice", name, run.FormatValue(v))
		}
	}
	return name, vals, nil
}

// writeOutput writes a result file atomically, readable by all, like any
// file the user asked for.
func writeOutput(path string, data []byte) error { return run.WriteFileAtomic(path, data) }

// sweepLine is one job's result: one line of results.jsonl. Field order
// is fixed (struct order); nothing in it depends on the machine, so a
// sweep's lines are the same bytes however it was run (workers, shards,
// resumes).
type sweepLine struct {
	Job                 int             `json:"job"`
	Scenario            string          `json:"scenario"`
	Lock                string          `json:"lock"`
	Seed                uint64          `json:"seed"`
	Param               string          `json:"param"`
	Value               *float64        `json:"value"`
	Verdict             checker.Verdict `json:"verdict"`
	Claim               string          `json:"claim"`
	LeaseOverlaps       int             `json:"lease_overlaps"`
	ResourceViolations  int             `json:"resource_violations"`
	Porcupine           string          `json:"porcupine"`
	OwnershipViolations int             `json:"ownership_violations"`
	StaleSections       int             `json:"stale_sections"`
	StaleAccepted       int             `json:"stale_accepted"`
	FencedRejections    int             `json:"fenced_rejections"`
	Starved             int             `json:"starved"`
	TraceSHA256         string          `json:"trace_sha256"`
	Error               string          `json:"error,omitempty"`
	// PauseShort: a targeted pause of the run did not run in full inside
	// the safety phase (outcome.PauseShort); the pause sweep's rates leave
	// such runs out.
	PauseShort bool `json:"pause_short,omitempty"`
}

func (s *sweepSpec) line(j sweepJob, o outcome) sweepLine {
	l := sweepLine{Job: j.Index, Scenario: s.Scenario, Lock: j.Lock, Seed: j.Seed, Param: s.Param,
		Verdict: o.Verdict, Claim: o.Claim, LeaseOverlaps: o.LeaseOverlaps, ResourceViolations: o.ResourceViolations,
		Porcupine: o.Porcupine, OwnershipViolations: o.OwnershipViolations,
		StaleSections: o.StaleSections, StaleAccepted: o.StaleAccepted, FencedRejections: o.FencedRejections, Starved: o.Starved,
		TraceSHA256: o.TraceSHA256, Error: o.SimError,
		PauseShort: o.PauseShort}
	if j.HasValue {
		v := j.Value
		l.Value = &v
	}
	return l
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// matches reports whether l is the line job j of this spec would write.
func (s *sweepSpec) matches(l sweepLine) bool {
	if l.Job < 0 || l.Job >= s.total() || !s.mine(l.Job) {
		return false
	}
	j := s.job(l.Job)
	if l.Scenario != s.Scenario || l.Lock != j.Lock || l.Seed != j.Seed || l.Param != s.Param {
		return false
	}
	if j.HasValue != (l.Value != nil) {
		return false
	}
	return !j.HasValue || *l.Value == j.Value
}

// ---- the command ----

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

Parameters (--param): clients, nodes (whole numbers); duration, liveness,
repl-lag (seconds, or durations such as 500ms:5s:10); pause (a client pause
just before its protected write, as a multiple of the lock's TTL: c0 pauses
once, at its first write at or after 1 s; scenarios with targeted pauses of
their own get those lengthened instead; 0 removes them). A run in which
the pause did not happen in full inside the safety phase (the client
reached its write too late, or the heal cut the pause short) is marked
"pause_short": true in results.jsonl, left out of the rates and counted in
the table's last column.`,
		Example: `  locksim sweep --scenario no-faults --locks set-nx-cad,redlock,fencing --seeds 200 --param pause=0:2:9 --out sweep-pause
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
	fl.StringVar(&f.scenario, "scenario", "default", "scenario id (see 'locksim list scenarios')")
	fl.StringVar(&f.locks, "locks", "", "comma-separated lock ids (default: every lock in 'locksim list locks' this binary can run)")
	fl.Var(&f.seeds, "seeds", "seeds per lock and value, 1..10000000 (default 100)")
	fl.Var(&f.firstSeed, "first-seed", "the first seed; seeds are first-seed, first-seed+1, ... (default 1)")
	fl.Var(&onceString{v: &f.param}, "param", "sweep `name=from:to:steps` or name=v1,v2,... (names: "+paramNames()+"); one parameter per sweep")
	fl.VarP(&f.jobs, "jobs", "j", fmt.Sprintf("parallel workers, 1..1024, lowered to what the machine holds (4 a core, ~64 MiB each; default the number of CPUs, %d here)", runtime.NumCPU()))
	fl.StringVar(&f.shard, "shard", "", "run only shard `i/n`: the jobs whose index mod n is i (0 <= i < n)")
	fl.Var(&f.clients, "clients", "client processes for every job, 1..10000 (default: the scenario's)")
	fl.Var(&f.nodes, "nodes", "Redis nodes for every job, 1..64 (default: the lock's topology)")
	fl.Var(&f.duration, "duration", "safety phase of every job (default: the scenario's)")
	fl.Var(&f.liveness, "liveness", "liveness phase of every job (default: the scenario's)")
	fl.BoolVar(&f.charts, "charts", true, "draw the rates (rates-*.png and .svg) when the sweep is complete")
	return cmd
}

// sweepOptions is a validated sweep, ready to run.
type sweepOptions struct {
	spec    sweepSpec
	out     string
	workers int
	stdout  io.Writer
	stderr  io.Writer
	// progress shows a bar on stderr (only when it is a terminal).
	progress bool
	// afterLine, if set, is called after each line is written (tests).
	afterLine func(written int)
	// signals: the command handles SIGINT/SIGTERM itself (not in tests).
	signals bool
	charts  bool
}

func (f *sweepFlags) options(cmd *cobra.Command, stdout, stderr io.Writer) (*sweepOptions, error) {
	if f.out == "" {
		return nil, usageErrorf("--out: required (the directory for results.jsonl)")
	}
	if _, err := scenarios.Get(f.scenario); err != nil {
		return nil, usageErrorf("--scenario: unknown scenario %q (one of: %s)", f.scenario, strings.Join(scenarios.IDs(), ", "))
	}
	spec := sweepSpec{Format: 1, Scenario: f.scenario, Seeds: 100, FirstSeed: 1, Shards: 1,
		Clients: f.clients.v, Nodes: f.nodes.v, DurationNS: int64(f.duration.v), LivenessNS: int64(f.liveness.v)}
	if f.seeds.set {
		spec.Seeds = f.seeds.v
	}
	if f.firstSeed.set {
		spec.FirstSeed = f.firstSeed.v
	}
	if spec.FirstSeed > math.MaxUint64-uint64(spec.Seeds)+1 {
		return nil, usageErrorf("--first-seed: %d + %d seeds runs past the largest seed", spec.FirstSeed, spec.Seeds)
	}
	for _, name := range []string{"out", "scenario", "locks", "param"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed && fl.Value.String() == "" {
			return nil, usageErrorf("--%s: empty value (leave the flag out for its default)", name)
		}
	}
	var err error
	if spec.Locks, err = parseLocks(f.locks); err != nil {
		return nil, err
	}
	if f.param != "" {
		if spec.Param, spec.Values, err = parseParam(f.param); err != nil {
			return nil, usageErrorf("--param: %v", err)
		}
	}
	if f.shard != "" {
		if spec.Shard, spec.Shards, err = parseShard(f.shard); err != nil {
			return nil, usageErrorf("--shard: %v", err)
		}
	}
	if total := spec.total(); total > maxSweepJobs || total < 0 {
		return nil, usageErrorf("the sweep has %d jobs (values × locks × seeds); at most %d", total, maxSweepJobs)
	}
	if err := spec.check(); err != nil {
		return nil, err
	}
	workers := runtime.NumCPU()
	if f.jobs.set {
		var note string
		if workers, note = boundWorkers(f.jobs.v); note != "" {
			fmt.Fprintf(stderr, "locksim: %s\n", note)
		}
	}
	o := &sweepOptions{spec: spec, out: f.out, workers: workers, stdout: stdout, stderr: stderr, progress: isTerminal(stderr), signals: true, charts: f.charts}
	if err := o.prepareDir(); err != nil {
		return nil, err
	}
	return o, nil
}

// check builds the first job of every (value, lock) pair, so a parameter a
// scenario or lock rejects is an input error before anything runs.
func (s *sweepSpec) check() error {
	for vi := 0; vi < s.values(); vi++ {
		for li := range s.Locks {
			j := s.job((vi*len(s.Locks) + li) * s.Seeds)
			if _, err := s.runSpec(j).spec.Build(); err != nil {
				what := "lock " + j.Lock
				if j.HasValue {
					what += fmt.Sprintf(", %s=%s", s.Param, run.FormatValue(j.Value))
				}
				return usageErrorf("%s: %v", what, err)
			}
		}
	}
	return nil
}

// availableLocks are the catalogue's locks this binary can run (a design
// behind a build tag is listed but Unavailable).
func availableLocks() []string {
	var ids []string
	for _, id := range locks.IDs() {
		if info, _ := locks.Get(id); info.Unavailable == "" {
			ids = append(ids, id)
		}
	}
	return ids
}

func parseLocks(s string) ([]string, error) {
	if s == "" || s == "all" {
		return availableLocks(), nil
	}
	var out []string
	for _, id := range strings.Split(s, ",") {
		id = strings.TrimSpace(id)
		info, err := locks.Get(id)
		if err != nil {
			return nil, usageErrorf("--locks: unknown lock %q (one of: %s)", id, strings.Join(locks.IDs(), ", "))
		}
		if info.Unavailable != "" {
			return nil, usageErrorf("--locks: %s is %s", id, info.Unavailable)
		}
		if slices.Contains(out, id) {
			return nil, usageErrorf("--locks: %q appears twice", id)
		}
		out = append(out, id)
	}
	return out, nil
}

func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%q: want i/n, e.g. 0/4", s)
	}
	if n < 1 || n > 1_000_000 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("%q: want 0 <= i < n <= 1000000", s)
	}
	return i, n, nil
}

// isTerminal reports whether w is a terminal (progress bars go only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// prepareDir creates the output directory and checks that a sweep already
// in it is this one.
func (o *sweepOptions) prepareDir() error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return usageErrorf("--out: cannot create %q: %v", o.out, unwrapPathError(err))
	}
	want, _ := json.MarshalIndent(o.spec, "", "  ")
	want = append(want, '\n')
	path := filepath.Join(o.out, sweepSpecFile)
	have, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, err := os.Stat(filepath.Join(o.out, sweepResultsFile)); err == nil {
			return usageErrorf("--out: %q has a %s but no %s: not a locksim sweep directory, or a damaged one", o.out, sweepResultsFile, sweepSpecFile)
		}
		if err := writeOutput(path, want); err != nil {
			return usageErrorf("--out: cannot write %q: %v", path, unwrapPathError(err))
		}
	case err != nil:
		return usageErrorf("--out: cannot read %q: %v", path, unwrapPathError(err))
	case !bytes.Equal(have, want):
		var old sweepSpec
		desc := "an unreadable spec"
		if json.Unmarshal(have, &old) == nil {
			desc = old.describe()
			if f, a, b := firstDiff(old, o.spec); f != "" {
				desc += fmt.Sprintf("; first difference: %s is %s there, %s here", f, a, b)
			}
		}
		return usageErrorf("--out: %q holds a different sweep (%s); use another directory, or rerun that sweep's command to resume it", o.out, desc)
	}
	return nil
}

func (s *sweepSpec) describe() string {
	d := fmt.Sprintf("scenario %s, locks %s, %d seeds from %d", s.Scenario, strings.Join(s.Locks, ","), s.Seeds, s.FirstSeed)
	if s.Param != "" {
		vs := make([]string, len(s.Values))
		for i, v := range s.Values {
			vs[i] = run.FormatValue(v)
		}
		d += fmt.Sprintf(", %s=%s", s.Param, strings.Join(vs, ","))
	}
	if s.Shards > 1 {
		d += fmt.Sprintf(", shard %d/%d", s.Shard, s.Shards)
	}
	return d
}

// main runs the sweep in the host's bubble factory and returns the exit code.
func (o *sweepOptions) main(b sim.Bubble) int {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if o.signals {
		defer watchSignals(ctx, stop, o.stderr, "finishing the running jobs")()
	}
	st, err := o.run(ctx, b)
	if err != nil {
		fmt.Fprintf(o.stderr, "locksim: %s\n", errorLine(err))
		var ce *codeError
		if errors.As(err, &ce) {
			return ce.code
		}
		return exitInternal
	}
	if st.interrupted {
		fmt.Fprintf(o.stderr, "locksim: interrupted: %d of %d jobs done; run the same command again to resume\n", st.done, st.mine)
		return exitInterrupted
	}
	return exitSafe
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

type sweepStatus struct {
	mine, done  int // jobs of this shard; jobs with a line
	interrupted bool
}

// run runs the jobs not yet in the results file, appending their lines in
// job order; when all are there it writes the CSV, the summary and charts.
func (o *sweepOptions) run(ctx context.Context, b sim.Bubble) (sweepStatus, error) {
	unlock, err := lockDir(o.out)
	if err != nil {
		return sweepStatus{}, err
	}
	defer unlock()
	s := &o.spec
	path := filepath.Join(o.out, sweepResultsFile)
	have, sorted, err := o.loadExisting(path)
	if err != nil {
		return sweepStatus{}, err
	}
	var todo []int
	mine := 0
	for i := 0; i < s.total(); i++ {
		if !s.mine(i) {
			continue
		}
		mine++
		if !have[i] {
			todo = append(todo, i)
		}
	}
	st := sweepStatus{mine: mine, done: mine - len(todo)}
	if mine == 0 {
		// An empty shard (more shards than jobs) is a complete, empty
		// result: an empty results file that merge accepts.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return st, &codeError{code: exitInternal, err: fmt.Errorf("cannot write %q: %v", path, unwrapPathError(err))}
		}
		if err := f.Close(); err != nil {
			return st, &codeError{code: exitInternal, err: fmt.Errorf("cannot write %q: %v", path, err)}
		}
	}
	if len(todo) > 0 {
		file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return st, &codeError{code: exitInternal, err: fmt.Errorf("cannot write %q: %v", path, unwrapPathError(err))}
		}
		w := newLineWriter(file)
		var bar *progressbar.ProgressBar
		if o.progress {
			bar = newBar(o.stderr, "sweep", mine, st.done)
		}
		workers := min(o.workers, len(todo))
		runners, err := newRunners(workers, b, o.stderr)
		if err != nil {
			file.Close()
			return st, &codeError{code: exitInternal, err: err}
		}
		written := 0
		n, runErr := runPool(ctx, workers, len(todo), func(w, k int) (sweepLine, error) {
			j := s.job(todo[k])
			out, err := runners[w].run(s.runSpec(j))
			if err != nil {
				return sweepLine{}, err
			}
			return s.line(j, out), nil
		}, func(k int, l sweepLine) error {
			if err := w.add(l); err != nil {
				return err
			}
			written++
			if bar != nil {
				bar.Add(1)
			}
			if o.afterLine != nil {
				o.afterLine(written)
			}
			return nil
		})
		closeErr := w.close()
		if err := closeRunners(runners); err != nil && runErr == nil {
			runErr = &codeError{code: exitInternal, err: fmt.Errorf("a worker process failed: %v", err)}
		}
		if bar != nil {
			bar.Exit()
			fmt.Fprintln(o.stderr)
		}
		st.done += n
		if runErr == nil && closeErr != nil {
			runErr = &codeError{code: exitInternal, err: fmt.Errorf("writing %q: %v", path, closeErr)}
		}
		if runErr != nil {
			return st, runErr
		}
		if n < len(todo) {
			st.interrupted = true
			return st, nil
		}
	}
	if !sorted {
		if err := sortResults(path); err != nil {
			return st, &codeError{code: exitInternal, err: err}
		}
	}
	lines, err := readLines(path)
	if err != nil {
		return st, &codeError{code: exitInternal, err: err}
	}
	if err := finishSweep(o.out, s, lines, o.stdout, o.charts); err != nil {
		return st, &codeError{code: exitInternal, err: err}
	}
	return st, nil
}

// loadExisting reads the lines a previous run left: a torn last line (no
// newline: the process died mid-write) is cut off; any other line must be
// one of this sweep's jobs. sorted is false when the lines are not in job
// order (the file was written by hand or joined by cat).
func (o *sweepOptions) loadExisting(path string) (have map[int]bool, sorted bool, err error) {
	have = map[int]bool{}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return have, true, nil
	}
	if err != nil {
		return nil, false, usageErrorf("--out: cannot read %q: %v", path, unwrapPathError(err))
	}
	if n := bytes.LastIndexByte(data, '\n') + 1; n < len(data) {
		if err := os.Truncate(path, int64(n)); err != nil {
			return nil, false, &codeError{code: exitInternal, err: fmt.Errorf("cutting the torn last line of %q: %v", path, unwrapPathError(err))}
		}
		fmt.Fprintf(o.stderr, "locksim: %s: discarded a torn last line (%d bytes); that job runs again\n", path, len(data)-n)
		data = data[:n]
	}
	sorted = true
	last := -1
	for i, raw := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var l sweepLine
		if err := json.Unmarshal(raw, &l); err != nil || !o.spec.matches(l) {
			return nil, false, usageErrorf("--out: %s line %d is not a result of this sweep; use another directory", path, i+1)
		}
		if have[l.Job] {
			return nil, false, usageErrorf("--out: %s line %d repeats job %d", path, i+1, l.Job)
		}
		have[l.Job] = true
		if l.Job < last {
			sorted = false
		}
		last = l.Job
	}
	return have, sorted, nil
}

// lineWriter appends whole JSON lines to the results file through one
// buffer, flushing after every line and syncing the file every fsyncEvery.
// Only the pool's emitter goroutine uses it.
type lineWriter struct {
	f        *os.File
	w        *bufio.Writer
	lastSync time.Time
}

func newLineWriter(f *os.File) *lineWriter {
	return &lineWriter{f: f, w: bufio.NewWriterSize(f, 64<<10), lastSync: time.Now()}
}

func (lw *lineWriter) add(l sweepLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := lw.w.Write(b); err != nil {
		return err
	}
	// One flush per line: the file only ever ends in a whole line (a
	// single write of at most the buffer), unless the process dies inside
	// that write.
	if err := lw.w.Flush(); err != nil {
		return err
	}
	if time.Since(lw.lastSync) >= fsyncEvery {
		lw.lastSync = time.Now()
		return lw.f.Sync()
	}
	return nil
}

func (lw *lineWriter) close() error {
	err := lw.w.Flush()
	if serr := lw.f.Sync(); err == nil {
		err = serr
	}
	if cerr := lw.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runPool runs do(w, i) for i in 0..n-1 on k workers (w is the worker's
// index, 0..k-1) and hands each result to emit, from
// one goroutine, in index order (results that finish early wait in a
// reorder buffer). When ctx is cancelled no new job starts; the running
// ones finish and are emitted. An error from do or emit stops the pool
// the same way and is returned. It returns how many results were emitted:
// always a prefix 0..done-1.
func runPool[R any](ctx context.Context, k, n int, do func(w, i int) (R, error), emit func(i int, r R) error) (done int, err error) {
	type result struct {
		i   int
		r   R
		err error
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	results := make(chan result, k)
	var wg sync.WaitGroup
	for w := 0; w < min(k, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, err := do(w, i)
				results <- result{i, r, err}
			}
		}()
	}
	go func() {
		defer close(next)
		for i := 0; i < n; i++ {
			// Check first: a cancelled pool starts nothing more, even
			// when a worker is free. The parent is checked too: its
			// cancellation reaches ctx only a moment later.
			if parent.Err() != nil || ctx.Err() != nil {
				return
			}
			select {
			case next <- i:
			case <-parent.Done():
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	pending := map[int]result{}
	for res := range results {
		pending[res.i] = res
		for {
			r, ok := pending[done]
			if !ok {
				break
			}
			delete(pending, done)
			if err == nil && r.err != nil {
				err = r.err
				cancel()
			}
			if err == nil {
				if eerr := emit(done, r.r); eerr != nil {
					err = eerr
					cancel()
				}
			}
			if err != nil {
				break
			}
			done++
		}
	}
	return done, err
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

// readLines reads a complete results file.
func readLines(path string) ([]sweepLine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []sweepLine
	for i, raw := range bytes.Split(data, []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var l sweepLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", path, i+1, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// encodeLines renders lines as results.jsonl bytes.
func encodeLines(lines []sweepLine) ([]byte, error) {
	var buf bytes.Buffer
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// sortResults rewrites a results file in job order.
func sortResults(path string) error {
	lines, err := readLines(path)
	if err != nil {
		return err
	}
	slices.SortStableFunc(lines, func(a, b sweepLine) int { return a.Job - b.Job })
	data, err := encodeLines(lines)
	if err != nil {
		return err
	}
	return writeOutput(path, data)
}

// writeCSV writes the lines as CSV, one row per job, same columns.
func writeCSV(path string, lines []sweepLine) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"job", "scenario", "lock", "seed", "param", "value", "verdict", "claim", "lease_overlaps",
		"resource_violations", "porcupine", "ownership_violations", "stale_sections", "stale_accepted", "fenced_rejections", "starved", "trace_sha256", "error", "pause_short"})
	for _, l := range lines {
		v := ""
		if l.Value != nil {
			v = run.FormatValue(*l.Value)
		}
		w.Write([]string{strconv.Itoa(l.Job), l.Scenario, l.Lock, strconv.FormatUint(l.Seed, 10), l.Param, v, string(l.Verdict), l.Claim,
			strconv.Itoa(l.LeaseOverlaps), strconv.Itoa(l.ResourceViolations), l.Porcupine, strconv.Itoa(l.OwnershipViolations),
			strconv.Itoa(l.StaleSections), strconv.Itoa(l.StaleAccepted), strconv.Itoa(l.FencedRejections), strconv.Itoa(l.Starved),
			l.TraceSHA256, l.Error, strconv.FormatBool(l.PauseShort)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return writeOutput(path, buf.Bytes())
}

// tally counts runs by outcome.
type tally struct {
	Runs          int
	Unsafe        int
	Liveness      int
	Unknown       int
	Overlap       int // runs with a lease overlap
	Resource      int // runs with a resource violation
	Ownership     int // runs with an ownership violation
	Stale         int // runs with a stale section (a holder acted on a dead lease)
	StaleAccepted int // runs in which the storage accepted a stale write
	Fenced        int // runs in which the storage refused an operation
	Starved       int // runs in which a client made no progress after the heal
	FirstUnsafe   uint64
	HasUnsafe     bool
	FirstOverlap  uint64
}

// outcome is the line's run outcome (for tallies).
func (l sweepLine) outcome() outcome {
	return outcome{Verdict: l.Verdict, LeaseOverlaps: l.LeaseOverlaps, ResourceViolations: l.ResourceViolations,
		OwnershipViolations: l.OwnershipViolations, StaleSections: l.StaleSections, StaleAccepted: l.StaleAccepted,
		FencedRejections: l.FencedRejections, Starved: l.Starved}
}

func (t *tally) add(o outcome, seed uint64) {
	t.Runs++
	if o.StaleSections > 0 {
		t.Stale++
	}
	if o.StaleAccepted > 0 {
		t.StaleAccepted++
	}
	if o.FencedRejections > 0 {
		t.Fenced++
	}
	if o.Starved > 0 {
		t.Starved++
	}
	verdict, overlaps, resource, ownership := o.Verdict, o.LeaseOverlaps, o.ResourceViolations, o.OwnershipViolations
	switch verdict {
	case checker.VerdictUnsafe:
		t.Unsafe++
		if !t.HasUnsafe || seed < t.FirstUnsafe {
			t.FirstUnsafe, t.HasUnsafe = seed, true
		}
	case checker.VerdictLiveness:
		t.Liveness++
	case checker.VerdictUnknown:
		t.Unknown++
	}
	if overlaps > 0 {
		t.Overlap++
	}
	if resource > 0 {
		t.Resource++
	}
	if ownership > 0 {
		t.Ownership++
	}
}

// verdict is a cell's verdict: unsafe if any run was, else liveness, else
// unknown, else safe.
// verdict is a cell's verdict: unsafe if any run was unsafe (one
// counterexample is enough), otherwise the verdict most runs got, ties going
// to the more severe (liveness, then unknown). A lock that starves a client
// in 1 run of 200 is reported safe with its liveness count beside it, not
// called a liveness failure; the counts are always shown.
func (t *tally) verdict() checker.Verdict {
	if t.Unsafe > 0 {
		return checker.VerdictUnsafe
	}
	safe := t.Runs - t.Liveness - t.Unknown
	switch {
	case t.Liveness > 0 && t.Liveness >= safe && t.Liveness >= t.Unknown:
		return checker.VerdictLiveness
	case t.Unknown > 0 && t.Unknown >= safe:
		return checker.VerdictUnknown
	}
	return checker.VerdictSafe
}

// finishSweep writes the CSV, prints the rates and draws them.
func finishSweep(dir string, s *sweepSpec, lines []sweepLine, stdout io.Writer, draw bool) error {
	if err := writeCSV(filepath.Join(dir, sweepCSVFile), lines); err != nil {
		return err
	}
	type key struct {
		value float64
		lock  string
	}
	tallies := map[key]*tally{}
	short := map[key]int{}
	anyShort := false
	for _, l := range lines {
		k := key{lock: l.Lock}
		if l.Value != nil {
			k.value = *l.Value
		}
		t := tallies[k]
		if t == nil {
			t = &tally{}
			tallies[k] = t
		}
		if l.PauseShort && s.Param == "pause" {
			// Not a run of the pause asked for (the report does the same).
			short[k]++
			anyShort = true
			continue
		}
		t.add(l.outcome(), l.Seed)
	}
	values := s.Values
	if len(values) == 0 {
		values = []float64{0}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	head := "lock\truns\tunsafe (95% Wilson)\tlease overlap\tresource violation\tstale section\tfenced\tliveness\tstarved\tunknown"
	if s.Param != "" {
		head = s.Param + "\t" + head
	}
	if anyShort {
		head += "\tpause short (left out)"
	}
	fmt.Fprintln(tw, head)
	for _, v := range values {
		for _, lock := range s.Locks {
			t := tallies[key{v, lock}]
			if t == nil {
				continue
			}
			row := fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d", lock, t.Runs, charts.Rate{K: t.Unsafe, N: t.Runs},
				pct(t.Overlap, t.Runs), pct(t.Resource, t.Runs), pct(t.Stale, t.Runs), pct(t.Fenced, t.Runs), t.Liveness, t.Starved, t.Unknown)
			if s.Param != "" {
				row = run.FormatValue(v) + "\t" + row
			}
			if anyShort {
				row += fmt.Sprintf("\t%d", short[key{v, lock}])
			}
			fmt.Fprintln(tw, row)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "results: %s (%d runs), %s\n", filepath.Join(dir, sweepResultsFile), len(lines), filepath.Join(dir, sweepCSVFile))

	if !draw || len(lines) == 0 { // an empty shard has nothing to draw
		return nil
	}
	var paths []string
	if s.Param != "" && len(s.Values) > 1 {
		def := sweepParams[s.Param]
		xlabel := s.Param
		if def.unit != "" {
			xlabel += " (" + def.unit + ")"
		}
		for _, m := range []struct {
			name, ylabel string
			k            func(*tally) int
		}{
			{"unsafe", "runs judged unsafe", func(t *tally) int { return t.Unsafe }},
			{"overlap", "runs with a lease overlap", func(t *tally) int { return t.Overlap }},
			{"resource", "runs with a resource violation", func(t *tally) int { return t.Resource }},
		} {
			rc := charts.RateChart{Title: fmt.Sprintf("%s: %s vs %s", s.Scenario, m.ylabel, s.Param), XLabel: xlabel, YLabel: m.ylabel}
			for _, lock := range s.Locks {
				rs := charts.RateSeries{Name: lock}
				for _, v := range s.Values {
					if t := tallies[key{v, lock}]; t != nil {
						rs.Points = append(rs.Points, charts.RatePoint{X: v, Rate: charts.Rate{K: m.k(t), N: t.Runs}})
					}
				}
				rc.Series = append(rc.Series, rs)
			}
			fig, err := rc.Figure()
			if err != nil {
				return err
			}
			p, err := charts.SaveAll(fig, filepath.Join(dir, "rates-"+m.name))
			if err != nil {
				return err
			}
			paths = append(paths, p...)
		}
	} else {
		fc := charts.FencingChart{Title: fmt.Sprintf("%s: lease overlap vs resource violation", s.Scenario)}
		for _, lock := range s.Locks {
			if t := tallies[key{values[0], lock}]; t != nil {
				fc.Groups = append(fc.Groups, charts.FencingGroup{Name: lock, Overlap: charts.Rate{K: t.Overlap, N: t.Runs}, Resource: charts.Rate{K: t.Resource, N: t.Runs}})
			}
		}
		fig, err := fc.Figure()
		if err != nil {
			return err
		}
		p, err := charts.SaveAll(fig, filepath.Join(dir, "rates-overlap-vs-resource"))
		if err != nil {
			return err
		}
		paths = append(paths, p...)
	}
	fmt.Fprintf(stdout, "charts: %s\n", strings.Join(paths, ", "))
	return nil
}

func pct(k, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%d (%.1f%%)", k, 100*float64(k)/float64(n))
}

// sweepLockFile holds the pid of the sweep writing a results folder.
const sweepLockFile = ".locksim.lock"

// lockDir takes the folder's advisory lock (flock on DIR/.locksim.lock,
// which holds the owner's pid), so two sweeps never append to one
// results file at once; the kernel drops the lock when its process ends,
// however it ends. A folder in use is an input error naming the pid.
func lockDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, sweepLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, usageErrorf("--out: cannot lock %q: %v", dir, unwrapPathError(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			owner := strings.TrimSpace(string(pid))
			if owner == "" {
				owner = "unknown"
			}
			return nil, usageErrorf("--out: %q is in use by another locksim sweep (pid %s); wait for it to finish, or write to another folder", dir, owner)
		}
		return nil, usageErrorf("--out: cannot lock %q: %v", dir, err)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		f.Truncate(0)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// firstDiff names the first field (in sweep.json's order) in which two
// specs differ, with both values as JSON; "" when none does.
func firstDiff(a, b sweepSpec) (field, av, bv string) {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	for i := 0; i < t.NumField(); i++ {
		if !t.Field(i).IsExported() {
			continue
		}
		x, _ := json.Marshal(va.Field(i).Interface())
		y, _ := json.Marshal(vb.Field(i).Interface())
		if !bytes.Equal(x, y) {
			name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
			if name == "" {
				name = t.Field(i).Name
			}
			const maxLen = 80
			cut := func(s []byte) string {
				if len(s) > maxLen {
					return string(s[:maxLen]) + "…"
				}
				return string(s)
			}
			return name, cut(x), cut(y)
		}
	}
	return "", "", ""
}
