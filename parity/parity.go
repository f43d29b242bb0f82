// Package parity runs a fixed set of cells (scenario × lock) in both
// backends, the simulator and real Redis (realredis), on the same scaled
// world, and says where their verdicts agree: the simulator proved right,
// or a real-Redis behaviour it does not model found.
//
// Both arms run the scenario as the real arm plays it: every duration ×
// (TTL / the lock's own TTL) (realredis.Scale), so the sim arm's runs are
// the same worlds the real arm runs, only in virtual time. A cell agrees
// when both arms give the same verdict and the 95% Wilson intervals of
// their unsafe rates overlap.
package parity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/realredis"
	"github.com/locksim/locksim/reports/charts"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// Cell is one scenario × lock.
type Cell struct {
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
}

// Cells is the fixed set (issue 13): the debate's scenarios with the locks
// they are about, and no-faults with every lock of the catalogue.
func Cells() []Cell {
	cs := []Cell{
		{"pause-after-check", "set-nx-cad"}, {"pause-after-check", "redlock"}, {"pause-after-check", "fencing"}, {"pause-after-check", "redsync"},
		{"pause-during-acquire", "set-nx-cad"}, {"pause-during-acquire", "redlock"},
		{"clock-jump", "redlock"},
		{"restart-no-persistence", "redlock"}, {"restart-fsync-always", "redlock"}, {"delayed-restart", "redlock"},
		{"failover", "primary-replica"}, {"failover-wait", "primary-replica"}, {"split-brain", "primary-replica"},
		{"delayed-write", "set-nx-cad"},
		{"foreign-release", "set-nx-del"},
		{"redlock-2-of-5", "redlock"},
	}
	for _, id := range locks.IDs() {
		if info, _ := locks.Get(id); info.Topology == locks.Consensus {
			continue // the real arm has no coordination service
		}
		cs = append(cs, Cell{"no-faults", id})
	}
	return cs
}

// QuickCells is the slice CI runs (a few cells, a few runs).
func QuickCells() []Cell {
	return []Cell{{"pause-after-check", "set-nx-cad"}, {"pause-after-check", "fencing"}, {"restart-no-persistence", "redlock"}, {"no-faults", "set-nx-cad"}}
}

// Options configure a parity run.
type Options struct {
	Cells    []Cell        // nil: Cells()
	SimRuns  int           // seeds 1..SimRuns in the simulator
	RealRuns int           // seeds 1..RealRuns against real Redis
	TTL      time.Duration // the lease both arms run with (0: realredis.DefaultTTL)
	// RealJobs is how many real runs go at once (each has its own
	// processes and ports; a run mostly waits, in real time).
	RealJobs int
	// Progress, if set, gets one line per finished cell and arm.
	Progress io.Writer
}

// Full and Quick are the CLI's presets.
var (
	Full  = Options{SimRuns: 200, RealRuns: 20, RealJobs: 3}
	Quick = Options{SimRuns: 40, RealRuns: 4, RealJobs: 4}
)

// Result is parity.json.
type Result struct {
	TTLNS      int64        `json:"ttl_ns"`
	Redis      string       `json:"redis"`
	NodeClocks string       `json:"node_clocks"`
	Note       string       `json:"note"`
	WallNS     int64        `json:"wall_ns"`
	Cells      []CellResult `json:"cells"`
}

