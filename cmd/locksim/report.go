package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/reports/charts"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
	"github.com/locksim/locksim/sweep"
)

// Report settings. Measured on the project's machine kind (2 cores, the
// 19-scenario catalogue of 108 cells, 23,400 runs, 2026-11-23): the
// default takes 7m16s of wall time on two worker processes on an otherwise
// idle machine (54 runs/s), --quick 40 s. What a cell costs is
// mostly its Redis commands: its virtual time × its clients × how often
// they poll; bonus-pool (100 clients) is a quarter of the total.
const (
	reportSeeds      = 200 // seeds per matrix cell
	reportQuickSeeds = 20
	// The pause sweep (the debate's rate plot): seeds per point.
	pauseSweepSeeds      = 50
	pauseSweepQuickSeeds = 10
)

// reportLengths shorten the safety phase of the scenarios whose length is
// not part of their meaning (a random swarm; no faults at all), so that
// 200 seeds per cell come closer to the time budget; every other scenario
// runs at the lengths its file sets (in TTLs: the faults' timing depends
// on them). The liveness phases keep their lengths: with a shorter one,
// clients contending for the lock starve in a few percent of fault-free
// runs (measured: no-faults with 20 s instead of 30 s, set-nx-getdel
// 12/200, set-nx-cad 3/200), which the report would show as liveness
// failures. The safety phase matters too where the workload runs out:
// bonus-pool (100 clients, 300 units) at 4 s instead of 10 s leaves the
// pool to the liveness phase and starved a client in 1/200 runs of
// set-nx-cad and of token-cas (0/200 at 10 s), so it keeps its length;
// redlock-all-up at 4 s changed no verdict over 200 seeds per lock.
var reportLengths = map[string]scenarios.Params{
	"default":        {Duration: 10 * time.Second, Liveness: 30 * time.Second},
	"no-faults":      {Duration: 10 * time.Second, Liveness: 30 * time.Second},
	"redlock-all-up": {Duration: 4 * time.Second, Liveness: 10 * time.Second},
}

// pauseSweep is the report's rate plot: in the no-faults world, client c0
// pauses just before its protected write for a multiple of the TTL.
var (
	pauseSweepScenario = "no-faults"
	pauseSweepLocks    = []string{"set-nx-cad", "redlock", "fencing", "token-cas"}
	pauseSweepValues   = []float64{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2}
	pauseSweepQuick    = []float64{0, 0.5, 1, 1.5, 2}
	pauseSweepLiveness = 5 * time.Second // the plot reads safety only
	// Kleppmann's two clients: c0 pauses, c1 may take the lock meanwhile.
	pauseSweepClients = 2
	// pauseSweepSlack is how long the safety phase leaves c0 to reach its
	// first write after run.PauseStart: c0 may have to wait for the lock
	// (measured over 50 seeds with 2 clients: median 1.8 s, 90th
	// percentile 6.0 s, at most 8.8 s). Runs where it still comes too late
	// are left out of the rates and counted apart.
	pauseSweepSlack = 10 * time.Second
)

// lockOrder is the columns' order: DESIGN §8a's list (simplest designs
// first, libraries last); other locks follow alphabetically.
var lockOrder = []string{"setnx-del", "setnx-expire", "set-nx-del", "getset-expiry", "set-nx-getdel", "set-nx-cad", "watchdog",
	"primary-replica", "redlock", "fencing", "token-cas", "version-cas", "redsync", "redislock", "go-zero", "gocron"}

type reportFlags struct {
	out       string
	quick     bool
	seeds     intValue
	jobs      intValue
	scenarios string
	locks     string
}

func newReportCmd(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	f := &reportFlags{seeds: intValue{min: 1, max: 1_000_000}, jobs: intValue{min: 1, max: 1024}}
	cmd := &cobra.Command{
		Use:   "report --out DIR [--quick] [--seeds N]",
		Short: "Run every built-in scenario with its locks and write the debate report",
		Long: `Run the matrix of built-in scenarios × locks (each scenario's own locks
when its file lists them, else every lock), N seeds per cell, plus a sweep
of a client pause before the protected write (0 to 2 TTLs) for single-node,
Redlock and the two fencing designs, and write into DIR:

  index.html    the report: outcome matrix beside what each side of the
                debate expects, rates with 95% Wilson intervals, charts,
                one counterexample timeline per unsafe cell with its repro
                command (self-contained: images are files beside it)
  report.md     the same in Markdown
  results.json  {"cells": [{"scenario", "lock", "runs", "lease_overlap_runs",
                "resource_violation_runs", "verdict", ...}, ...]}
  img/          rate charts (PNG and SVG)
  timelines/    counterexample timelines (PNG)

The same flags give the same files, byte for byte. Default: 200 seeds per
cell (23,400 runs: about 7½ minutes on 2 cores); --quick: 20 seeds and
a coarser sweep (about 40 seconds). The report is written beside DIR and
moved into place when complete: Ctrl-C stops (exit 130) and writes
nothing, and a rerun replaces exactly the files above (others in DIR
stay).`,
		Example: `  locksim report --out report
  locksim report --out quick --quick
  locksim report --out redlock --scenarios clock-jump,pause-after-check --locks redlock,fencing --seeds 500`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			plan, err := f.plan()
			if err != nil {
				return err
			}
			*code = h(func(b sim.Bubble) int { return plan.main(b, stdout, stderr) })
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.out, "out", "", "write the report into `DIR` (created); required")
	fl.BoolVar(&f.quick, "quick", false, fmt.Sprintf("%d seeds per cell and a coarser sweep (about 40 seconds on 2 cores)", reportQuickSeeds))
	fl.Var(&f.seeds, "seeds", fmt.Sprintf("seeds per cell (default %d, %d with --quick)", reportSeeds, reportQuickSeeds))
	fl.VarP(&f.jobs, "jobs", "j", fmt.Sprintf("parallel workers, 1..1024, lowered to what the machine holds (4 a core, ~64 MiB each; default the number of CPUs, %d here)", runtime.NumCPU()))
	fl.StringVar(&f.scenarios, "scenarios", "", "only these comma-separated scenario ids (default: every built-in)")
	fl.StringVar(&f.locks, "locks", "", "only these comma-separated lock ids (default: every lock)")
	return cmd
}

