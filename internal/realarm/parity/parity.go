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
	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// Cell is one scenario × lock.
type Cell struct {
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	// TTL, if set, is the lease this cell runs with in both arms instead
	// of the table's (Options.TTL); a cell of a replicated world runs
	// with at least ReplicatedTTL whatever it says (Cell.ttl).
	TTL time.Duration `json:"ttl_ns,omitempty"`
}

// ReplicatedTTL is the least TTL a cell of a replicated world (primary,
// replicas, three real Sentinels) runs with. A real Sentinel failover
// takes down-after plus 0.3 to 1.3 s of real time that scaling cannot
// shrink (its timer ticks 10 to 19 times a second; during a failover it
// polls the promoted replica's role once a second): measured 1.8 s from
// the kill to +switch-master with down-after 500 ms. At 3 s, the
// primary-replica lock's own TTL, the scenarios run unscaled (×1), so
// the real arm is the deployment the scenario describes, in real time.
const ReplicatedTTL = 3 * time.Second

// ttl is the lease cell c runs with when the table's is def, and whether
// its world is replicated (its real runs capped by ReplicatedRuns). A
// Redis Cluster's shards are promoted by the harness's CLUSTER FAILOVER
// TAKEOVER (realredis/cluster.go), in milliseconds, not by Sentinel: it
// keeps its TTL.
func (c Cell) ttl(def time.Duration) (time.Duration, bool) {
	t := def
	if c.TTL > 0 {
		t = c.TTL
	}
	if j, err := realredis.BuildScaled(run.Spec{Scenario: c.Scenario, Lock: c.Lock, Seed: 1}, t); err == nil && j.Config.Topology.Replicated {
		if j.Config.Topology.Shards > 0 {
			return t, true
		}
		return max(t, ReplicatedTTL), true
	}
	return t, false
}

// Cells is the fixed set: the debate's scenarios with the locks
// they are about, and no-faults with every lock of the catalogue.
func Cells() []Cell {
	cs := []Cell{
		{Scenario: "pause-after-check", Lock: "set-nx-cad"}, {Scenario: "pause-after-check", Lock: "redlock"}, {Scenario: "pause-after-check", Lock: "fencing"}, {Scenario: "pause-after-check", Lock: "redsync"},
		{Scenario: "pause-during-acquire", Lock: "set-nx-cad"}, {Scenario: "pause-during-acquire", Lock: "redlock"},
		{Scenario: "clock-jump", Lock: "redlock"},
		{Scenario: "restart-no-persistence", Lock: "redlock"}, {Scenario: "restart-fsync-always", Lock: "redlock"}, {Scenario: "delayed-restart", Lock: "redlock"},
		{Scenario: "failover", Lock: "primary-replica"}, {Scenario: "failover-wait", Lock: "primary-replica"}, {Scenario: "split-brain", Lock: "primary-replica"},
		{Scenario: "delayed-write", Lock: "set-nx-cad"},
		{Scenario: "foreign-release", Lock: "set-nx-del"},
		{Scenario: "redlock-2-of-5", Lock: "redlock"},
	}
	cs = append(cs, ClusterCells()...)
	cs = append(cs, ConsensusCells()...)
	for _, id := range catalogue.IDs() {
		if info, _ := catalogue.Get(id); info.Topology == locks.Consensus {
			continue // in ConsensusCells
		}
		cs = append(cs, Cell{Scenario: "no-faults", Lock: id})
	}
	return cs
}

// ClusterCells are the Redis Cluster rows (realredis/cluster.go): the two
// cluster scenarios, and the debate's pause, failover and delayed write
// on cluster-set-nx-cad's cluster of three shards (no-faults is among the
// catalogue's rows). failover-cluster runs at 2 s: a restarted old primary
// serves its slots until the simulator's failover agent demotes it at its
// next tick (sim/sentinel.go: 100 ms, not scaled), real Redis Cluster's
// gossip in tens of milliseconds, and at 500 ms that window alone makes
// the arms' rates differ (docs/PARITY.md).
func ClusterCells() []Cell {
	l := "cluster-set-nx-cad"
	return []Cell{
		{Scenario: "pause-after-check-cluster", Lock: l}, {Scenario: "failover-cluster", Lock: l, TTL: 2 * time.Second},
		{Scenario: "pause-after-check", Lock: l}, {Scenario: "failover", Lock: l}, {Scenario: "delayed-write", Lock: l},
	}
}