// CellResult is one cell in both arms.
type CellResult struct {
	Scenario    string `json:"scenario"`
	Lock        string `json:"lock"`
	SimRuns     int    `json:"sim_runs"`
	SimUnsafe   int    `json:"sim_unsafe"`
	RealRuns    int    `json:"real_runs"`
	RealUnsafe  int    `json:"real_unsafe"`
	SimVerdict  string `json:"sim_verdict"`
	RealVerdict string `json:"real_verdict"`
	Agree       bool   `json:"agree"`
	// Expected is the debate's agreed outcome (the scenario file's
	// expect:), "" when it states none for the lock.
	Expected string `json:"expected,omitempty"`
	// Verdict counts per arm (safe, unsafe, liveness, unknown, error).
	SimVerdicts  map[string]int `json:"sim_verdicts"`
	RealVerdicts map[string]int `json:"real_verdicts"`
	SimCI        [2]float64     `json:"sim_unsafe_ci95"`
	RealCI       [2]float64     `json:"real_unsafe_ci95"`
	// NotSupported says why the real arm cannot run the cell yet (its
	// real_verdict is then "not-supported", never a guess).
	NotSupported string `json:"not_supported,omitempty"`
	// FirstRealUnsafe is the first real seed that was unsafe, and its
	// repro (which runs the real arm again: not a replay).
	FirstRealUnsafe *Seed `json:"first_real_unsafe,omitempty"`
	FirstSimUnsafe  *Seed `json:"first_sim_unsafe,omitempty"`
	// RealReasons are the first reasons of the real arm's non-safe runs
	// (up to 3 distinct), for reading a disagreement.
	RealReasons []string `json:"real_reasons,omitempty"`
	SimReasons  []string `json:"sim_reasons,omitempty"`
	RealWallNS  int64    `json:"real_wall_ns"`
	// RealReadRTTMaxNS is the longest storage read round trip of the
	// cell's real runs (the machine's latency tail; the simulator's
	// model has none).
	RealReadRTTMaxNS int64 `json:"real_read_rtt_max_ns"`
	// RealOtherSeeds are the real seeds whose verdict is not the cell's
	// (the runs to open when the rates differ), by verdict.
	RealOtherSeeds map[string][]uint64 `json:"real_other_seeds,omitempty"`
	// Errors are real runs that could not be judged at all.
	Errors []string `json:"errors,omitempty"`
}

// Seed names one run.
type Seed struct {
	Seed  uint64 `json:"seed"`
	Repro string `json:"repro"`
}

// verdictOf is a cell's verdict from its runs' verdicts: unsafe if any run
// was, else liveness if any run was, else unknown if any, else safe.
func verdictOf(counts map[string]int) string {
	for _, v := range []string{"unsafe", "liveness", "unknown", "error"} {
		if counts[v] > 0 {
			return v
		}
	}
	if counts["safe"] > 0 {
		return "safe"
	}
	return "none"
}

// Run runs every cell: the sim arm in bubble b (one run at a time), then
// the real arm. A cancelled ctx stops it (what ran is discarded).
func Run(ctx context.Context, b sim.Bubble, opt Options) (*Result, error) {
	began := time.Now()
	cells := opt.Cells
	if cells == nil {
		cells = Cells()
	}
	if opt.TTL == 0 {
		opt.TTL = realredis.DefaultTTL
	}
	if opt.SimRuns < 1 || opt.RealRuns < 1 {
		return nil, fmt.Errorf("parity: sim runs %d and real runs %d must be at least 1", opt.SimRuns, opt.RealRuns)
	}
	if err := realredis.CheckBinaries(); err != nil {
		return nil, err
	}
	res := &Result{TTLNS: int64(opt.TTL), Redis: realredis.RedisVersion(),
		Note: "both arms run each scenario scaled so that the lock's TTL is ttl_ns (realredis.Scale); real runs are not replayable"}
	for _, c := range cells {
		res.Cells = append(res.Cells, CellResult{Scenario: c.Scenario, Lock: c.Lock, SimVerdicts: map[string]int{}, RealVerdicts: map[string]int{}})
	}
	for i := range res.Cells {
		cr := &res.Cells[i]
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := cr.simArm(b, opt); err != nil {
			return nil, err
		}
		cr.Expected = expected(cr.Scenario, cr.Lock)
		progress(opt.Progress, "%6.1fs sim  %-24s %-16s %d/%d unsafe (%s)", time.Since(began).Seconds(), cr.Scenario, cr.Lock, cr.SimUnsafe, cr.SimRuns, cr.SimVerdict)
	}
	var notes sync.Map
	for i := range res.Cells {
		cr := &res.Cells[i]
		if err := cr.realArm(ctx, opt, &notes); err != nil {
			return nil, err
		}
		cr.finish()
		progress(opt.Progress, "%6.1fs real %-24s %-16s %s", time.Since(began).Seconds(), cr.Scenario, cr.Lock, cr.realLine())
	}
	notes.Range(func(k, _ any) bool {
		res.NodeClocks = k.(string)
		return false
	})
	res.WallNS = int64(time.Since(began))
	return res, nil
}

func progress(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, "parity: "+format+"\n", a...)
	}
}

func expected(scenario, lock string) string {
	sc, err := scenarios.Resolve(scenario)
	if err != nil || sc.File == nil {
		return ""
	}
	e, ok := sc.File.Expect[lock]
	if !ok {
		return ""
	}
	return e.Agreed
}