// reportCell is one scenario × lock of the matrix.
type reportCell struct {
	scenario scenarios.Scenario
	lock     locks.Info
	params   scenarios.Params
	cfg      runLengths
	sweep.Tally
	firstUnsafeSHA string
	expect         *expectJSON
	timeline       string
	spec           run.Spec // the cell's run, seed 1
}

// at is the cell's run with a seed.
func (c *reportCell) at(seed uint64) run.Spec {
	s := c.spec
	s.Seed = seed
	return s
}

// repro is the command that runs the cell's seed again.
func (c *reportCell) repro(seed uint64) string { return c.at(seed).Repro() }

type runLengths struct{ duration, liveness time.Duration }

// pausePoint is one point of the pause sweep.
type pausePointCell struct {
	lock  string
	value float64
	sweep.Tally
	// short counts the runs left out of the tally: c0 did not pause in
	// full inside the safety phase (outcome.PauseShort).
	short int
}

// reportRun is one job: a matrix cell's seed or a sweep point's seed.
type reportRun struct {
	rs    sweep.Request
	cell  *reportCell
	point *pausePointCell
}

type reportPlan struct {
	// out is where the run writes: a staging folder beside final, moved
	// into place when the report is complete (commit), removed otherwise,
	// so an interrupted or failed report leaves nothing and a rerun leaves
	// no stale chart or timeline of the previous one.
	out        string
	final      string
	committed  bool
	note       string // said on stderr when the report starts (-j lowered)
	quick      bool
	seeds      int
	workers    int
	cells      []*reportCell
	points     []*pausePointCell
	pauseSeeds int
	runs       []reportRun
	progress   bool
	signals    bool
}

