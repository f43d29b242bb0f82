package risk

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// Edges are the strata's bounds, in TTLs of the lock (a fault's effect:
// its length, or for clock drift the share of a lease its clock gains,
// ppm / 1e6); the last stratum runs to infinity.
var Edges = []float64{0, 0.1, 0.25, 0.5, 1, 1.5, 2, 3}

// MaxRunTTLs caps a fault's length in a run, in TTLs: every lease has
// long expired by then, and a longer one would only lengthen the run (a
// failover's cap is its down-after plus 2 TTLs when that is longer).
const MaxRunTTLs = 5

// minWeight is the smallest share of a class's events a stratum is run
// for; below it the stratum adds nothing to the estimate and its weight
// to the interval's top (a rate of at most 1).
const minWeight = 1e-9

// Limits of Options.
const (
	MaxClients = 16
	MaxSeeds   = 10_000
	MinTTL     = 10 * time.Millisecond
	MaxTTL     = 10 * time.Minute
)

// Options are one estimate's inputs.
type Options struct {
	// Lock is a catalogue design's ID; Info, when set, is the lock
	// instead (a user's own, as locktest.Risk passes it: its ID names it
	// in the result).
	Lock    string
	Info    *locks.Info
	TTL     time.Duration
	Clients int
	// Seeds is the runs a stratum on average: the estimate runs Seeds
	// for each stratum it measures, shared out by weight (allocate).
	Seeds int
	// Seed is the first seed: every run's world seed, fault size and
	// moment derive from it, so the same options give the same estimate.
	Seed    uint64
	Profile *Profile
	// Scenario is the world a run starts from before its one fault
	// replaces the schedule ("": no-faults, the default world).
	Scenario string
}

// Stratum is one range of fault sizes and what its runs measured.
type Stratum struct {
	FromTTL float64    `json:"from_ttl"`
	ToTTL   *float64   `json:"to_ttl,omitempty"` // nil: infinity
	Weight  float64    `json:"weight"`           // the share of the class's events in it
	Runs    int        `json:"runs"`             // judged runs (unknown ones excluded)
	Unsafe  int        `json:"unsafe_runs"`
	Unknown int        `json:"unknown_runs,omitempty"`
	CI95    [2]float64 `json:"unsafe_rate_ci95"`
}

// ClassResult is one class's share of the estimate.
type ClassResult struct {
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// NA says why the class does not apply to the lock's world (then
	// nothing else is set).
	NA            string  `json:"not_applicable,omitempty"`
	EventsPerYear float64 `json:"events_per_process_per_year"`
	Hits          string  `json:"hits"`
	Processes     int     `json:"processes"`
	// P is the probability that one fault of the class breaks the lock,
	// with its conservative 95% interval.
	P     float64    `json:"p_violation_per_fault"`
	PCI95 [2]float64 `json:"p_violation_per_fault_ci95"`
	// PerYear is the expected violations per year of the world.
	PerYear     float64    `json:"violations_per_year"`
	PerYearCI95 [2]float64 `json:"violations_per_year_ci95"`
	Strata      []Stratum  `json:"strata"`
	Size        string     `json:"size"`
	Source      Source     `json:"source"`

	// The top's parts: the strata where no run broke the lock (weights
	// and runs, for JoinZero), and the rest (the other strata's Wilson
	// tops and the weight of the strata not run), in P.
	zeroW   []float64
	zeroN   []int
	fixedHi float64
}

// Result is one estimate.
type Result struct {
	Lock    string        `json:"lock"`
	TTL     time.Duration `json:"ttl_ns"`
	Clients int           `json:"clients"`
	Seeds   int           `json:"runs_per_stratum"`
	Seed    uint64        `json:"seed"`
	Profile string        `json:"profile"`
	Classes []ClassResult `json:"classes"`
	// PerYear is the total, with the sum of the classes' intervals.
	PerYear     float64    `json:"violations_per_year"`
	PerYearCI95 [2]float64 `json:"violations_per_year_ci95"`
	Runs        int        `json:"runs"`
	Unknown     int        `json:"unknown_runs"`
	Method      string     `json:"method"`
}