// simArm runs the cell's seeds in the simulator, on the scaled world.
func (cr *CellResult) simArm(b sim.Bubble, opt Options) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parity: internal error: panic in the sim arm of %s/%s: %v\n%s", cr.Scenario, cr.Lock, r, debug.Stack())
		}
	}()
	for seed := uint64(1); seed <= uint64(opt.SimRuns); seed++ {
		spec := run.Spec{Scenario: cr.Scenario, Lock: cr.Lock, Seed: seed}
		job, err := realredis.BuildScaled(spec, opt.TTL)
		if err != nil {
			var ie *run.InputError
			if errors.As(err, &ie) {
				cr.SimVerdict, cr.RealVerdict = "not-supported", "not-supported"
				cr.NotSupported = "not at the real arm's scale: " + err.Error()
				return nil
			}
			return err
		}
		jd, err := job.Job.Run(b)
		if err != nil {
			return fmt.Errorf("parity: sim %s/%s seed %d: %w", cr.Scenario, cr.Lock, seed, err)
		}
		v := string(jd.Verdict())
		cr.SimRuns++
		cr.SimVerdicts[v]++
		if v == string(checker.VerdictUnsafe) {
			cr.SimUnsafe++
			if cr.FirstSimUnsafe == nil {
				cr.FirstSimUnsafe = &Seed{Seed: seed, Repro: spec.Repro() + " (the simulator at the real arm's scale: realredis.BuildScaled, TTL " + job.Lock.TTL.String() + ")"}
			}
		}
		if v != string(checker.VerdictSafe) {
			cr.SimReasons = addReason(cr.SimReasons, jd.Check.Reasons)
		}
	}
	cr.SimVerdict = verdictOf(cr.SimVerdicts)
	lo, hi := charts.Wilson(cr.SimUnsafe, cr.SimRuns)
	cr.SimCI = [2]float64{lo, hi}
	return nil
}

func addReason(rs []string, reasons []string) []string {
	if len(rs) >= 3 || len(reasons) == 0 {
		return rs
	}
	r := reasons[0]
	if len(r) > 300 {
		r = r[:300] + "…"
	}
	if slices.Contains(rs, r) {
		return rs
	}
	return append(rs, r)
}