// ConsensusCells are the consensus rows: the simulated zk
// store against three real ZooKeeper servers, at realredis.ConsensusTTL
// (a session of 1 s: 500 ms is within reach of the JVMs' own hiccups).
func ConsensusCells() []Cell {
	t := realredis.ConsensusTTL
	return []Cell{
		{Scenario: "pause-after-check", Lock: "zk-lock", TTL: t}, {Scenario: "pause-after-check", Lock: "zk-fencing", TTL: t},
		{Scenario: "member-crashes", Lock: "zk-lock", TTL: t}, {Scenario: "member-crashes", Lock: "zk-fencing", TTL: t},
		{Scenario: "token-regression", Lock: "zk-fencing", TTL: t},
		{Scenario: "leader-partition", Lock: "zk-lock", TTL: t}, {Scenario: "leader-partition", Lock: "zk-fencing", TTL: t},
		{Scenario: "no-faults", Lock: "zk-lock", TTL: t}, {Scenario: "no-faults", Lock: "zk-fencing", TTL: t},
	}
}

// QuickCells is the slice CI runs (a few cells, a few runs).
func QuickCells() []Cell {
	return []Cell{{Scenario: "pause-after-check", Lock: "set-nx-cad"}, {Scenario: "pause-after-check", Lock: "fencing"}, {Scenario: "restart-no-persistence", Lock: "redlock"}, {Scenario: "no-faults", Lock: "set-nx-cad"}}
}

// Options configure a parity run.
type Options struct {
	Cells    []Cell        // nil: Cells()
	SimRuns  int           // seeds 1..SimRuns in the simulator
	RealRuns int           // seeds 1..RealRuns against real Redis
	TTL      time.Duration // the lease both arms run with (0: realredis.DefaultTTL)
	// ReplicatedRuns, if set, caps the real runs of a cell of a
	// replicated world (each takes over a minute at ReplicatedTTL).
	ReplicatedRuns int
	// RealJobs is how many real runs go at once, across cells (each has
	// its own processes and ports; a run mostly waits, in real time).
	RealJobs int
	// Progress, if set, gets one line per finished cell and arm.
	Progress io.Writer
}