// Method says how the numbers are made (the CLI and --json print it).
const Method = "Each class alone, one fault per run (faults this rare do not meet): its sizes cut into strata in TTLs of the lock, " +
	"each stratum's runs drawing their sizes from the class's distribution within it and the fault's moment from the seed (1 to 3 TTLs in). " +
	"Runs: --seeds for each stratum, shared out: a fifth of --seeds (at least 2) each, the rest across classes in proportion to the square root of a class's events a year (rate × processes) and within a class to each stratum's share of its events. " +
	"P(violation | fault) = Σ strata: share of events × unsafe runs / runs; violations per year = P × events per process per year × processes it can hit; classes add up. " +
	"The 95% interval: the bottom adds each stratum's Wilson bottom; the top adds the Wilson tops of the strata where runs broke the lock and, for the strata where none did, " +
	"the largest sum of share × rate consistent with seeing none (Clopper-Pearson, one-sided, for all those strata at once: Π (1-p)^runs ≥ 0.05), " +
	"per class and, for the total, across the classes (weighed by their events a year)."

// Validate checks the options, naming the field.
func (o Options) Validate() error {
	switch {
	case o.Profile == nil:
		return &run.InputError{Field: "profile", Err: errors.New("none")}
	case o.TTL < MinTTL || o.TTL > MaxTTL:
		return &run.InputError{Field: "ttl", Err: fmt.Errorf("%v out of range %v..%v", o.TTL, MinTTL, MaxTTL)}
	case o.Clients < 2 || o.Clients > MaxClients:
		return &run.InputError{Field: "clients", Err: fmt.Errorf("%d out of range 2..%d (a violation needs two)", o.Clients, MaxClients)}
	case o.Seeds < 1 || o.Seeds > MaxSeeds:
		return &run.InputError{Field: "seeds", Err: fmt.Errorf("%d out of range 1..%d", o.Seeds, MaxSeeds)}
	}
	_, err := o.base(o.Seed)
	return err
}

// base builds the world a run starts from (the InputError's field names
// what is wrong).
func (o Options) base(seed uint64) (*run.Job, error) {
	sc := o.Scenario
	if sc == "" {
		sc = "no-faults"
	}
	var job *run.Job
	var err error
	if o.Info != nil {
		job, err = ownJob(*o.Info, sc, seed, paramsFor(o))
	} else {
		job, err = run.Spec{Scenario: sc, Lock: o.Lock, Seed: seed, Params: paramsFor(o), EndWhenLive: true}.Build()
	}
	if err != nil {
		return nil, err
	}
	switch job.Lock.Topology {
	case locks.Single, locks.Replicated, locks.Independent:
	default:
		return nil, &run.InputError{Field: "lock", Err: fmt.Errorf("%s runs on a %s topology; risk covers Redis designs (single, replicated, independent)", o.lockID(), job.Lock.Topology)}
	}
	return job, nil
}

// lockID names the lock: the catalogue's ID, or the own lock's.
func (o Options) lockID() string {
	if o.Info != nil {
		return o.Info.ID
	}
	return o.Lock
}

// ownJob builds scenario sc's world for a lock that is not in the
// catalogue, as run.Spec.Build does for one that is.
func ownJob(info locks.Info, sc string, seed uint64, p scenarios.Params) (*run.Job, error) {
	if info.New == nil {
		return nil, &run.InputError{Field: "lock", Err: fmt.Errorf("%s has no constructor (locks.Info.New)", info.ID)}
	}
	s, err := scenarios.Resolve(sc)
	if err != nil {
		return nil, &run.InputError{Field: "scenario", Err: err}
	}
	cfg, err := s.Build(info, seed, p)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return nil, &run.InputError{Field: "lock", Err: fmt.Errorf("%s's world: %v", info.ID, err)}
	}
	job := run.NewJob(s.ID, info, cfg, checker.Options{})
	job.Judging = s.Judging(info)
	job.Config.EndWhenLive = !info.Fair && job.Judging.MaxUnavailable == 0 && info.Fencing != checker.FenceVersion
	return job, nil
}

// paramsFor are the world's parameters: the clients and the lease (the
// world, workload and lock played at that TTL: scenarios.Params.TTL).
func paramsFor(o Options) scenarios.Params {
	return scenarios.Params{Clients: o.Clients, TTL: o.TTL}
}

// Plan is how many runs the estimate takes (the CLI says it before):
// Seeds for each stratum run of the classes that apply to the lock's
// world, shared out by allocate.
func (o Options) Plan() int {
	n := 0
	if job, err := o.base(o.Seed); err == nil {
		for _, rs := range o.allocate(o.reaches(job)) {
			for _, r := range rs {
				n += r
			}
		}
	}
	return n
}