// realArm runs the cell's seeds against real Redis, RealJobs at a time.
func (cr *CellResult) realArm(ctx context.Context, opt Options, notes *sync.Map) error {
	if cr.NotSupported != "" {
		return nil
	}
	began := time.Now()
	defer func() { cr.RealWallNS = int64(time.Since(began)) }()
	if _, err := realredis.Build(run.Spec{Scenario: cr.Scenario, Lock: cr.Lock, Seed: 1}, opt.TTL); err != nil {
		cr.NotSupported = err.Error()
		cr.RealVerdict = "not-supported"
		return nil
	}
	type out struct {
		seed uint64
		jd   *realredis.Judged
		err  error
	}
	jobs := max(1, opt.RealJobs)
	outs := make([]out, opt.RealRuns)
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i := range outs {
		seed := uint64(i + 1)
		outs[i].seed = seed
		wg.Add(1)
		sem <- struct{}{}
		go func(o *out) {
			defer wg.Done()
			defer func() { <-sem }()
			job, err := realredis.Build(run.Spec{Scenario: cr.Scenario, Lock: cr.Lock, Seed: o.seed}, opt.TTL)
			if err != nil {
				o.err = err
				return
			}
			o.jd, o.err = job.RunAndJudge(ctx, "")
		}(&outs[i])
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, o := range outs {
		if o.jd == nil {
			cr.RealVerdicts["error"]++
			cr.Errors = append(cr.Errors, fmt.Sprintf("seed %d: %v", o.seed, o.err))
			continue
		}
		if o.jd.Info != nil && o.jd.Info.NodeClocks != "" {
			notes.Store(o.jd.Info.NodeClocks, true)
		}
		if o.jd.Info != nil {
			cr.RealReadRTTMaxNS = max(cr.RealReadRTTMaxNS, int64(o.jd.Info.ReadRTT.Max))
		}
		v := string(o.jd.Verdict())
		if o.jd.Err != nil && v != string(checker.VerdictUnsafe) {
			cr.Errors = append(cr.Errors, fmt.Sprintf("seed %d: %v", o.seed, o.jd.Err))
		}
		cr.RealRuns++
		cr.RealVerdicts[v]++
		if v == string(checker.VerdictUnsafe) {
			cr.RealUnsafe++
			if cr.FirstRealUnsafe == nil {
				cr.FirstRealUnsafe = &Seed{Seed: o.seed, Repro: o.jd.Real.Repro()}
			}
		}
		if v != string(checker.VerdictSafe) {
			cr.RealReasons = addReason(cr.RealReasons, o.jd.Check.Reasons)
		}
	}
	cr.RealVerdict = verdictOf(cr.RealVerdicts)
	for _, o := range outs {
		if o.jd != nil && string(o.jd.Verdict()) != cr.RealVerdict {
			if cr.RealOtherSeeds == nil {
				cr.RealOtherSeeds = map[string][]uint64{}
			}
			v := string(o.jd.Verdict())
			cr.RealOtherSeeds[v] = append(cr.RealOtherSeeds[v], o.seed)
		}
	}
	lo, hi := charts.Wilson(cr.RealUnsafe, cr.RealRuns)
	cr.RealCI = [2]float64{lo, hi}
	return nil
}

// finish decides agreement: the same verdict and overlapping intervals.
func (cr *CellResult) finish() {
	if cr.NotSupported != "" || cr.RealRuns == 0 || cr.SimRuns == 0 {
		cr.Agree = false
		return
	}
	overlap := cr.SimCI[0] <= cr.RealCI[1] && cr.RealCI[0] <= cr.SimCI[1]
	cr.Agree = cr.SimVerdict == cr.RealVerdict && overlap
}

func (cr *CellResult) realLine() string {
	if cr.NotSupported != "" {
		return "not yet supported: " + cr.NotSupported
	}
	return fmt.Sprintf("%d/%d unsafe (%s), agree %v", cr.RealUnsafe, cr.RealRuns, cr.RealVerdict, cr.Agree)
}

// Disagreements names the cells the real arm ran, whose debate outcome
// is agreed, where the arms disagree.
func (r *Result) Disagreements() []string {
	var out []string
	for _, c := range r.Cells {
		if c.NotSupported == "" && c.Expected != "" && c.RealRuns > 0 && !c.Agree {
			out = append(out, c.Scenario+"/"+c.Lock)
		}
	}
	return out
}

// WriteTable writes the table people read.
func (r *Result) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-24s %-16s %-9s %-22s %-22s %-6s %s\n", "scenario", "lock", "expected", "sim unsafe", "real unsafe", "agree", "note")
	var unsupported []string
	for _, c := range r.Cells {
		if c.NotSupported != "" {
			unsupported = append(unsupported, fmt.Sprintf("  %s × %s: %s", c.Scenario, c.Lock, c.NotSupported))
			fmt.Fprintf(w, "%-24s %-16s %-9s %-22s %-22s %-6s %s\n", c.Scenario, c.Lock, orDash(c.Expected), rate(c.SimUnsafe, c.SimRuns, c.SimVerdict), "not yet supported", "-", "")
			continue
		}
		note := ""
		if !c.Agree {
			note = "DISAGREE"
			if c.SimVerdict != c.RealVerdict {
				note += fmt.Sprintf(" (sim %s, real %s)", c.SimVerdict, c.RealVerdict)
			} else {
				note += " (rates' intervals do not overlap)"
			}
		}
		fmt.Fprintf(w, "%-24s %-16s %-9s %-22s %-22s %-6v %s\n", c.Scenario, c.Lock, orDash(c.Expected), rate(c.SimUnsafe, c.SimRuns, c.SimVerdict), rate(c.RealUnsafe, c.RealRuns, c.RealVerdict), c.Agree, note)
	}
	if len(unsupported) > 0 {
		sort.Strings(unsupported)
		fmt.Fprintf(w, "\nnot yet supported by the real arm (%d cells):\n%s\n", len(unsupported), strings.Join(unsupported, "\n"))
	}
	fmt.Fprintf(w, "\nTTL %v in both arms (each scenario scaled to it); %s; node clocks: %s\n", time.Duration(r.TTLNS), orDash(r.Redis), orDash(r.NodeClocks))
}

func rate(k, n int, verdict string) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d %s", k, n, verdict)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