// Full and Quick are the CLI's presets.
var (
	Full  = Options{SimRuns: 200, RealRuns: 20, ReplicatedRuns: 8, RealJobs: 3}
	Quick = Options{SimRuns: 40, RealRuns: 4, ReplicatedRuns: 2, RealJobs: 4}
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
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	// TTLNS is the lease the cell ran with in both arms (the table's
	// ttl_ns, or more: Cell.ttl).
	TTLNS       int64           `json:"ttl_ns"`
	SimRuns     int             `json:"sim_runs"`
	SimUnsafe   int             `json:"sim_unsafe"`
	RealRuns    int             `json:"real_runs"`
	RealUnsafe  int             `json:"real_unsafe"`
	SimVerdict  checker.Verdict `json:"sim_verdict"`
	RealVerdict checker.Verdict `json:"real_verdict"`
	Agree       bool            `json:"agree"`
	// Expected is the debate's agreed outcome (the scenario file's
	// expect:), "" when it states none for the lock.
	Expected checker.Verdict `json:"expected,omitempty"`
	// Verdict counts per arm (safe, unsafe, liveness, unknown, error).
	SimVerdicts  map[checker.Verdict]int `json:"sim_verdicts"`
	RealVerdicts map[checker.Verdict]int `json:"real_verdicts"`
	SimCI        [2]float64              `json:"sim_unsafe_ci95"`
	RealCI       [2]float64              `json:"real_unsafe_ci95"`
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
	// RealStallMaxMS is the largest stall of the harness in the cell's
	// real runs (realredis.Stalls); MachineSeeds are its unsafe seeds
	// whose verdict may be the machine's (realredis.MachineRule).
	RealStallMaxMS float64  `json:"real_stall_max_ms"`
	MachineSeeds   []uint64 `json:"machine_seeds,omitempty"`
	// RealOtherSeeds are the real seeds whose verdict is not the cell's
	// (the runs to open when the rates differ), by verdict.
	RealOtherSeeds map[checker.Verdict][]uint64 `json:"real_other_seeds,omitempty"`
	// Errors are real runs that could not be judged at all.
	Errors []string `json:"errors,omitempty"`
	// RealUntested says why the real arm's safe verdict tested nothing
	// (no fault bit in any run, ...), by the rule a report's cells are
	// drawn untested by (run.Untested); "" when it did, or is not safe.
	RealUntested string `json:"real_untested,omitempty"`

	replicated bool // a replicated world (Options.ReplicatedRuns)
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
	// A cell of a name that does not exist is a mistake, not a cell the
	// real arm cannot run ("not at the real arm's scale", which a gate
	// on disagreements passes).
	for _, c := range cells {
		if _, err := scenarios.Get(c.Scenario); err != nil {
			return nil, fmt.Errorf("parity: cell %s/%s: %v", c.Scenario, c.Lock, err)
		}
		if _, err := catalogue.Get(c.Lock); err != nil {
			return nil, fmt.Errorf("parity: cell %s/%s: %v", c.Scenario, c.Lock, err)
		}
	}
	if err := realredis.CheckBinaries(); err != nil {
		return nil, err
	}
	res := &Result{TTLNS: int64(opt.TTL), Redis: realredis.RedisVersion(),
		Note: "both arms run each scenario scaled so that the lock's TTL is ttl_ns (realredis.Scale); real runs are not replayable"}
	for _, c := range cells {
		ttl, repl := c.ttl(opt.TTL)
		res.Cells = append(res.Cells, CellResult{Scenario: c.Scenario, Lock: c.Lock, TTLNS: int64(ttl), replicated: repl, SimVerdicts: map[checker.Verdict]int{}, RealVerdicts: map[checker.Verdict]int{}})
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
	// The real arm: every cell's runs share one pool of RealJobs, so a
	// cell of long runs (a replicated world at ReplicatedTTL) overlaps
	// the short ones.
	var notes sync.Map
	var pmu sync.Mutex
	sem := make(chan struct{}, max(1, opt.RealJobs))
	errs := make([]error, len(res.Cells))
	var wg sync.WaitGroup
	for i := range res.Cells {
		wg.Add(1)
		go func(cr *CellResult, err *error) {
			defer wg.Done()
			if *err = cr.realArm(ctx, opt, &notes, sem); *err != nil {
				return
			}
			cr.finish()
			pmu.Lock()
			progress(opt.Progress, "%6.1fs real %-24s %-16s %s", time.Since(began).Seconds(), cr.Scenario, cr.Lock, cr.realLine())
			pmu.Unlock()
		}(&res.Cells[i], &errs[i])
		time.Sleep(time.Millisecond) // cells queue for the pool in table order
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
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

// expected is the scenario file's agreed outcome for the lock ("": none),
// a verdict the scenarios package has validated.
func expected(scenario, lock string) checker.Verdict {
	sc, err := scenarios.Resolve(scenario)
	if err != nil || sc.File == nil {
		return ""
	}
	e, ok := sc.File.Expect[lock]
	if !ok {
		return ""
	}
	return checker.Verdict(e.Agreed)
}

// simArm runs the cell's seeds in the simulator, on the scaled world.
func (cr *CellResult) simArm(b sim.Bubble, opt Options) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parity: internal error: panic in the sim arm of %s/%s: %v\n%s", cr.Scenario, cr.Lock, r, debug.Stack())
		}
	}()
	var tally run.Tally
	// The counts so far, also when a seed fails; the interval below is
	// computed from them after the last seed, so they are set before it.
	defer func() { cr.SimRuns, cr.SimUnsafe = tally.Runs, tally.Unsafe }()
	for seed := uint64(1); seed <= uint64(opt.SimRuns); seed++ {
		spec := run.Spec{Scenario: cr.Scenario, Lock: cr.Lock, Seed: seed}
		job, err := realredis.BuildScaled(spec, time.Duration(cr.TTLNS))
		if err != nil {
			var ie *run.InputError
			if errors.As(err, &ie) {
				cr.SimVerdict, cr.RealVerdict = VerdictNotSupported, VerdictNotSupported
				cr.NotSupported = "not at the real arm's scale: " + err.Error()
				return nil
			}
			return err
		}
		jd, err := job.Job.Run(b)
		if err != nil {
			return fmt.Errorf("parity: sim %s/%s seed %d: %w", cr.Scenario, cr.Lock, seed, err)
		}
		o := jd.Outcome()
		tally.Add(o, seed)
		if o.Verdict == checker.VerdictUnsafe && cr.FirstSimUnsafe == nil {
			cr.FirstSimUnsafe = &Seed{Seed: seed, Repro: spec.Repro() + " (the simulator at the real arm's scale: realredis.BuildScaled, TTL " + job.Lock.TTL.String() + ")"}
		}
		if o.Verdict != checker.VerdictSafe {
			cr.SimReasons = addReason(cr.SimReasons, jd.Check.Reasons)
		}
	}
	cr.SimRuns, cr.SimUnsafe = tally.Runs, tally.Unsafe
	cr.SimVerdicts, cr.SimVerdict = verdictCounts(&tally, 0), verdictOf(&tally, 0)
	lo, hi := stats.Wilson(cr.SimUnsafe, cr.SimRuns)
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

// realArm runs the cell's seeds against real Redis, as the pool sem
// lets it.
func (cr *CellResult) realArm(ctx context.Context, opt Options, notes *sync.Map, sem chan struct{}) error {
	if cr.NotSupported != "" {
		return nil
	}
	began := time.Now()
	defer func() { cr.RealWallNS = int64(time.Since(began)) }()
	ttl := time.Duration(cr.TTLNS)
	if _, err := realredis.Build(run.Spec{Scenario: cr.Scenario, Lock: cr.Lock, Seed: 1}, ttl); err != nil {
		cr.NotSupported = err.Error()
		cr.RealVerdict = VerdictNotSupported
		return nil
	}
	type out struct {
		seed uint64
		jd   *realredis.Judged
		err  error
	}
	runs := opt.RealRuns
	if cr.replicated && opt.ReplicatedRuns > 0 {
		runs = min(runs, opt.ReplicatedRuns)
	}
	outs := make([]out, runs)
	var wg sync.WaitGroup
	for i := range outs {
		seed := uint64(i + 1)
		outs[i].seed = seed
		wg.Add(1)
		sem <- struct{}{}
		go func(o *out) {
			defer wg.Done()
			defer func() { <-sem }()
			job, err := realredis.Build(run.Spec{Scenario: cr.Scenario, Lock: cr.Lock, Seed: o.seed}, ttl)
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
	var tally run.Tally // the judged runs
	errs := 0           // the runs that could not be judged at all
	for _, o := range outs {
		if o.jd == nil {
			errs++
			cr.Errors = append(cr.Errors, fmt.Sprintf("seed %d: %v", o.seed, o.err))
			continue
		}
		if o.jd.Info != nil && o.jd.Info.NodeClocks != "" {
			notes.Store(o.jd.Info.NodeClocks, true)
		}
		if o.jd.Info != nil {
			cr.RealReadRTTMaxNS = max(cr.RealReadRTTMaxNS, int64(o.jd.Info.ReadRTT.Max))
			noteStall(&cr.RealStallMaxMS, &cr.MachineSeeds, o.seed, float64(o.jd.Info.Stalls.MaxNS)/1e6, o.jd.MachineVerdict())
		}
		v := o.jd.Outcome().Verdict
		if o.jd.Err != nil && v != checker.VerdictUnsafe {
			cr.Errors = append(cr.Errors, fmt.Sprintf("seed %d: %v", o.seed, o.jd.Err))
		}
		tally.Add(o.jd.Outcome(), o.seed)
		if v == checker.VerdictUnsafe && cr.FirstRealUnsafe == nil {
			cr.FirstRealUnsafe = &Seed{Seed: o.seed, Repro: o.jd.Real.Repro()}
		}
		if v != checker.VerdictSafe {
			cr.RealReasons = addReason(cr.RealReasons, o.jd.Check.Reasons)
		}
	}
	cr.RealRuns, cr.RealUnsafe = tally.Runs, tally.Unsafe
	cr.RealVerdicts, cr.RealVerdict = verdictCounts(&tally, errs), verdictOf(&tally, errs)
	if cr.RealVerdict == checker.VerdictSafe {
		cr.RealUntested = tally.Untested()
	}
	for _, o := range outs {
		if o.jd == nil {
			continue
		}
		if v := o.jd.Outcome().Verdict; v != cr.RealVerdict {
			if cr.RealOtherSeeds == nil {
				cr.RealOtherSeeds = map[checker.Verdict][]uint64{}
			}
			cr.RealOtherSeeds[v] = append(cr.RealOtherSeeds[v], o.seed)
		}
	}
	lo, hi := stats.Wilson(cr.RealUnsafe, cr.RealRuns)
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
	marked, untested := false, false
	for _, c := range r.Cells {
		if c.NotSupported != "" {
			unsupported = append(unsupported, fmt.Sprintf("  %s × %s: %s", c.Scenario, c.Lock, c.NotSupported))
			fmt.Fprintf(w, "%-24s %-16s %-9s %-22s %-22s %-6s %s\n", c.Scenario, c.Lock, orDash(c.Expected), rate(c.SimUnsafe, c.SimRuns, c.SimVerdict), "not yet supported", "-", "")
			continue
		}
		note := ""
		if c.TTLNS != 0 && c.TTLNS != r.TTLNS {
			note = fmt.Sprintf("TTL %v ", time.Duration(c.TTLNS))
		}
		real := rate(c.RealUnsafe, c.RealRuns, c.RealVerdict)
		if c.RealUntested != "" {
			real += UntestedMark
			untested = true
		}
		if len(c.MachineSeeds) > 0 {
			real += MachineMark
			marked = true
		}
		if !c.Agree {
			note += "DISAGREE"
			if c.SimVerdict != c.RealVerdict {
				note += fmt.Sprintf(" (sim %s, real %s)", c.SimVerdict, c.RealVerdict)
			} else {
				note += " (rates' intervals do not overlap)"
			}
		}
		if m := machineSeeds(c.MachineSeeds); m != "" {
			note = strings.TrimSpace(note + " " + m)
		}
		fmt.Fprintf(w, "%-24s %-16s %-9s %-22s %-22s %-6v %s\n", c.Scenario, c.Lock, orDash(c.Expected), rate(c.SimUnsafe, c.SimRuns, c.SimVerdict), real, c.Agree, note)
	}
	if marked {
		machineFootnote(w)
	}
	if untested {
		untestedFootnote(w)
	}
	if len(unsupported) > 0 {
		sort.Strings(unsupported)
		fmt.Fprintf(w, "\nnot yet supported by the real arm (%d cells):\n%s\n", len(unsupported), strings.Join(unsupported, "\n"))
	}
	fmt.Fprintf(w, "\nTTL %v in both arms (each scenario scaled to it), unless the note names the cell's own (a replicated world runs with at least %v: a real Sentinel failover takes seconds); %s; node clocks: %s\n", time.Duration(r.TTLNS), ReplicatedTTL, orDash(r.Redis), orDash(r.NodeClocks))
}

// UntestedMark follows a real cell's rate when its safe verdict tested
// nothing (CellResult.RealUntested, DriverCell.Untested).
const UntestedMark = " n/t"

func untestedFootnote(w io.Writer) {
	fmt.Fprintf(w, "\nn/t: safe but untested: no fault bit in any run (each fault's reach and bite as the simulator judges them), or the lock never read the client clock set wrong; the JSON says which (real_untested).\n")
}

func rate(k, n int, verdict checker.Verdict) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d %s", k, n, verdict)
}

func orDash[S ~string](s S) string {
	if s == "" {
		return "-"
	}
	return string(s)
}