// reaches are the events a year each class brings to the lock's world
// (job): 0 for a class that does not apply.
func (o Options) reaches(job *run.Job) []float64 {
	reach := make([]float64, len(o.Profile.Classes))
	for ci, c := range o.Profile.Classes {
		if cr := o.reach(c, job); cr.NA == "" {
			reach[ci] = cr.EventsPerYear * float64(cr.Processes)
		}
	}
	return reach
}

// floorRuns is the fewest runs a stratum of weight ≥ minWeight gets, of
// Seeds (a fifth, at least 2, at most Seeds): enough that a stratum where
// faults do break the lock shows it.
func (o Options) floorRuns() int { return min(o.Seeds, max(2, o.Seeds/5)) }

// allocate shares the plan's runs out among the strata of the classes
// that apply (reach[ci]: events per year the class brings to the world,
// 0 when it does not apply) Seeds for each stratum of weight ≥ minWeight
// of a class that applies: each such stratum gets floorRuns, and the
// rest goes where a stratum's events weigh most, for what bounds the
// total's top is, for a class whose runs broke nothing, its weight ×
// events over its runs (joinZero): across classes in proportion to
// √(events per year × the weight of the class's live strata), within a
// class in proportion to each stratum's weight (which makes w/n equal
// across its strata, the joint bound's best). runs[ci][si] is the runs of
// stratum si of class ci (their sum is Plan()). Deterministic.
func (o Options) allocate(reach []float64) [][]int {
	runs := make([][]int, len(o.Profile.Classes))
	f, left := o.floorRuns(), 0
	for ci, c := range o.Profile.Classes {
		for _, s := range o.strata(c) {
			if s.Weight >= minWeight && reach[ci] > 0 {
				left += o.Seeds
			}
		}
	}
	share := make([]float64, len(runs))
	sum := 0.0
	for ci, c := range o.Profile.Classes {
		runs[ci] = make([]int, len(Edges))
		w := 0.0
		for si, s := range o.strata(c) {
			if s.Weight < minWeight {
				continue
			}
			if reach[ci] > 0 {
				runs[ci][si] = f
				left -= f
				w += s.Weight
			}
		}
		share[ci] = math.Sqrt(reach[ci] * w)
		sum += share[ci]
	}
	if left <= 0 || sum == 0 {
		return runs
	}
	for ci, c := range o.Profile.Classes {
		if share[ci] == 0 {
			continue
		}
		n := float64(left) * share[ci] / sum
		w := 0.0
		for _, s := range o.strata(c) {
			if s.Weight >= minWeight {
				w += s.Weight
			}
		}
		for si, s := range o.strata(c) {
			if s.Weight >= minWeight {
				runs[ci][si] += int(n * s.Weight / w) // rounds down: the sum stays within the plan
			}
		}
	}
	return runs
}

// JoinZero is the largest Σ wᵢ·pᵢ over strata in which none of nᵢ runs
// broke the lock that is consistent with seeing none at the 95% level:
// the pᵢ with Πᵢ (1−pᵢ)^nᵢ ≥ 0.05 (Clopper–Pearson's one-sided bound, for
// all those strata at once; one stratum alone gives 1 − 0.05^(1/n)). The
// maximum sets pᵢ = 1 − λ·nᵢ/wᵢ where wᵢ/nᵢ > λ, λ found by bisection.
// ws and ns pair up; strata of no runs are left out.
func JoinZero(ws []float64, ns []int) float64 {
	budget := math.Log(20)
	hiL := 0.0
	for i, w := range ws {
		if ns[i] > 0 && w > 0 {
			hiL = max(hiL, w/float64(ns[i]))
		}
	}
	if hiL == 0 {
		return 0
	}
	// used is Σ nᵢ·(−ln(1−pᵢ)) at λ: it falls as λ grows (to 0 at hiL).
	used := func(l float64) float64 {
		u := 0.0
		for i, w := range ws {
			if n := float64(ns[i]); n > 0 && w/n > l {
				u += n * -math.Log(l*n/w)
			}
		}
		return u
	}
	lo, hi := 0.0, hiL
	for range 200 {
		mid := (lo + hi) / 2
		if used(mid) > budget {
			lo = mid
		} else {
			hi = mid
		}
	}
	top := 0.0
	for i, w := range ws {
		if n := float64(ns[i]); n > 0 && w/n > hi {
			top += w * (1 - hi*n/w)
		}
	}
	return top
}