func (f *reportFlags) plan() (*reportPlan, error) {
	if f.out == "" {
		return nil, usageErrorf("--out: required (the directory for the report)")
	}
	p := &reportPlan{out: f.out, quick: f.quick, seeds: reportSeeds, pauseSeeds: pauseSweepSeeds, workers: runtime.NumCPU(), signals: true}
	values := pauseSweepValues
	if f.quick {
		p.seeds, p.pauseSeeds, values = reportQuickSeeds, pauseSweepQuickSeeds, pauseSweepQuick
	}
	if f.seeds.set {
		p.seeds = f.seeds.v
		p.pauseSeeds = max(1, f.seeds.v/2)
	}
	if f.jobs.set {
		p.workers, p.note = boundWorkers(f.jobs.v)
	}
	scenarioIDs := scenarios.IDs()
	if f.scenarios != "" {
		scenarioIDs = nil
		for _, id := range strings.Split(f.scenarios, ",") {
			if _, err := scenarios.Get(id); err != nil {
				return nil, usageErrorf("--scenarios: unknown scenario %q (one of: %s)", id, strings.Join(scenarios.IDs(), ", "))
			}
			if !slices.Contains(scenarioIDs, id) {
				scenarioIDs = append(scenarioIDs, id)
			}
		}
	}
	var onlyLocks []string
	if f.locks != "" {
		var err error
		if onlyLocks, err = sweep.ParseLocks(f.locks); err != nil {
			return nil, sweepError(err)
		}
	}
	keep := func(id string) bool { return onlyLocks == nil || slices.Contains(onlyLocks, id) }

	var cellRuns, pointRuns []reportRun
	var scens []scenarios.Scenario
	for _, id := range scenarioIDs {
		s, _ := scenarios.Get(id)
		scens = append(scens, s)
	}
	slices.SortStableFunc(scens, func(a, b scenarios.Scenario) int {
		return cmp.Or(cmp.Compare(debateRank(a), debateRank(b)), cmp.Compare(a.ID, b.ID))
	})
	for _, s := range scens {
		ids := scenarioLocks(s)
		for _, id := range orderLocks(ids) {
			if !keep(id) {
				continue
			}
			info, err := locks.Get(id)
			if err != nil {
				return nil, usageErrorf("scenario %s lists lock %q, which is not in the catalogue", s.ID, id)
			}
			c := &reportCell{scenario: s, lock: info, expect: expectationOf(s, id)}
			c.params = reportLengths[s.ID]
			if c.params.Liveness > 0 {
				// A key orphaned at the heal blocks the lock for its
				// lease: the phase must outlast it (watchdog: 30 s).
				c.params.Liveness = max(c.params.Liveness, 2*info.TTL)
			}
			c.spec = run.Spec{Scenario: s.ID, Lock: id, Seed: 1, Params: c.params}
			rs := sweep.Request{Spec: c.spec}
			job, err := c.spec.Build()
			if err != nil {
				return nil, usageErrorf("scenario %s, lock %s: %s", s.ID, id, configError(err))
			}
			c.cfg = runLengths{job.Config.Duration, job.Config.Liveness}
			p.cells = append(p.cells, c)
			cellRuns = append(cellRuns, reportRun{rs: rs, cell: c})
		}
	}
	// The pause sweep, when its scenario and locks are there.
	if _, err := scenarios.Get(pauseSweepScenario); err == nil && (f.scenarios == "" || slices.Contains(scenarioIDs, pauseSweepScenario)) {
		for _, v := range values {
			for _, id := range pauseSweepLocks {
				info, err := locks.Get(id)
				if err != nil || !keep(id) {
					continue
				}
				pt := &pausePointCell{lock: id, value: v}
				// Long enough for the pause to end inside the safety
				// phase even when c0 gets to its write late, with a TTL
				// after it for the paused client's write.
				params := scenarios.Params{Clients: pauseSweepClients, Duration: run.PauseStart + pauseSweepSlack + time.Duration(v*float64(info.TTL)) + info.TTL,
					Liveness: pauseSweepLiveness}
				pause := v
				rs := sweep.Request{Spec: run.Spec{Scenario: pauseSweepScenario, Lock: id, Seed: 1, Params: params, Pause: &pause}}
				if _, err := rs.Spec.Build(); err != nil {
					return nil, usageErrorf("pause sweep, lock %s: %s", id, configError(err))
				}
				p.points = append(p.points, pt)
				pointRuns = append(pointRuns, reportRun{rs: rs, point: pt})
			}
		}
	}
	if len(p.cells) == 0 {
		return nil, usageErrorf("nothing to run: no scenario lists any of the chosen locks")
	}
	// Seed-major order: every cell's seed 1, then every cell's seed 2, ...
	// so expensive cells are spread over the run and the workers finish
	// together.
	for seed := uint64(1); seed <= uint64(max(p.seeds, p.pauseSeeds)); seed++ {
		for _, group := range []struct {
			runs  []reportRun
			seeds int
		}{{cellRuns, p.seeds}, {pointRuns, p.pauseSeeds}} {
			if seed > uint64(group.seeds) {
				continue
			}
			for _, r := range group.runs {
				r.rs.Spec.Seed = seed
				p.runs = append(p.runs, r)
			}
		}
	}
	if st, err := os.Lstat(f.out); err == nil && !st.IsDir() {
		return nil, usageErrorf("--out: %q exists and is not a directory", f.out)
	}
	parent := filepath.Dir(filepath.Clean(f.out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, usageErrorf("--out: cannot create %q: %v", parent, unwrapPathError(err))
	}
	staging, err := os.MkdirTemp(parent, "."+filepath.Base(filepath.Clean(f.out))+".tmp-")
	if err == nil {
		err = os.Chmod(staging, 0o755)
	}
	for _, sub := range []string{"img", "timelines"} {
		if err == nil {
			err = os.Mkdir(filepath.Join(staging, sub), 0o755)
		}
	}
	if err != nil {
		if staging != "" {
			os.RemoveAll(staging)
		}
		return nil, usageErrorf("--out: cannot write beside %q: %v", f.out, unwrapPathError(err))
	}
	p.out, p.final = staging, f.out
	return p, nil
}

// reportOwns are the entries of an output folder a report writes; a rerun
// replaces exactly these.
var reportOwns = []string{"index.html", "report.md", "results.json", "img", "timelines"}

// commit moves the complete report from the staging folder into place.
func (p *reportPlan) commit() error {
	if _, err := os.Lstat(p.final); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(p.out, p.final); err != nil {
			return err
		}
		p.committed = true
		return nil
	}
	for _, name := range reportOwns {
		if err := os.RemoveAll(filepath.Join(p.final, name)); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(p.out, name), filepath.Join(p.final, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	p.committed = true
	return os.RemoveAll(p.out)
}

// discard removes the staging folder of a report that was not committed.
func (p *reportPlan) discard() {
	if !p.committed && p.out != "" && p.out != p.final {
		os.RemoveAll(p.out)
	}
}

// scenarioLocks are the locks a scenario is meant for (its file's list),
// or every lock.
func scenarioLocks(s scenarios.Scenario) []string {
	ids := locks.IDs()
	if s.File != nil && len(s.File.Locks) > 0 {
		ids = s.File.Locks
	}
	var out []string
	for _, id := range ids {
		if info, err := locks.Get(id); err == nil && info.Unavailable != "" {
			continue // behind a build tag (the report's Settings say so)
		}
		out = append(out, id)
	}
	return out
}

// expectationOf is what the scenario file expects of the lock (nil: no
// expectation recorded).
func expectationOf(s scenarios.Scenario, lock string) *expectJSON {
	if s.File == nil {
		return nil
	}
	e, ok := s.File.Expect[lock]
	if !ok {
		return nil
	}
	return &expectJSON{Role: e.Role, Kleppmann: e.Kleppmann, Antirez: e.Antirez, Agreed: e.Agreed, Want: e.Want(),
		OutsideAssumptions: e.OutsideAssumptions, Note: strings.Join(strings.Fields(e.Note), " ")}
}

var debateRowRE = regexp.MustCompile(`^S(\d+)$`)

// debateRank orders scenarios by their row in the debate's table (S1,
// S2, ...), the rest after.
func debateRank(s scenarios.Scenario) int {
	if s.File != nil {
		if m := debateRowRE.FindStringSubmatch(s.File.Debate); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	return 1 << 20
}

func debateRow(s scenarios.Scenario) string {
	if s.File != nil {
		return s.File.Debate
	}
	return ""
}

func orderLocks(ids []string) []string {
	out := slices.Clone(ids)
	rank := func(id string) int {
		if i := slices.Index(lockOrder, id); i >= 0 {
			return i
		}
		return len(lockOrder)
	}
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
	return out
}

// main runs the plan and writes the report; it returns the exit code.
func (p *reportPlan) main(b sim.Bubble, stdout, stderr io.Writer) int {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	defer p.discard()
	if p.signals {
		defer watchSignals(ctx, stop, stderr, "finishing the running simulations; no report is written")()
	}
	p.progress = isTerminal(stderr)
	if p.note != "" {
		fmt.Fprintf(stderr, "locksim: %s\n", p.note)
	}
	start := time.Now()
	err := p.run(ctx, b, stderr)
	if err == nil && ctx.Err() != nil {
		fmt.Fprintf(stderr, "locksim: interrupted: no report written\n")
		return exitInterrupted
	}
	var summary bytes.Buffer
	if err == nil {
		err = p.write(&summary)
	}
	if err == nil {
		if cerr := p.commit(); cerr != nil {
			err = &codeError{code: exitInternal, err: fmt.Errorf("moving the report into %q: %v", p.final, cerr)}
		}
	}
	if err == nil {
		stdout.Write(summary.Bytes())
	}
	if err != nil {
		fmt.Fprintf(stderr, "locksim: %s\n", errorLine(err))
		var ce *codeError
		if errors.As(err, &ce) {
			return ce.code
		}
		return exitInternal
	}
	wall := time.Since(start)
	fmt.Fprintf(stderr, "locksim: report: %d runs in %v (%.0f runs/s, %d workers)\n", len(p.runs), wall.Round(time.Millisecond), float64(len(p.runs))/wall.Seconds(), p.workers)
	return exitSafe
}

// run runs every simulation, then reruns each unsafe cell's first unsafe
// seed and draws its timeline.
func (p *reportPlan) run(ctx context.Context, b sim.Bubble, stderr io.Writer) error {
	var unsafe []*reportCell
	total := len(p.runs)
	var bar *progressbar.ProgressBar
	if p.progress {
		bar = newBar(stderr, "report", total, 0)
		defer func() { bar.Exit(); fmt.Fprintln(stderr) }()
	}
	workers := min(p.workers, len(p.runs))
	runners, err := sweep.NewRunners(workers, b, workerCommand(workers), stderr)
	if err != nil {
		return &codeError{code: exitInternal, err: err}
	}
	_, err = sweep.RunOrdered(ctx, workers, 4*workers, len(p.runs), func(w, i int) (sweep.Outcome, error) {
		return runners[w].Run(p.runs[i].rs)
	}, func(i int, o sweep.Outcome) error {
		r := p.runs[i]
		var t *sweep.Tally
		if r.point != nil {
			if o.PauseShort {
				// Not a run of the pause asked for: counted apart.
				r.point.short++
				if bar != nil {
					bar.Add(1)
				}
				return nil
			}
			t = &r.point.Tally
		} else {
			t = &r.cell.Tally
			if o.Verdict == checker.VerdictUnsafe && (!t.HasUnsafe || r.rs.Spec.Seed < t.FirstUnsafe) {
				r.cell.firstUnsafeSHA = o.TraceSHA256
			}
		}
		t.Add(o, r.rs.Spec.Seed)
		if bar != nil {
			bar.Add(1)
		}
		return nil
	})
	if cerr := sweep.CloseRunners(runners); cerr != nil && err == nil {
		err = &codeError{code: exitInternal, err: fmt.Errorf("a worker process failed: %v", cerr)}
	}
	if err != nil || ctx.Err() != nil {
		return err
	}
	for _, c := range p.cells {
		if c.HasUnsafe {
			unsafe = append(unsafe, c)
		}
	}
	// Timelines: rerun each unsafe cell's first unsafe seed (the same
	// trace, checked by its hash) and draw it.
	if bar != nil {
		bar.ChangeMax(total + len(unsafe))
	}
	n := min(p.workers, max(1, len(unsafe)))
	runners, err = sweep.NewRunners(n, b, workerCommand(n), stderr)
	if err != nil {
		return &codeError{code: exitInternal, err: err}
	}
	_, err = sweep.RunOrdered(ctx, len(runners), len(runners), len(unsafe), func(w, i int) (string, error) {
		c := unsafe[i]
		name := filepath.Join("timelines", c.scenario.ID+"--"+c.lock.ID+".png")
		rs := sweep.Request{Spec: c.at(c.FirstUnsafe),
			Timeline: &sweep.TimelineRequest{Path: filepath.Join(p.out, name), Title: fmt.Sprintf("%s × %s, seed %d", c.scenario.ID, c.lock.ID, c.FirstUnsafe),
				Caption: []string{"repro: " + c.repro(c.FirstUnsafe)}}}
		o, err := runners[w].Run(rs)
		if err != nil {
			return "", err
		}
		if o.TraceSHA256 != c.firstUnsafeSHA {
			return "", &codeError{code: exitInternal, err: fmt.Errorf("internal error: %s × %s seed %d did not reproduce (trace %s, first run %s)",
				c.scenario.ID, c.lock.ID, c.FirstUnsafe, o.TraceSHA256, c.firstUnsafeSHA)}
		}
		return filepath.ToSlash(name), nil
	}, func(i int, name string) error {
		unsafe[i].timeline = name
		if bar != nil {
			bar.Add(1)
		}
		return nil
	})
	if cerr := sweep.CloseRunners(runners); cerr != nil && err == nil {
		err = &codeError{code: exitInternal, err: fmt.Errorf("a worker process failed: %v", cerr)}
	}
	return err
}

// ---- output ----

type expectJSON struct {
	Role               string `json:"role,omitempty"`
	Kleppmann          string `json:"kleppmann,omitempty"`
	Antirez            string `json:"antirez,omitempty"`
	Agreed             string `json:"agreed,omitempty"`
	Want               string `json:"want,omitempty"` // the verdict the scenario file expects the simulation to measure
	OutsideAssumptions bool   `json:"outside_assumptions,omitempty"`
	Note               string `json:"note,omitempty"`
}

// cellJSON is one cell of results.json: DESIGN §8a's six fields first.
type cellJSON struct {
	Scenario               string          `json:"scenario"`
	Lock                   string          `json:"lock"`
	Runs                   int             `json:"runs"`
	LeaseOverlapRuns       int             `json:"lease_overlap_runs"`
	ResourceViolationRuns  int             `json:"resource_violation_runs"`
	Verdict                checker.Verdict `json:"verdict"`
	UnsafeRuns             int             `json:"unsafe_runs"`
	LivenessRuns           int             `json:"liveness_runs"`
	UnknownRuns            int             `json:"unknown_runs"`
	OwnershipViolationRuns int             `json:"ownership_violation_runs"`
	StaleSectionRuns       int             `json:"stale_section_runs"`    // a holder acted on a dead lease
	StaleAcceptedRuns      int             `json:"stale_accepted_runs"`   // and the storage accepted its write
	FencedRejectionRuns    int             `json:"fenced_rejection_runs"` // the storage refused an operation
	StarvedRuns            int             `json:"starved_runs"`          // a client made no progress after the heal (fairness)
	UnsafeRate             float64         `json:"unsafe_rate"`
	UnsafeRateCI95         [2]float64      `json:"unsafe_rate_ci95"`
	Seeds                  [2]uint64       `json:"seeds"` // first and last seed run
	DurationNS             int64           `json:"duration_ns"`
	LivenessNS             int64           `json:"liveness_ns"`
	FirstUnsafeSeed        *uint64         `json:"first_unsafe_seed,omitempty"`
	Repro                  string          `json:"repro,omitempty"` // reproduces the first unsafe seed
	ReproTraceSHA256       string          `json:"repro_trace_sha256,omitempty"`
	Timeline               string          `json:"timeline,omitempty"`
	Debate                 string          `json:"debate,omitempty"`
	Expected               *expectJSON     `json:"expected,omitempty"`
	MatchesExpected        *bool           `json:"matches_expected,omitempty"`
}

type pointJSON struct {
	Lock                  string     `json:"lock"`
	PauseTTL              float64    `json:"pause_ttl"`
	Runs                  int        `json:"runs"`
	PauseShortRuns        int        `json:"pause_short_runs"` // left out of runs: c0 did not pause in full in time
	UnsafeRuns            int        `json:"unsafe_runs"`
	LeaseOverlapRuns      int        `json:"lease_overlap_runs"`
	ResourceViolationRuns int        `json:"resource_violation_runs"`
	UnsafeRateCI95        [2]float64 `json:"unsafe_rate_ci95"`
}

type resultsJSON struct {
	Cells      []cellJSON  `json:"cells"`
	PauseSweep []pointJSON `json:"pause_sweep,omitempty"`
	Settings   struct {
		Seeds      int    `json:"seeds_per_cell"`
		PauseSeeds int    `json:"pause_sweep_seeds"`
		Quick      bool   `json:"quick"`
		Locksim    string `json:"locksim"`
	} `json:"settings"`
}

func (c *reportCell) json() cellJSON {
	j := cellJSON{Scenario: c.scenario.ID, Lock: c.lock.ID, Runs: c.Runs, LeaseOverlapRuns: c.Overlap, ResourceViolationRuns: c.Resource,
		Verdict: c.Verdict(), UnsafeRuns: c.Unsafe, LivenessRuns: c.Liveness, UnknownRuns: c.Unknown, OwnershipViolationRuns: c.Ownership,
		StaleSectionRuns: c.Stale, StaleAcceptedRuns: c.StaleAccepted, FencedRejectionRuns: c.Fenced, StarvedRuns: c.Starved,
		Seeds: [2]uint64{1, uint64(c.Runs)}, DurationNS: int64(c.cfg.duration), LivenessNS: int64(c.cfg.liveness),
		Timeline: c.timeline, Debate: debateRow(c.scenario), Expected: c.expect}
	r := charts.Rate{K: c.Unsafe, N: c.Runs}
	j.UnsafeRate = round6(r.P())
	lo, hi := r.Interval()
	j.UnsafeRateCI95 = [2]float64{round6(lo), round6(hi)}
	if c.HasUnsafe {
		s := c.FirstUnsafe
		j.FirstUnsafeSeed = &s
		j.Repro = c.repro(s)
		j.ReproTraceSHA256 = c.firstUnsafeSHA
	}
	if c.expect != nil && c.expect.Want != "" {
		m := checker.Verdict(c.expect.Want) == j.Verdict
		j.MatchesExpected = &m
	}
	return j
}

func round6(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 6, 64), 64)
	return f
}

// pauseShort is how many pause-sweep runs were left out of the rates.
func (p *reportPlan) pauseShort() int {
	n := 0
	for _, pt := range p.points {
		n += pt.short
	}
	return n
}

// write writes results.json, the charts, report.md and index.html.
func (p *reportPlan) write(stdout io.Writer) error {
	var res resultsJSON
	for _, c := range p.cells {
		res.Cells = append(res.Cells, c.json())
	}
	for _, pt := range p.points {
		r := charts.Rate{K: pt.Unsafe, N: pt.Runs}
		lo, hi := r.Interval()
		res.PauseSweep = append(res.PauseSweep, pointJSON{Lock: pt.lock, PauseTTL: pt.value, Runs: pt.Runs, PauseShortRuns: pt.short, UnsafeRuns: pt.Unsafe,
			LeaseOverlapRuns: pt.Overlap, ResourceViolationRuns: pt.Resource, UnsafeRateCI95: [2]float64{round6(lo), round6(hi)}})
	}
	res.Settings.Seeds, res.Settings.PauseSeeds, res.Settings.Quick, res.Settings.Locksim = p.seeds, p.pauseSeeds, p.quick, versionLine()
	if len(p.points) == 0 {
		res.Settings.PauseSeeds = 0
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := run.WriteFileAtomic(filepath.Join(p.out, "results.json"), append(data, '\n')); err != nil {
		return &codeError{code: exitInternal, err: err}
	}
	figs, err := p.charts()
	if err != nil {
		return &codeError{code: exitInternal, err: err}
	}
	md, page := p.documents(res, figs)
	if err := run.WriteFileAtomic(filepath.Join(p.out, "report.md"), md); err != nil {
		return &codeError{code: exitInternal, err: err}
	}
	if err := run.WriteFileAtomic(filepath.Join(p.out, "index.html"), page); err != nil {
		return &codeError{code: exitInternal, err: err}
	}
	unsafe, mismatch := 0, 0
	for _, c := range res.Cells {
		if c.Verdict == checker.VerdictUnsafe {
			unsafe++
		}
		if c.MatchesExpected != nil && !*c.MatchesExpected {
			mismatch++
		}
	}
	fmt.Fprintf(stdout, "report: %s (%d cells, %d unsafe, %d differ from the expectation; %d runs)\n",
		filepath.Join(p.final, "index.html"), len(res.Cells), unsafe, mismatch, len(p.runs))
	return nil
}

// chart is a figure the documents show.
type chart struct {
	title, caption string
	png, svg       string // paths relative to the report directory
	scenario       string // "" for the pause sweep
}

func (p *reportPlan) charts() ([]chart, error) {
	var out []chart
	save := func(fig charts.Figure, name string) (string, string, error) {
		paths, err := charts.SaveAll(fig, filepath.Join(p.out, "img", name))
		if err != nil {
			return "", "", err
		}
		rel := func(s string) string { r, _ := filepath.Rel(p.out, s); return filepath.ToSlash(r) }
		return rel(paths[0]), rel(paths[1]), nil
	}
	if len(p.points) > 0 {
		rc := charts.RateChart{Title: "client pause just before the protected write (no other faults)", XLabel: "pause (× the lock's TTL)", YLabel: "runs judged unsafe"}
		for _, id := range pauseSweepLocks {
			s := charts.RateSeries{Name: id}
			for _, pt := range p.points {
				if pt.lock == id {
					s.Points = append(s.Points, charts.RatePoint{X: pt.value, Rate: charts.Rate{K: pt.Unsafe, N: pt.Runs}})
				}
			}
			if len(s.Points) > 0 {
				rc.Series = append(rc.Series, s)
			}
		}
		fig, err := rc.Figure()
		if err != nil {
			return nil, err
		}
		png, svg, err := save(fig, "pause-sweep")
		if err != nil {
			return nil, err
		}
		out = append(out, chart{title: "Violation rate vs pause length", png: png, svg: svg,
			caption: fmt.Sprintf("Scenario %s with %d clients; client c0 stops just before its first write to the storage at or after %v, once, for the given multiple of its lock's TTL. %d seeds per point, less the runs where c0 did not pause in full inside the safety phase (%d of %d, counted in the table); bars are 95%% Wilson score intervals.",
				pauseSweepScenario, pauseSweepClients, run.PauseStart, p.pauseSeeds, p.pauseShort(), p.pauseSeeds*len(p.points))})
	}
	// One overlap-vs-resource chart per scenario.
	for _, s := range p.scenarioOrder() {
		fc := charts.FencingChart{Title: s.ID + ": lease overlap, resource violation, stale section"}
		for _, c := range p.cells {
			if c.scenario.ID == s.ID {
				fc.Groups = append(fc.Groups, charts.FencingGroup{Name: c.lock.ID, Overlap: charts.Rate{K: c.Overlap, N: c.Runs}, Resource: charts.Rate{K: c.Resource, N: c.Runs},
					Stale: charts.Rate{K: c.Stale, N: c.Runs}})
			}
		}
		fig, err := fc.Figure()
		if err != nil {
			return nil, err
		}
		png, svg, err := save(fig, "overlap-vs-resource-"+s.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, chart{title: s.ID, scenario: s.ID, png: png, svg: svg,
			caption: "Runs in which two clients believed they held the lock at once (orange) beside runs in which the storage lost an update or accepted a stale write (red). Fencing designs may overlap without harm; a lock without fencing turns overlaps into lost updates."})
	}
	return out, nil
}

func (p *reportPlan) scenarioOrder() []scenarios.Scenario {
	var out []scenarios.Scenario
	for _, c := range p.cells {
		if len(out) == 0 || out[len(out)-1].ID != c.scenario.ID {
			out = append(out, c.scenario)
		}
	}
	return out
}

func (p *reportPlan) lockColumns() []string {
	var ids []string
	for _, c := range p.cells {
		if !slices.Contains(ids, c.lock.ID) {
			ids = append(ids, c.lock.ID)
		}
	}
	return orderLocks(ids)
}

func (p *reportPlan) cell(scenario, lock string) *reportCell {
	for _, c := range p.cells {
		if c.scenario.ID == scenario && c.lock.ID == lock {
			return c
		}
	}
	return nil
}

// documents renders report.md and index.html.
func (p *reportPlan) documents(res resultsJSON, figs []chart) (md, page []byte) {
	var m, h bytes.Buffer
	esc := html.EscapeString
	intro := fmt.Sprintf("Every built-in scenario run with the locks it is meant for, %d seeds per cell; "+
		"a cell is unsafe when any seed broke the lock's claim (two clients held it at once, or for fenced designs the storage lost an update or took a stale write). "+
		"Rates carry 95%% Wilson score intervals. Each run is reproducible with its repro command. Generated by %s.", p.seeds, versionLine())
	fmt.Fprintf(&m, "# locksim: the Redlock debate, measured\n\n%s\n\n", intro)
	fmt.Fprintf(&h, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>locksim: the Redlock debate, measured</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",sans-serif;margin:2em auto;max-width:1400px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}h3{margin-top:1.5em}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right}
.unsafe{background:#f8d0d0}.safe{background:#d4efdc}.liveness{background:#fbe3c0}.unknown{background:#e4e4e4}.none{background:#fff;color:#aaa}
.miss{outline:2px solid #c00;outline-offset:-2px}
.wide{overflow-x:auto}.matrix th{font-size:12px}.matrix td{text-align:center;font-size:11px;padding:2px 3px}.matrix .exp{color:#555;font-size:10px}
code{background:#f4f4f4;padding:1px 4px;border-radius:3px;font-size:12px}
img{max-width:100%%;border:1px solid #eee}figure{margin:1em 0}figcaption{color:#555;font-size:13px}
.small{color:#666;font-size:12px}
</style></head><body>
<h1>locksim: the Redlock debate, measured</h1>
<p>%s</p>
`, esc(intro))

	// The matrix.
	cols := p.lockColumns()
	fmt.Fprintf(&m, "## Outcome matrix\n\nMeasured verdict and unsafe runs per cell; in brackets what the scenario file expects (K = Kleppmann, A = antirez, agreed). ✗ marks a cell that differs from the expectation.\n\n")
	fmt.Fprintf(&m, "| scenario | %s |\n|---|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
	fmt.Fprintf(&h, "<h2>Outcome matrix</h2>\n<p>Each cell: the measured verdict, unsafe runs out of runs, and (in grey) what the scenario file expects: K = Kleppmann, A = antirez, = the outcome both accept. A red frame marks a cell that differs from the expectation. Cells link to details.</p>\n")
	fmt.Fprintf(&h, "<div class=\"wide\"><table class=\"matrix\"><tr><th>scenario</th>")
	for _, id := range cols {
		fmt.Fprintf(&h, "<th>%s</th>", esc(id))
	}
	fmt.Fprintf(&h, "</tr>\n")
	for _, s := range p.scenarioOrder() {
		label := s.ID
		if row := debateRow(s); row != "" {
			label += " (" + row + ")"
		}
		fmt.Fprintf(&m, "| %s |", label)
		fmt.Fprintf(&h, "<tr><th><a href=\"#%s\">%s</a></th>", esc(s.ID), esc(label))
		for _, id := range cols {
			c := p.cell(s.ID, id)
			if c == nil {
				fmt.Fprintf(&m, " |")
				fmt.Fprintf(&h, "<td class=\"none\">·</td>")
				continue
			}
			j := c.json()
			miss := j.MatchesExpected != nil && !*j.MatchesExpected
			mark := ""
			if miss {
				mark = " ✗"
			}
			fmt.Fprintf(&m, " %s %d/%d%s%s |", j.Verdict, j.UnsafeRuns, j.Runs, expectShort(c.expect, " [%s]"), mark)
			class := j.Verdict
			if miss {
				class += " miss"
			}
			fmt.Fprintf(&h, "<td class=\"%s\"><a href=\"#%s\">%s</a><br>%d/%d%s</td>", class, esc(anchor(s.ID, id)), esc(string(j.Verdict)), j.UnsafeRuns, j.Runs,
				expectShort(c.expect, "<br><span class=\"exp\">%s</span>"))
		}
		fmt.Fprintf(&m, "\n")
		fmt.Fprintf(&h, "</tr>\n")
	}
	fmt.Fprintf(&h, "</table></div>\n")
	fmt.Fprintf(&m, "\n")

	// Charts that are not per scenario.
	for _, ch := range figs {
		if ch.scenario != "" {
			continue
		}
		fmt.Fprintf(&m, "## %s\n\n![%s](%s)\n\n%s ([SVG](%s))\n\n", ch.title, ch.title, ch.png, ch.caption, ch.svg)
		fmt.Fprintf(&h, "<h2>%s</h2>\n<figure><img src=\"%s\" alt=\"%s\"><figcaption>%s (<a href=\"%s\">SVG</a>)</figcaption></figure>\n",
			esc(ch.title), esc(ch.png), esc(ch.title), esc(ch.caption), esc(ch.svg))
		if len(res.PauseSweep) > 0 {
			fmt.Fprintf(&m, "| pause (× TTL) | %s |\n|---|%s\n", strings.Join(pauseSweepLocks, " | "), strings.Repeat("---|", len(pauseSweepLocks)))
			fmt.Fprintf(&h, "<table><tr><th>pause (× TTL)</th>")
			for _, id := range pauseSweepLocks {
				fmt.Fprintf(&h, "<th>%s</th>", esc(id))
			}
			fmt.Fprintf(&h, "</tr>\n")
			var vals []float64
			for _, pt := range p.points {
				if !slices.Contains(vals, pt.value) {
					vals = append(vals, pt.value)
				}
			}
			for _, v := range vals {
				fmt.Fprintf(&m, "| %s |", run.FormatValue(v))
				fmt.Fprintf(&h, "<tr><td class=\"num\">%s</td>", run.FormatValue(v))
				for _, id := range pauseSweepLocks {
					txt := ""
					for _, pt := range p.points {
						if pt.lock == id && pt.value == v {
							txt = charts.Rate{K: pt.Unsafe, N: pt.Runs}.String()
							if pt.short > 0 {
								txt += fmt.Sprintf(" (%d short)", pt.short)
							}
						}
					}
					fmt.Fprintf(&m, " %s |", txt)
					fmt.Fprintf(&h, "<td class=\"num\">%s</td>", esc(txt))
				}
				fmt.Fprintf(&m, "\n")
				fmt.Fprintf(&h, "</tr>\n")
			}
			fmt.Fprintf(&m, "\n")
			fmt.Fprintf(&h, "</table>\n")
		}
	}

	// Per scenario.
	fmt.Fprintf(&m, "## Scenarios\n\n")
	fmt.Fprintf(&h, "<h2>Scenarios</h2>\n")
	for _, s := range p.scenarioOrder() {
		title := s.ID
		if row := debateRow(s); row != "" {
			title += " (debate " + row + ")"
		}
		fmt.Fprintf(&m, "### %s\n\n%s\n\n", title, oneLine(s.Description))
		fmt.Fprintf(&h, "<h3 id=\"%s\">%s</h3>\n<p>%s</p>\n", esc(s.ID), esc(title), esc(oneLine(s.Description)))
		if s.File != nil && s.File.Source != "" {
			fmt.Fprintf(&m, "Source: %s\n\n", oneLine(s.File.Source))
			fmt.Fprintf(&h, "<p class=\"small\">Source: %s</p>\n", esc(oneLine(s.File.Source)))
		}
		fmt.Fprintf(&m, "| lock | runs | unsafe (95%% CI) | lease overlap runs | resource violation runs | ownership | stale section runs (write accepted) | fenced runs | liveness | starved runs | unknown | verdict | expected | run length |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		fmt.Fprintf(&h, "<table><tr><th>lock</th><th>runs</th><th>unsafe (95%% CI)</th><th>lease overlap runs</th><th>resource violation runs</th><th>ownership</th><th title=\"runs in which a holder read or wrote the resource after its own lease ended (in brackets: and the storage accepted its write)\">stale section runs (write accepted)</th><th title=\"runs in which the storage refused an operation\">fenced runs</th><th>liveness</th><th title=\"runs in which a client made no progress after the heal while others did: a fairness figure\">starved runs</th><th>unknown</th><th>verdict</th><th>expected</th><th>run length</th></tr>\n")
		for _, c := range p.cells {
			if c.scenario.ID != s.ID {
				continue
			}
			j := c.json()
			rate := charts.Rate{K: c.Unsafe, N: c.Runs}.String()
			length := fmt.Sprintf("%v + %v", c.cfg.duration, c.cfg.liveness)
			exp := expectLong(c.expect)
			stale := fmt.Sprintf("%d (%d)", c.Stale, c.StaleAccepted)
			fmt.Fprintf(&m, "| %s | %d | %s | %d | %d | %d | %s | %d | %d | %d | %d | %s | %s | %s |\n", c.lock.ID, c.Runs, rate, c.Overlap, c.Resource, c.Ownership, stale, c.Fenced, c.Liveness, c.Starved, c.Unknown, j.Verdict, exp, length)
			class := j.Verdict
			if j.MatchesExpected != nil && !*j.MatchesExpected {
				class += " miss"
			}
			fmt.Fprintf(&h, "<tr id=\"%s\"><td>%s</td><td class=\"num\">%d</td><td class=\"num\">%s</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"num\">%s</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"%s\">%s</td><td>%s</td><td>%s</td></tr>\n",
				esc(anchor(s.ID, c.lock.ID)), esc(c.lock.ID), c.Runs, esc(rate), c.Overlap, c.Resource, c.Ownership, esc(stale), c.Fenced, c.Liveness, c.Starved, c.Unknown, class, esc(string(j.Verdict)), esc(exp), esc(length))
		}
		fmt.Fprintf(&m, "\n")
		fmt.Fprintf(&h, "</table>\n")
		for _, c := range p.cells {
			if c.scenario.ID == s.ID && c.expect != nil && c.expect.Note != "" {
				fmt.Fprintf(&m, "- %s: %s\n", c.lock.ID, c.expect.Note)
				fmt.Fprintf(&h, "<p class=\"small\"><b>%s</b>: %s</p>\n", esc(c.lock.ID), esc(c.expect.Note))
			}
		}
		fmt.Fprintf(&m, "\n")
		for _, ch := range figs {
			if ch.scenario == s.ID {
				fmt.Fprintf(&m, "![%s](%s)\n\n%s ([SVG](%s))\n\n", ch.title, ch.png, ch.caption, ch.svg)
				fmt.Fprintf(&h, "<figure><img src=\"%s\" alt=\"%s: lease overlap, resource violation and stale section runs\"><figcaption>%s (<a href=\"%s\">SVG</a>)</figcaption></figure>\n",
					esc(ch.png), esc(ch.title), esc(ch.caption), esc(ch.svg))
			}
		}
		for _, c := range p.cells {
			if c.scenario.ID != s.ID || c.timeline == "" {
				continue
			}
			repro := c.repro(c.FirstUnsafe)
			fmt.Fprintf(&m, "#### %s × %s: first unsafe seed %d\n\n`%s`\n\n![timeline](%s)\n\n", s.ID, c.lock.ID, c.FirstUnsafe, repro, filepath.ToSlash(c.timeline))
			fmt.Fprintf(&h, "<h4>%s × %s: first unsafe seed %d</h4>\n<p><code>%s</code></p>\n<figure><img src=\"%s\" alt=\"counterexample timeline\" loading=\"lazy\"></figure>\n",
				esc(s.ID), esc(c.lock.ID), c.FirstUnsafe, esc(repro), esc(filepath.ToSlash(c.timeline)))
		}
	}
	var lengths []string
	for _, id := range slices.Sorted(maps.Keys(reportLengths)) {
		l := reportLengths[id]
		lengths = append(lengths, fmt.Sprintf("%s %v + %v", id, l.Duration, l.Liveness))
	}
	settings := []string{
		fmt.Sprintf("seeds per cell: %d (seeds 1..%d)", p.seeds, p.seeds),
		fmt.Sprintf("run lengths (safety + liveness phase) set by the report: %s; every other scenario runs at its file's lengths (the tables' last column)", strings.Join(lengths, ", ")),
	}
	if len(p.points) > 0 {
		settings = append(settings, fmt.Sprintf("pause sweep: scenario %s with %d clients, %d seeds per point, safety phase %v + %v + the pause + one TTL, liveness phase %v",
			pauseSweepScenario, pauseSweepClients, p.pauseSeeds, run.PauseStart, pauseSweepSlack, pauseSweepLiveness))
	}
	settings = append(settings, versionLine())
	for _, id := range locks.IDs() {
		if info, _ := locks.Get(id); info.Unavailable != "" {
			settings = append(settings, fmt.Sprintf("not run: %s (%s)", id, info.Unavailable))
		}
	}
	fmt.Fprintf(&m, "## Settings\n\n")
	fmt.Fprintf(&h, "<h2>Settings</h2>\n<ul>")
	for _, x := range settings {
		fmt.Fprintf(&m, "- %s\n", x)
		fmt.Fprintf(&h, "<li>%s</li>", esc(x))
	}
	fmt.Fprintf(&h, "</ul>\n</body></html>\n")
	return m.Bytes(), h.Bytes()
}

func anchor(scenario, lock string) string { return scenario + "--" + lock }

// expectShort renders an expectation compactly ("K unsafe, A safe, = safe").
func expectShort(e *expectJSON, format string) string {
	if e == nil {
		return ""
	}
	var parts []string
	for _, x := range []struct{ k, v string }{{"K", e.Kleppmann}, {"A", e.Antirez}, {"=", e.Agreed}} {
		if x.v != "" {
			parts = append(parts, x.k+" "+x.v)
		}
	}
	if e.Want != "" && e.Want != e.Agreed {
		parts = append(parts, "sim "+e.Want)
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf(format, strings.Join(parts, ", "))
}

func expectLong(e *expectJSON) string {
	if e == nil {
		return ""
	}
	var parts []string
	for _, x := range []struct{ k, v string }{{"role", e.Role}, {"Kleppmann", e.Kleppmann}, {"antirez", e.Antirez}, {"agreed", e.Agreed}} {
		if x.v != "" {
			parts = append(parts, x.k+" "+x.v)
		}
	}
	if e.Want != "" && e.Want != e.Agreed {
		parts = append(parts, "simulation expected "+e.Want)
	}
	if e.OutsideAssumptions {
		parts = append(parts, "outside the lock's assumptions")
	}
	return strings.Join(parts, "; ")
}
