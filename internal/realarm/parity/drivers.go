package parity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// The drivers table: lock libraries in other languages
// (docs/DRIVERS.md) on the real arm, scenario by scenario, beside the Go
// set-nx-cad (both arms) whose world every driver runs in, each with its
// expectation written from its code before measuring (its expectations
// file: expectfile.go).

// DriversOptions configure RunDrivers.
type DriversOptions struct {
	Dir       string   // the drivers' folder ("": "drivers")
	World     string   // the lock whose world every arm runs in ("": DriverWorld)
	Scenarios []string // nil: WorldScenarios, then those the arms' expectations add
	Arms      []Arm    // nil: DirArms(Dir, World)
	SimRuns   int      // Go set-nx-cad's seeds in the simulator
	RealRuns  int      // real runs a cell (seeds 1..RealRuns)
	RealJobs  int      // real runs at once
	TTL       time.Duration
	Progress  io.Writer
	// Exe, if set, is a locksim binary: each real run is then its own
	// 'Exe run --backend real --json' process, so one run's crash (a
	// panic in a proxy library) costs that run, not the table.
	Exe string
	// TracesIn, if set, is the table's folder: the trace of every real
	// run that needs explaining goes to TracesIn/traces/ when the table
	// completes (drivers_traces.go).
	TracesIn string
	// run runs one real run, its history into trace (tests replace it;
	// nil: runOne).
	run func(ctx context.Context, opt DriversOptions, job *realredis.Job, trace string) (*childRun, error)
}

// DriversResult is drivers.json.
type DriversResult struct {
	TTLNS   int64          `json:"ttl_ns"`
	World   string         `json:"world"`
	Redis   string         `json:"redis"`
	Note    string         `json:"note"`
	WallNS  int64          `json:"wall_ns"`
	Jobs    int            `json:"real_jobs"`
	Arms    []Arm          `json:"arms"`
	Cells   []DriverCell   `json:"cells"`
	Control []ControlCheck `json:"control"`
}

// DriverCell is one scenario × arm.
type DriverCell struct {
	Scenario     string                  `json:"scenario"`
	Arm          string                  `json:"arm"`
	Expected     checker.Verdict         `json:"expected,omitempty"`
	ExpectedWhy  string                  `json:"expected_why,omitempty"`
	NotSupported string                  `json:"not_supported,omitempty"`
	Runs         int                     `json:"real_runs"`
	Unsafe       int                     `json:"real_unsafe"`
	Verdicts     map[checker.Verdict]int `json:"real_verdicts"`
	Verdict      checker.Verdict         `json:"real_verdict"`
	CI           [2]float64              `json:"real_unsafe_ci95"`
	// Fenced counts the operations the storage refused over the real
	// runs (a fenced world's stale reads and writes).
	Fenced int `json:"fenced_rejections,omitempty"`
	// Untested says why the cell's safe verdict tested nothing (no fault
	// bit in any run, ...), by the rule a report's cells are drawn
	// untested by (run.Untested); "" when it did, or is not safe.
	Untested string `json:"untested,omitempty"`
	// AsExpected: every run's verdict is the expectation's (an unsafe
	// expectation: the cell's verdict is unsafe).
	AsExpected bool                         `json:"as_expected"`
	OtherSeeds map[checker.Verdict][]uint64 `json:"other_seeds,omitempty"`
	// Traces are the kept traces of runs whose verdict is not the
	// expectation or not most runs' (at most MaxKeptTraces, seed order);
	// TracesNotKept counts the others.
	Traces        []KeptTrace `json:"traces,omitempty"`
	TracesNotKept int         `json:"traces_not_kept,omitempty"`
	staged        []string    // the kept traces' staged files, until moved
	FirstUnsafe   *Seed       `json:"first_unsafe,omitempty"`
	Reasons       []string    `json:"reasons,omitempty"`
	Errors        []string    `json:"errors,omitempty"`
	WallNS        int64       `json:"wall_ns"`
	// The harness's largest stall and the unsafe seeds that may be the machine's (stall.go).
	StallMaxMS   float64  `json:"real_stall_max_ms"`
	MachineSeeds []uint64 `json:"machine_seeds,omitempty"`
	// TTLNS is the cell's TTL when it is not the table's (a replicated
	// world runs at ReplicatedTTL at least), and Lock the lock whose world
	// it runs in when not the table's (cellLock).
	TTLNS int64  `json:"ttl_ns,omitempty"`
	Lock  string `json:"lock,omitempty"`
	// The Go arm also runs in the simulator at the real arm's scale.
	SimRuns    int             `json:"sim_runs,omitempty"`
	SimUnsafe  int             `json:"sim_unsafe,omitempty"`
	SimVerdict checker.Verdict `json:"sim_verdict,omitempty"`
	SimCI      [2]float64      `json:"sim_unsafe_ci95,omitempty"`
}