// strata are a class's strata with their weights (no runs yet).
func (o Options) strata(c Class) []Stratum {
	var out []Stratum
	for i, a := range Edges {
		b := math.Inf(1)
		s := Stratum{FromTTL: a}
		if i+1 < len(Edges) {
			b = Edges[i+1]
			to := b
			s.ToTTL = &to
		}
		sb := 0.0
		if !math.IsInf(b, 1) {
			sb = c.Size.d.Survival(o.base_(c, b))
		}
		s.Weight = max(0, c.Size.d.Survival(o.base_(c, a))-sb)
		out = append(out, s)
	}
	return out
}

// base_ is an effect in TTLs in the class's base unit (seconds or ppm).
func (o Options) base_(c Class, ttls float64) float64 {
	if c.Kind == ClockDrift {
		return ttls * 1e6
	}
	return ttls * o.TTL.Seconds()
}

// Progress is told after each class (done runs of all).
type Progress func(class string, done, all int)

// Estimate runs every class's strata in bubble b, in order, and adds them
// up. The same options give the same result.
func Estimate(b sim.Bubble, o Options, progress Progress) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	res := &Result{Lock: o.lockID(), TTL: o.TTL, Clients: o.Clients, Seeds: o.Seeds, Seed: o.Seed, Profile: o.Profile.Name(), Method: Method}
	job, err := o.base(o.Seed)
	if err != nil {
		return nil, err
	}
	var crs []ClassResult
	for _, c := range o.Profile.Classes {
		crs = append(crs, o.reach(c, job))
	}
	reach := o.reaches(job)
	runs := o.allocate(reach)
	all, done := 0, 0
	for _, rs := range runs {
		for _, n := range rs {
			all += n
		}
	}
	// The total's top: each class's strata that broke the lock at their
	// Wilson tops, and the strata of every class that did not, jointly
	// (JoinZero over their events a year).
	var zw []float64
	var zn []int
	fixedHi := 0.0
	for ci, c := range o.Profile.Classes {
		cr := crs[ci]
		if cr.NA == "" {
			if err := o.class(b, ci, c, runs[ci], &cr); err != nil {
				return nil, fmt.Errorf("class %s: %w", c.ID, err)
			}
		}
		for _, s := range cr.Strata {
			res.Runs += s.Runs + s.Unknown
			res.Unknown += s.Unknown
			done += s.Runs + s.Unknown
		}
		k := reach[ci]
		for i, w := range cr.zeroW {
			zw, zn = append(zw, k*w), append(zn, cr.zeroN[i])
		}
		fixedHi += k * cr.fixedHi
		res.PerYear += cr.PerYear
		res.PerYearCI95[0] += cr.PerYearCI95[0]
		res.Classes = append(res.Classes, cr)
		if progress != nil {
			progress(c.ID, done, all)
		}
	}
	res.PerYearCI95[1] = min(fixedHi+JoinZero(zw, zn), res.sumTops())
	return res, nil
}

// sumTops is the sum of the classes' tops (the total's top is never above
// it).
func (r *Result) sumTops() float64 {
	t := 0.0
	for _, c := range r.Classes {
		t += c.PerYearCI95[1]
	}
	return t
}

// reach is the class's result before its runs: whether it applies to the
// lock's world (job) and how many processes it can hit.
func (o Options) reach(c Class, job *run.Job) ClassResult {
	cr := ClassResult{ID: c.ID, Kind: c.Kind, EventsPerYear: c.EventsPerYear(), Hits: c.Hits(), Size: c.SizeText(), Source: c.Source}
	switch {
	case c.Kind == Failover && !job.Config.Topology.Replicated:
		cr.NA = "no Sentinel in this lock's world"
	case c.Hits() == "clients":
		cr.Processes = o.Clients
	case c.Kind == Failover || job.Lock.Topology != locks.Independent:
		cr.Processes = 1 // one node, or the primary (a replica's faults are not modelled)
	default:
		cr.Processes = len(job.Config.Nodes)
	}
	return cr
}

