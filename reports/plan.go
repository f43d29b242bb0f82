package reports

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/realarm/parity"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

// Report settings. Measured on the project's machine kind (2 cores,
// 2026-11-24, 319 cells): --quick, 7,336 runs, takes 3m32s of wall time
// on two worker processes on an otherwise idle machine (35 runs/s); the
// default's 71,600 runs take 29m29s (40 runs/s). What a cell costs
// is mostly its Redis commands: its virtual time × its clients × how often
// they poll; the zk locks' raft members, Redlock over three Sentinel
// groups (nine nodes) and Redisson's polling fair lock cost several times
// a SET NX lock's run.
const (
	DefaultSeeds = 200 // seeds per matrix cell
	QuickSeeds   = 20
	// The pause sweep (the debate's rate plot): seeds per point.
	pauseSweepSeeds      = 50
	pauseSweepQuickSeeds = 10
	// The debate's other curves (curves.go): seeds per point. Fewer than
	// the pause sweep's: they have 7 to 11 points and up to 5 locks.
	curveSeeds      = 30
	curveQuickSeeds = 6
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

// lockOrder is the columns' order: the product's design list (simplest designs
// first, libraries last); other locks follow alphabetically.
var lockOrder = []string{"setnx-del", "setnx-expire", "set-nx-del", "getset-expiry", "set-nx-getdel", "set-nx-cad", "spin-retry", "watchdog", "redisson-lock", "redisson-rw", "redisson-fair",
	"primary-replica", "redisson-multilock", "redlock", "fencing", "fencing-strict", "token-cas", "version-cas", "redsync", "redislock", "go-zero", "gocron", "zk-lock", "zk-fencing"}

// Options is the report a user asks for.
type Options struct {
	// Seeds per cell (0: DefaultSeeds, or QuickSeeds when Quick); the
	// pause sweep runs half as many per point (at least 1).
	Seeds int
	// Quick: QuickSeeds and a coarser pause sweep.
	Quick bool
	// PerYear runs the per-year estimate (perhour.go) after the matrix,
	// for the designs of perYearLocks in the report (about 800 runs a
	// design, 160 with Quick; each design's estimate is kept in the
	// result store).
	PerYear bool
	// Scenarios and Locks, if set, keep only these (ids; nil: all).
	Scenarios []string
	Locks     []string
	// Version names the build in the report ("locksim v1.2.3 (go1.26)").
	Version string
	// Parity, if set, is a 'locksim parity' folder: the report gets a
	// "simulation vs real Redis" section from its parity.json.
	Parity string
	// Fixed runs every seed of every cell and point (the fixed plan);
	// otherwise each stops early by the sequential rule (sequential.go).
	Fixed bool
	// EndWhenLive ends each cell's liveness phase once every client has
	// acquired after the heal (run.Spec.EndWhenLive; cells only: the
	// curves read safety and keep their short phases).
	EndWhenLive bool
}

// Cell is one scenario × lock of the matrix.
type Cell struct {
	Scenario scenarios.Scenario
	Lock     locks.Info
	// Spec is the cell's run (seed 1); At gives it another seed.
	Spec run.Spec
	// SafetyPhase and LivenessPhase are the run lengths the cell's runs
	// got (its scenario's, or the report's for the few it shortens).
	SafetyPhase, LivenessPhase time.Duration
	run.Tally
	// FirstUnsafeSHA is the trace hash of the first unsafe seed's run.
	FirstUnsafeSHA string
	// firstUnsafeStored: that run's outcome came from the result store.
	firstUnsafeStored bool
	expect            *Expectation
	// Timeline is the counterexample's picture, relative to the report
	// folder ("" if none); Story tells its first violation (run.Explain).
	Timeline, Story string
	// Minimal is the same violation as a minimal history (run.Minimal).
	Minimal *checker.MinimalHistory
	seq     *seqState
}

// At is the cell's run with a seed.
func (c *Cell) At(seed uint64) run.Spec {
	s := c.Spec
	s.Seed = seed
	return s
}

// Repro is the command that runs the cell's seed again.
func (c *Cell) Repro(seed uint64) string { return c.At(seed).Repro() }

// job is one run: a matrix cell's seed or a sweep point's seed.
type job struct {
	req   sweep.Request
	cell  *Cell
	point *point
	seq   *seqState // its cell's or point's (shared by its seeds)
}

// Plan is a validated report: its cells, its pause sweep and every run,
// in the order they run.
type Plan struct {
	opt        Options
	seeds      int
	pauseSeeds int
	curveSeeds int
	cells      []*Cell
	points     []*point       // the pause sweep's
	curves     []*curve       // the debate's other curves (debateCurves)
	pauseSecs  *curve         // the pause sweep in seconds (pausesecs.go), when it runs
	perYear    *PerYearResult // the per-year estimate (perhour.go), once Run made it
	jobs       []job
	parity     *parity.Result          // Options.Parity's results
	reruns     int                     // timeline reruns made by Run
	cpu        time.Duration           // the CPU Run's planned runs took
	drivers    []*parity.DriversResult // Options.Parity's drivers tables (drivers.go)
	pointSeq   map[*point]*seqState
	skipped    int                // seeds Run did not run: their cell had stopped
	overrun    int                // seeds Run ran past their cell's stop (not counted)
	ttls       map[string]lockTTL // lockTTLs, once computed
	store      *Store             // Run's result store, which keeps the drawn charts (nil: none)
}

// Runs is how many simulations the plan runs (timelines aside): before
// Run, at most (every seed up to the cap); after it, those it ran
// (overruns included).
func (p *Plan) Runs() int { return len(p.jobs) - p.skipped }

// Reruns is how many runs Run repeated to draw the unsafe cells'
// timelines (known once the planned runs are done).
func (p *Plan) Reruns() int { return p.reruns }

// Cells are the matrix's cells, in the report's order.
func (p *Plan) Cells() []*Cell { return p.cells }

// NewPlan checks the options and lays out every run. Errors are
// *sweep.InputError (Field "scenarios", "locks" or "").
func NewPlan(opt Options) (*Plan, error) {
	p := &Plan{opt: opt, seeds: DefaultSeeds, pauseSeeds: pauseSweepSeeds, curveSeeds: curveSeeds}
	if opt.Parity != "" {
		var err error
		if p.drivers, err = readDrivers(opt.Parity); err != nil {
			return nil, err
		}
		if len(p.drivers) == 0 || hasParityJSON(opt.Parity) {
			if p.parity, err = readParity(opt.Parity); err != nil {
				return nil, err
			}
		}
	}
	values, secs := pauseSweepValues, pauseSecsValues
	if opt.Quick {
		p.seeds, p.pauseSeeds, p.curveSeeds, values, secs = QuickSeeds, pauseSweepQuickSeeds, curveQuickSeeds, pauseSweepQuick, pauseSecsQuick
	}
	if opt.Seeds > 0 {
		p.seeds = opt.Seeds
		p.pauseSeeds = max(1, opt.Seeds/2)
		p.curveSeeds = p.pauseSeeds
	}
	scenarioIDs := scenarios.IDs()
	if opt.Scenarios != nil {
		scenarioIDs = nil
		for _, id := range opt.Scenarios {
			if _, err := scenarios.Get(id); err != nil {
				return nil, &sweep.InputError{Field: "scenarios", Err: fmt.Errorf("unknown scenario %q (one of: %s)", id, strings.Join(scenarios.IDs(), ", "))}
			}
			if slices.Contains(scenarioIDs, id) {
				return nil, &sweep.InputError{Field: "scenarios", Err: fmt.Errorf("%q appears twice", id)} // as sweep.ParseLocks refuses --locks
			}
			scenarioIDs = append(scenarioIDs, id)
		}
	}
	for _, id := range opt.Locks {
		if _, err := catalogue.Get(id); err != nil {
			return nil, &sweep.InputError{Field: "locks", Err: fmt.Errorf("unknown lock %q (one of: %s)", id, strings.Join(catalogue.IDs(), ", "))}
		}
	}
	keep := func(id string) bool { return opt.Locks == nil || slices.Contains(opt.Locks, id) }

	var cellJobs, pointJobs, curveJobs []job
	var scens []scenarios.Scenario
	for _, id := range scenarioIDs {
		s, _ := scenarios.Get(id)
		if s.File != nil && !s.File.InMatrix() {
			continue // a background scenario (matrix: false): not a report's row
		}
		scens = append(scens, s)
	}
	slices.SortStableFunc(scens, func(a, b scenarios.Scenario) int {
		return cmp.Or(cmp.Compare(debateRank(a), debateRank(b)), cmp.Compare(a.ID, b.ID))
	})
	for _, s := range scens {
		for _, id := range orderLocks(scenarioLocks(s)) {
			if !keep(id) {
				continue
			}
			info, err := catalogue.Get(id)
			if err != nil {
				return nil, &sweep.InputError{Field: "", Err: fmt.Errorf("scenario %s lists lock %q, which is not in the catalogue", s.ID, id)}
			}
			c := &Cell{Scenario: s, Lock: info, expect: expectationOf(s, id)}
			params := reportLengths[s.ID]
			if params.Liveness > 0 {
				// A key orphaned at the heal blocks the lock for its
				// lease: the phase must outlast it (watchdog: 30 s).
				params.Liveness = max(params.Liveness, 2*info.TTL)
			}
			c.Spec = run.Spec{Scenario: s.ID, Lock: id, Seed: 1, Params: params, EndWhenLive: opt.EndWhenLive}
			built, err := c.Spec.Build()
			if err != nil {
				return nil, &sweep.InputError{Field: "", Err: fmt.Errorf("scenario %s, lock %s: %w", s.ID, id, err)}
			}
			c.SafetyPhase, c.LivenessPhase = built.Config.Duration, built.Config.Liveness
			if !built.Config.EndWhenLive {
				// The early end does not apply to this lock (a fair or
				// version-fenced design, an unavailability bound): the
				// spec says so, so its store key and repro line are the
				// full phase's.
				c.Spec.EndWhenLive = false
			}
			p.cells = append(p.cells, c)
			cellJobs = append(cellJobs, job{req: sweep.Request{Spec: c.Spec}, cell: c})
		}
	}
	// The pause sweep, when its scenario and locks are there.
	if _, err := scenarios.Get(pauseSweepScenario); err == nil && slices.Contains(scenarioIDs, pauseSweepScenario) {
		for _, v := range values {
			for _, id := range pauseSweepLocks {
				info, err := catalogue.Get(id)
				if err != nil || !keep(id) {
					continue
				}
				pt := &point{lock: id, value: v}
				// Long enough for the pause to end inside the safety
				// phase even when c0 gets to its write late, with a TTL
				// after it for the paused client's write.
				params := scenarios.Params{Clients: pauseSweepClients, Duration: run.PauseStart + pauseSweepSlack + time.Duration(v*float64(info.TTL)) + info.TTL,
					Liveness: pauseSweepLiveness}
				pause := v
				req := sweep.Request{Spec: run.Spec{Scenario: pauseSweepScenario, Lock: id, Seed: 1, Params: params, Pause: &pause}}
				if _, err := req.Spec.Build(); err != nil {
					return nil, &sweep.InputError{Field: "", Err: fmt.Errorf("pause sweep, lock %s: %w", id, err)}
				}
				p.points = append(p.points, pt)
				pointJobs = append(pointJobs, job{req: req, point: pt})
			}
		}
		jobs, err := p.addPauseSecs(secs)
		if err != nil {
			return nil, &sweep.InputError{Field: "", Err: err}
		}
		pointJobs = append(pointJobs, jobs...)
	}
	// The debate's curves, each when its scenario is in the report.
	for _, set := range []struct {
		curves []*curve
		into   *[]*curve
	}{{debateCurves(), &p.curves}} {
		for _, c := range set.curves {
			if !slices.Contains(scenarioIDs, c.Scenario) {
				continue
			}
			jobs, err := p.addFileCurve(c, keep)
			if err != nil {
				return nil, &sweep.InputError{Field: "", Err: err}
			}
			if len(c.points) > 0 {
				*set.into = append(*set.into, c)
				curveJobs = append(curveJobs, jobs...)
			}
		}
	}
	if len(p.cells) == 0 {
		var bg []string
		for _, id := range scenarioIDs {
			if s, _ := scenarios.Get(id); s.File != nil && !s.File.InMatrix() {
				bg = append(bg, id)
			}
		}
		if len(bg) == len(scenarioIDs) {
			return nil, &sweep.InputError{Field: "scenarios", Err: fmt.Errorf("%s: background scenarios (matrix: false) have no matrix row (the report's per-year estimate injects its faults itself, from the risk profile); 'locksim sweep --scenario %s' runs one alone", strings.Join(bg, ", "), bg[0])}
		}
		return nil, &sweep.InputError{Field: "", Err: fmt.Errorf("nothing to run: no scenario lists any of the chosen locks")}
	}
	// Each cell and point stops on its own (sequential.go).
	p.pointSeq = map[*point]*seqState{}
	for _, group := range []struct {
		jobs []job
		cap  int
	}{{cellJobs, p.seeds}, {pointJobs, p.pauseSeeds}, {curveJobs, p.curveSeeds}} {
		for i := range group.jobs {
			j := &group.jobs[i]
			j.seq = &seqState{cap: group.cap}
			if j.cell != nil {
				j.cell.seq = j.seq
			} else {
				p.pointSeq[j.point] = j.seq
			}
		}
	}
	// Seed-major order: every cell's seed 1, then every cell's seed 2, ...
	// so expensive cells are spread over the run and the workers finish
	// together.
	for seed := uint64(1); seed <= uint64(max(p.seeds, p.pauseSeeds, p.curveSeeds)); seed++ {
		for _, group := range []struct {
			jobs  []job
			seeds int
		}{{cellJobs, p.seeds}, {pointJobs, p.pauseSeeds}, {curveJobs, p.curveSeeds}} {
			if seed > uint64(group.seeds) {
				continue
			}
			for _, j := range group.jobs {
				j.req.Spec.Seed = seed
				p.jobs = append(p.jobs, j)
			}
		}
	}
	return p, nil
}

// scenarioLocks are the locks a scenario is meant for (its file's list),
// or every lock; locks behind a build tag are left out (the report's
// Settings say so).
func scenarioLocks(s scenarios.Scenario) []string {
	var out []string
	for _, id := range catalogue.IDs() {
		info, _ := catalogue.Get(id)
		if info.Unavailable == "" && s.Fits(info) == "" {
			out = append(out, id)
		}
	}
	return out
}

// whyNot says why the matrix has no cell for lock in scenario s: it does
// not fit the scenario's topology, or this binary lacks it ("" when it was
// left out by --locks).
func whyNot(s scenarios.Scenario, id string) string {
	info, err := catalogue.Get(id)
	if err != nil {
		return ""
	}
	if info.Unavailable != "" {
		return info.Unavailable
	}
	return s.Fits(info)
}

// Absent lists the catalogue's locks this binary cannot run (go-zero
// without its build tag), each with why: the report names them.
func Absent() []string {
	var out []string
	for _, id := range catalogue.IDs() {
		if info, _ := catalogue.Get(id); info.Unavailable != "" {
			out = append(out, id+": "+info.Unavailable)
		}
	}
	return out
}

// expectationOf is what the scenario file expects of the lock (nil: no
// expectation recorded).
func expectationOf(s scenarios.Scenario, lock string) *Expectation {
	if s.File == nil {
		return nil
	}
	e, ok := s.File.Expect[lock]
	if !ok {
		return nil
	}
	return &Expectation{Role: e.Role, Kleppmann: e.Kleppmann, Antirez: e.Antirez, Agreed: e.Agreed, Want: e.Want(),
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

// scenarioOrder is the scenarios of the matrix, in order.
func (p *Plan) scenarioOrder() []scenarios.Scenario {
	var out []scenarios.Scenario
	for _, c := range p.cells {
		if len(out) == 0 || out[len(out)-1].ID != c.Scenario.ID {
			out = append(out, c.Scenario)
		}
	}
	return out
}

// lockColumns are the matrix's columns.
func (p *Plan) lockColumns() []string {
	var ids []string
	for _, c := range p.cells {
		if !slices.Contains(ids, c.Lock.ID) {
			ids = append(ids, c.Lock.ID)
		}
	}
	return orderLocks(ids)
}

func (p *Plan) cell(scenario, lock string) *Cell {
	for _, c := range p.cells {
		if c.Scenario.ID == scenario && c.Lock.ID == lock {
			return c
		}
	}
	return nil
}