// ControlCheck compares the control with the Go set-nx-cad in one
// scenario: the same verdict and overlapping 95% Wilson intervals.
type ControlCheck struct {
	Scenario string `json:"scenario"`
	Go       string `json:"go_real"`
	GoSim    string `json:"go_sim"`
	Python   string `json:"python"`
	Agree    bool   `json:"agree"`     // with Go's real arm
	AgreeSim bool   `json:"agree_sim"` // with Go's simulator
}

// RunDrivers runs every scenario × arm: the Go arm's simulator seeds in
// bubble b, then every real run through one pool of RealJobs.
func RunDrivers(ctx context.Context, b sim.Bubble, opt DriversOptions) (*DriversResult, error) {
	began := time.Now()
	if opt.Dir == "" {
		opt.Dir = "drivers"
	}
	if opt.World == "" {
		opt.World = DriverWorld
	}
	if !slices.Contains(Worlds, opt.World) {
		return nil, fmt.Errorf("parity --drivers: world %q: want one of %s", opt.World, strings.Join(Worlds, ", "))
	}
	if opt.Arms == nil {
		arms, err := DirArms(opt.Dir, opt.World)
		if err != nil {
			return nil, fmt.Errorf("parity --drivers: %w", err)
		}
		opt.Arms = arms
	}
	if opt.Scenarios == nil {
		opt.Scenarios = rows(opt.World, opt.Arms)
	}
	if opt.TTL == 0 {
		opt.TTL = realredis.DefaultTTL
	}
	if opt.RealRuns < 1 || opt.SimRuns < 1 {
		return nil, fmt.Errorf("parity --drivers: sim runs %d and real runs %d must be at least 1", opt.SimRuns, opt.RealRuns)
	}
	for _, a := range opt.Arms {
		if a.Driver != "" {
			if _, err := realredis.ResolveDriver(filepath.Join(opt.Dir, a.Driver)); err != nil {
				return nil, err
			}
		}
	}
	if opt.run == nil {
		opt.run = runOne
		if err := realredis.CheckBinaries(); err != nil {
			return nil, err
		}
	}
	var stage string
	if opt.TracesIn != "" {
		d, err := os.MkdirTemp("", "locksim-drivers-traces-*")
		if err != nil {
			return nil, fmt.Errorf("parity --drivers: a folder for the runs' traces: %w", err)
		}
		defer os.RemoveAll(d)
		stage = d
	}
	res := &DriversResult{TTLNS: int64(opt.TTL), Redis: realredis.RedisVersion(), Jobs: max(1, opt.RealJobs), Arms: opt.Arms,
		World: opt.World,
		Note:  "every driver runs in " + opt.World + "'s world (its nodes and TTL); the real arm's seed fixes the fault schedule and the workload's choices, not the interleaving: a real run is not replayable"}
	for _, sc := range opt.Scenarios {
		for _, a := range opt.Arms {
			c := DriverCell{Scenario: sc, Arm: a.Name, Verdicts: map[checker.Verdict]int{}}
			if l := cellLock(opt.World, sc); l != opt.World {
				c.Lock = l
			}
			if ttl, _ := (Cell{Scenario: sc, Lock: cellLock(opt.World, sc)}).ttl(opt.TTL); ttl != opt.TTL {
				c.TTLNS = int64(ttl)
			}
			if e, ok := expectationOf(a, sc, opt.World); ok {
				c.Expected, c.ExpectedWhy = e.Verdict, e.Why
			}
			res.Cells = append(res.Cells, c)
		}
	}
	arm := map[string]Arm{}
	for _, a := range opt.Arms {
		arm[a.Name] = a
	}
	// The Go arm in the simulator, at the real arm's scale.
	for i := range res.Cells {
		c := &res.Cells[i]
		if arm[c.Arm].Driver != "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cr := CellResult{Scenario: c.Scenario, Lock: cellLock(opt.World, c.Scenario), TTLNS: int64(c.ttl(opt.TTL)), SimVerdicts: map[checker.Verdict]int{}}
		if err := cr.simArm(b, Options{SimRuns: opt.SimRuns}); err != nil {
			return nil, err
		}
		c.SimRuns, c.SimUnsafe, c.SimVerdict, c.SimCI = cr.SimRuns, cr.SimUnsafe, cr.SimVerdict, cr.SimCI
		if cr.NotSupported != "" {
			c.SimVerdict = VerdictNotSupported
		}
		progress(opt.Progress, "%6.1fs sim  %-24s %-18s %d/%d unsafe (%s)", time.Since(began).Seconds(), c.Scenario, c.Arm, c.SimUnsafe, c.SimRuns, c.SimVerdict)
	}
	// Every real run through one pool; a cell is tallied when its runs end.
	sem := make(chan struct{}, res.Jobs)
	var wg sync.WaitGroup
	var pmu sync.Mutex
	errs := make([]error, len(res.Cells))
	for i := range res.Cells {
		wg.Add(1)
		go func(c *DriverCell, err *error) {
			defer wg.Done()
			*err = c.realRuns(ctx, opt, arm[c.Arm], sem, stage)
			pmu.Lock()
			progress(opt.Progress, "%6.1fs real %-24s %-18s %s", time.Since(began).Seconds(), c.Scenario, c.Arm, c.line())
			pmu.Unlock()
		}(&res.Cells[i], &errs[i])
		time.Sleep(time.Millisecond) // cells queue for the pool in table order
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res.Control = controlChecks(res, opt.Arms)
	if opt.TracesIn != "" {
		if err := res.moveTraces(opt.TracesIn); err != nil {
			return nil, fmt.Errorf("parity --drivers: %w", err)
		}
	}
	res.WallNS = int64(time.Since(began))
	return res, nil
}

// ReplicatedLock is the lock whose world a replicated scenario (a
// primary, replicas, Sentinel) runs in for set-nx-cad's table:
// set-nx-cad against the primary Sentinel names, at its own TTL.
const ReplicatedLock = "primary-replica"

// cellLock is the lock whose world scenario sc runs in for the table of
// world: set-nx-cad's table runs a replicated scenario in
// primary-replica's (set-nx-cad on a Sentinel-managed primary).
func cellLock(world, sc string) string {
	if world == DriverWorld {
		if s, err := scenarios.Resolve(sc); err == nil && s.File != nil && s.File.Topology.Replicated != nil && *s.File.Topology.Replicated {
			return ReplicatedLock
		}
	}
	return world
}

// expectationOf is arm a's expectation in scenario sc: Go's is the
// scenario file's agreed outcome, a driver's its expectations file's.
func expectationOf(a Arm, sc, world string) (Expectation, bool) {
	if a.Driver == "" {
		lock := cellLock(world, sc)
		if e := expected(sc, lock); e != "" {
			return Expectation{Verdict: e, Why: "the scenario file's agreed outcome for " + lock}, true
		}
		return Expectation{}, false
	}
	e, ok := a.expect[sc]
	return e, ok
}

// ttl is the cell's TTL: its own, or the table's.
func (c *DriverCell) ttl(def time.Duration) time.Duration {
	if c.TTLNS > 0 {
		return time.Duration(c.TTLNS)
	}
	return def
}

// build is one real run of arm a in scenario sc, in the world of the
// table's lock world (cellLock).
func build(dir, world string, a Arm, sc string, seed uint64, ttl time.Duration) (*realredis.Job, error) {
	job, err := realredis.Build(run.Spec{Scenario: sc, Lock: cellLock(world, sc), Seed: seed}, ttl)
	if err != nil || a.Driver == "" {
		return job, err
	}
	d, err := realredis.ResolveDriver(filepath.Join(dir, a.Driver))
	if err != nil {
		return nil, err
	}
	if err := job.WithDriver(d); err != nil {
		return nil, err
	}
	return job, nil
}

// realRuns runs the cell's seeds on the real arm, as the pool sem lets it.
func (c *DriverCell) realRuns(ctx context.Context, opt DriversOptions, a Arm, sem chan struct{}, stage string) error {
	began := time.Now()
	defer func() { c.WallNS = int64(time.Since(began)) }()
	ttl := c.ttl(opt.TTL)
	if j, err := realredis.Build(run.Spec{Scenario: c.Scenario, Lock: cellLock(opt.World, c.Scenario), Seed: 1}, ttl); err == nil && j.Config.Topology.Replicated && a.NoSentinel != "" {
		c.NotSupported, c.Verdict = "a Sentinel-managed world: "+a.NoSentinel, VerdictNotSupported
		return nil
	}
	if _, err := build(opt.Dir, opt.World, a, c.Scenario, 1, ttl); err != nil {
		c.NotSupported, c.Verdict = err.Error(), VerdictNotSupported
		return nil
	}
	type out struct {
		seed  uint64
		child *childRun
		err   error
		trace string // its staged history ("": none asked)
	}
	outs := make([]out, opt.RealRuns)
	var wg sync.WaitGroup
	for i := range outs {
		outs[i].seed = uint64(i + 1)
		if stage != "" {
			outs[i].trace = filepath.Join(stage, traceName(opt.World, c.Scenario, c.Arm, outs[i].seed))
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(o *out) {
			defer wg.Done()
			defer func() { <-sem }()
			job, err := build(opt.Dir, opt.World, a, c.Scenario, o.seed, ttl)
			if err != nil {
				o.err = err
				return
			}
			o.child, o.err = opt.run(ctx, opt, job, o.trace)
		}(&outs[i])
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	var tally run.Tally // the judged runs
	errs := 0           // the runs that could not be judged at all
	for _, o := range outs {
		if o.child == nil {
			errs++
			c.Errors = append(c.Errors, fmt.Sprintf("seed %d: %v", o.seed, o.err))
			continue
		}
		v := o.child.Verdict
		if o.child.Err != "" && v != checker.VerdictUnsafe {
			c.Errors = append(c.Errors, fmt.Sprintf("seed %d: %s", o.seed, o.child.Err))
		}
		tally.Add(run.Outcome{Verdict: v, Injected: o.child.Injected, Bit: o.child.Bit, ClockUnreached: o.child.ClockUnreached}, o.seed)
		noteStall(&c.StallMaxMS, &c.MachineSeeds, o.seed, o.child.StallMS, o.child.Machine)
		c.Fenced += o.child.Fenced
		if v == checker.VerdictUnsafe && c.FirstUnsafe == nil {
			c.FirstUnsafe = &Seed{Seed: o.seed, Repro: o.child.Repro}
		}
		if v != checker.VerdictSafe && o.child.Reason != "" {
			c.Reasons = addReason(c.Reasons, []string{o.child.Reason})
		}
	}
	c.Runs, c.Unsafe = tally.Runs, tally.Unsafe
	c.Verdicts, c.Verdict = verdictCounts(&tally, errs), verdictOf(&tally, errs)
	if c.Verdict == checker.VerdictSafe {
		c.Untested = tally.Untested()
	}
	for _, o := range outs {
		if o.child != nil && o.child.Verdict != c.Verdict {
			if c.OtherSeeds == nil {
				c.OtherSeeds = map[checker.Verdict][]uint64{}
			}
			c.OtherSeeds[o.child.Verdict] = append(c.OtherSeeds[o.child.Verdict], o.seed)
		}
	}
	if stage != "" {
		seeds, verdicts, staged := make([]uint64, len(outs)), make([]checker.Verdict, len(outs)), make([]string, len(outs))
		for i, o := range outs {
			seeds[i], staged[i] = o.seed, o.trace
			if o.child != nil {
				verdicts[i] = o.child.Verdict
			}
		}
		c.keepTraces(opt.World, seeds, verdicts, staged)
	}
	lo, hi := stats.Wilson(c.Unsafe, c.Runs)
	c.CI = [2]float64{lo, hi}
	c.AsExpected = c.Expected != "" && c.Verdict == c.Expected && (c.Expected != checker.VerdictSafe || c.Verdicts[checker.VerdictSafe] == c.Runs)
	return nil
}

func (c *DriverCell) line() string {
	if c.NotSupported != "" {
		return "not supported: " + c.NotSupported
	}
	return fmt.Sprintf("%d/%d unsafe (%s), expected %s", c.Unsafe, c.Runs, c.Verdict, orDash(c.Expected))
}

// controlChecks compares the control with Go set-nx-cad scenario by
// scenario.
func controlChecks(r *DriversResult, arms []Arm) []ControlCheck {
	var goName string
	hasControl := false
	for _, a := range arms {
		if a.Driver == "" {
			goName = a.Name
		}
		hasControl = hasControl || a.Driver == control
	}
	if goName == "" || !hasControl {
		return nil
	}
	var out []ControlCheck
	for i := range r.Cells {
		g := r.Cells[i]
		if g.Arm != goName || g.NotSupported != "" {
			continue
		}
		for _, p := range r.Cells {
			if p.Scenario != g.Scenario || p.Arm != control || p.NotSupported != "" || p.Runs == 0 {
				continue
			}
			overlap := func(a, b [2]float64) bool { return a[0] <= b[1] && b[0] <= a[1] }
			out = append(out, ControlCheck{Scenario: g.Scenario,
				Go: rate(g.Unsafe, g.Runs, g.Verdict), GoSim: rate(g.SimUnsafe, g.SimRuns, g.SimVerdict), Python: rate(p.Unsafe, p.Runs, p.Verdict),
				Agree:    g.Runs > 0 && g.Verdict == p.Verdict && overlap(g.CI, p.CI),
				AgreeSim: g.SimRuns > 0 && g.SimVerdict == p.Verdict && overlap(g.SimCI, p.CI)})
		}
	}
	return out
}

// Write writes drivers.json and drivers.txt into dir, each atomically.
func (r *DriversResult) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	jf, tf := DriversFiles(r.World)
	if err := run.WriteFileAtomic(filepath.Join(dir, jf), append(b, '\n')); err != nil {
		return err
	}
	var t bytes.Buffer
	r.WriteTable(&t)
	return run.WriteFileAtomic(filepath.Join(dir, tf), t.Bytes())
}

// ReadDrivers reads dir/drivers.json; (nil, nil) when the folder has none.
func ReadDrivers(dir string) (*DriversResult, error) {
	return readDriversFile(filepath.Join(dir, DriversJSONFile))
}

// ReadAllDrivers reads every world's drivers table in dir (none: nil).
func ReadAllDrivers(dir string) ([]*DriversResult, error) {
	var out []*DriversResult
	for _, w := range Worlds {
		jf, _ := DriversFiles(w)
		r, err := readDriversFile(filepath.Join(dir, jf))
		if err != nil {
			return nil, err
		}
		if r != nil {
			out = append(out, r)
		}
	}
	return out, nil
}

func readDriversFile(path string) (*DriversResult, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r DriversResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Cells) == 0 {
		return nil, fmt.Errorf("%s: no cells", path)
	}
	return &r, nil
}