// class runs the class's strata, runs[si] runs each, into cr.
func (o Options) class(b sim.Bubble, ci int, c Class, runs []int, cr *ClassResult) error {
	var p, lo, hi float64
	for si, s := range o.strata(c) {
		if s.Weight < minWeight || runs[si] == 0 {
			hi += s.Weight // unmeasured: a rate of at most 1
			cr.Strata = append(cr.Strata, s)
			continue
		}
		a, bb := o.base_(c, s.FromTTL), math.Inf(1)
		if s.ToTTL != nil {
			bb = o.base_(c, *s.ToTTL)
		}
		for i := 0; i < runs[si]; i++ {
			seed := runSeed(o.Seed, ci, si, i)
			rng := rand.New(rand.NewPCG(seed, 0x6c6f636b73696d))
			size := c.Size.d.Draw(a, bb, rng.Float64())
			start := o.TTL + time.Duration(rng.Float64()*float64(2*o.TTL))
			j, err := o.job(c, seed, size, start)
			if err != nil {
				return err
			}
			judged, err := j.Run(b)
			if err != nil {
				return err
			}
			switch {
			case judged.Verdict() == checker.VerdictUnsafe:
				s.Unsafe++
				s.Runs++
			case judged.Err != nil || judged.Verdict() == checker.VerdictUnknown:
				s.Unknown++
			default:
				s.Runs++
			}
		}
		r := stats.Rate{K: s.Unsafe, N: s.Runs}
		rl, rh := r.Interval()
		s.CI95 = [2]float64{rl, rh}
		p += s.Weight * r.P()
		lo += s.Weight * rl
		switch {
		case s.Runs == 0:
			hi += s.Weight
		case s.Unsafe == 0:
			cr.zeroW, cr.zeroN = append(cr.zeroW, s.Weight), append(cr.zeroN, s.Runs)
		default:
			hi += s.Weight * rh
		}
		cr.Strata = append(cr.Strata, s)
	}
	cr.fixedHi = hi
	top := min(hi+JoinZero(cr.zeroW, cr.zeroN), 1)
	k := c.EventsPerYear() * float64(cr.Processes)
	cr.P, cr.PCI95 = p, [2]float64{lo, top}
	cr.PerYear, cr.PerYearCI95 = k*p, [2]float64{k * lo, k * top}
	return nil
}

// runSeed is one run's seed: a splitmix64 of the first seed and where the
// run is (class, stratum, run), so adding a class or seeds keeps the
// others' runs.
func runSeed(seed uint64, class, stratum, i int) uint64 {
	x := seed
	for _, v := range []uint64{uint64(class), uint64(stratum), uint64(i)} {
		x += 0x9e3779b97f4a7c15 + v
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		x = (x ^ (x >> 27)) * 0x94d049bb133111eb
		x ^= x >> 31
	}
	return x
}

// job is one run: the base world with the class's one fault of the size
// (base units) at start.
func (o Options) job(c Class, seed uint64, size float64, start time.Duration) (*run.Job, error) {
	job, err := o.base(seed)
	if err != nil {
		return nil, err
	}
	cfg := &job.Config
	node := cfg.Nodes[0].Name
	var clients []string
	for i := 0; i < o.Clients; i++ {
		clients = append(clients, fmt.Sprintf("c%d", i))
	}
	capLen := time.Duration(MaxRunTTLs) * o.TTL
	if c.Kind == Failover {
		capLen = max(capLen, c.downAfter+2*o.TTL)
	}
	d := capLen
	if size < capLen.Seconds() {
		d = max(time.Duration(size*float64(time.Second)), time.Microsecond)
	}
	f := faults.Fault{Start: start, Duration: d}
	length := d
	switch c.Kind {
	case Pause:
		f.Kind, f.Targets = faults.ClientPause, []string{"c0"}
	case ClockStep:
		f.Kind, f.Targets, f.Jump, f.Duration = faults.ClockJump, []string{node}, d, 0
		length = 0
	case ClockDrift:
		ppm := max(int64(math.Round(size)), 1)
		length = 3 * o.TTL
		f.Kind, f.Targets, f.DriftPPM, f.Duration = faults.ClockDrift, []string{node}, ppm, length
	case Crash:
		f.Kind, f.Targets = faults.Crash, []string{node}
		if c.Persistence != "" {
			cfg.Nodes[0].Persistence = sim.Persistence(c.Persistence)
		}
	case Failover:
		f.Kind = faults.Failover
		if c.downAfter > 0 {
			cfg.Topology.DownAfter = c.downAfter
		}
	case Partition:
		f.Kind, f.From, f.To = faults.Partition, []string{node}, clients
	case Delay:
		f.Kind, f.From, f.To, f.Delay = faults.Delay, []string{node}, clients, d
	}
	cfg.Duration = start + length + 2*o.TTL
	cfg.Faults = []faults.Fault{f}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("the run's world (seed %d, %s fault %v at %v): %v", seed, c.Kind, d, start, err)
	}
	return job, nil
}
