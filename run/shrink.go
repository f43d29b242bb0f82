package run

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

// DefaultShrinkRuns bounds the runs Shrink makes (ShrinkOptions.MaxRuns).
const DefaultShrinkRuns = 300

// MinShrinkDuration is the shortest fault duration (and start step) Shrink
// tries (ShrinkOptions.MinDuration's default).
const MinShrinkDuration = time.Millisecond

// ShrinkOptions bound and tune Shrink. The zero value is the defaults.
type ShrinkOptions struct {
	// MaxRuns bounds the simulator runs, the first (which confirms that the
	// given run fails) included; default DefaultShrinkRuns. At the bound
	// Shrink stops and returns the smallest failing run found so far, with
	// ShrinkResult.Exhausted set.
	MaxRuns int
	// MinDuration: a fault's duration is not halved, nor its start moved,
	// by less than this (default MinShrinkDuration).
	MinDuration time.Duration
	// Progress, if set, is called after every run (the first included)
	// with the run's number, whether it failed with the kind, and the
	// run's number of faults and clients.
	Progress func(run int, failed bool, faults, clients int)
}

// ShrinkResult is the smallest failing run Shrink found.
type ShrinkResult struct {
	// Job is the shrunk run: the original job with its config's Faults
	// replaced and Clients reduced (Trace cleared), and its Spec's too, so
	// Job.Spec.Repro() runs it (once the schedule is in a --faults file:
	// set Spec.FaultsFile). Running it again gives Check.
	Job *Job
	// Check is the checker's result of Config: unsafe, with a violation
	// of Kind.
	Check checker.Result
	Kind  checker.Kind
	// Faults and Clients are Config's schedule and client count.
	Faults  []faults.Fault
	Clients int
	// Runs is the number of simulator runs made (at most MaxRuns).
	Runs int
	// Exhausted is true when Shrink stopped at MaxRuns before reaching a
	// fixpoint: Config is the best found so far, maybe not minimal.
	Exhausted bool
	// FromFaults and FromClients are the original run's sizes.
	FromFaults, FromClients int
}

// ErrNotFailing is returned (wrapped) by Shrink when the run it is given
// does not fail with the violation kind it is asked to preserve.
var ErrNotFailing = errors.New("the run does not fail with that violation kind")

// Shrink reduces a failing run's fault schedule and client count to a
// minimal run that still fails with the same kind of violation. kind is
// the original run's checker.Result.First.Kind; a run still fails when its
// verdict is unsafe and it has at least one verdict-relevant violation of
// that kind. (Not "its First.Kind is kind": a lost update is both a
// resource and a linearizability violation, and which of the two comes
// first depends on the section porcupine reports as stuck, which is not a
// deterministic function of the history.)
//
// Every attempt is a full run of cfg with the same seed, with Faults
// replaced and Clients lowered: the seed's other streams are named, so
// they do not move. The first run is cfg itself; Shrink returns
// ErrNotFailing if it does not fail with kind.
//
// Passes, repeated until a whole round changes nothing (a fixpoint):
//
//  1. drop faults: halves of the schedule, then quarters, ..., then one
//     fault at a time, each removal kept if the run still fails;
//  2. drop clients from the end: the highest-numbered clients that no
//     fault names (first all of them at once, then one at a time), so no
//     fault needs renumbering;
//  3. drop names: remove one process from a fault's targets or from a
//     side of a partition, delay or loss (a side never becomes empty),
//     then drop clients again;
//  4. narrow: halve a fault's duration, keeping its first half, else its
//     second half (its start moved later by half), while it still fails;
//  5. earlier: halve a fault's start while it still fails.
//
// A candidate that does not fail, or whose run ends in an error, is
// discarded. The result is deterministic: same inputs, same result (the
// one wall-clock bound in a run is porcupine's timeout, see
// checker.Options: a linearizability verdict it cuts short does not
// count as failing).
//
// Bound: MaxRuns runs, the first included; at the bound the best run so
// far is returned with Exhausted set, and no error.
func Shrink(b sim.Bubble, job *Job, kind checker.Kind, opt ShrinkOptions) (ShrinkResult, error) {
	if opt.MaxRuns <= 0 {
		opt.MaxRuns = DefaultShrinkRuns
	}
	if opt.MinDuration <= 0 {
		opt.MinDuration = MinShrinkDuration
	}
	if kind == "" {
		return ShrinkResult{}, fmt.Errorf("shrink: no violation kind to preserve")
	}
	cfg := job.Config
	cfg.Trace = nil
	cfg.Faults = slices.Clone(cfg.Faults)
	s := &shrinker{b: b, job: job, kind: kind, opt: opt}
	first, err := s.run(cfg)
	if err != nil {
		return ShrinkResult{}, fmt.Errorf("shrink: the original run: %w", err)
	}
	if s.opt.Progress != nil {
		s.opt.Progress(s.runs, s.fails(first), len(cfg.Faults), cfg.Clients)
	}
	if !s.fails(first) {
		what := string(first.Check.Verdict)
		if first.Check.First != nil {
			what += ", first violation " + string(first.Check.First.Kind)
		}
		return ShrinkResult{}, fmt.Errorf("shrink: %w %q (%s)", ErrNotFailing, kind, what)
	}
	s.best, s.bestCheck = cfg, first.Check
	for {
		changed := false
		for _, pass := range []func() bool{s.dropFaults, s.dropClients, s.dropNames, s.dropClients, s.narrow, s.earlier} {
			if pass() {
				changed = true
			}
			if s.exhausted {
				break
			}
		}
		if !changed || s.exhausted {
			break
		}
	}
	best := s.best
	shrunk := *job
	shrunk.Config = best
	shrunk.Spec.Faults = slices.Clone(best.Faults)
	if shrunk.Spec.Faults == nil {
		shrunk.Spec.Faults = []faults.Fault{}
	}
	shrunk.Spec.Params.Clients = best.Clients
	shrunk.Spec.Pause = nil // the pause is in the schedule now
	return ShrinkResult{Job: &shrunk, Check: s.bestCheck, Kind: kind, Faults: slices.Clone(best.Faults), Clients: best.Clients,
		Runs: s.runs, Exhausted: s.exhausted, FromFaults: len(cfg.Faults), FromClients: cfg.Clients}, nil
}

type shrinker struct {
	b         sim.Bubble
	job       *Job
	kind      checker.Kind
	opt       ShrinkOptions
	runs      int
	exhausted bool
	best      sim.Config
	bestCheck checker.Result
}

func (s *shrinker) run(cfg sim.Config) (*Judged, error) {
	s.runs++
	j := *s.job
	j.Config = cfg
	jd, err := j.Run(s.b)
	if err == nil && jd.Err != nil {
		err = jd.Err
	}
	return jd, err
}

func (s *shrinker) fails(j *Judged) bool {
	return j.Check.Verdict == checker.VerdictUnsafe && violationsOf(j.Check, s.kind) > 0
}

// violationsOf counts r's verdict-relevant violations of one kind
// (checker.Violation kinds): lease overlaps and ownership violations only
// when the claim is mutual exclusion, porcupine's illegal as one.
func violationsOf(r checker.Result, kind checker.Kind) int {
	mutex := r.Claim != checker.ClaimResourceSafety
	switch kind {
	case checker.KindLeaseOverlap:
		if mutex {
			return r.LeaseOverlaps
		}
	case checker.KindResource:
		return r.ResourceViolations
	case checker.KindLinearizability:
		if r.Porcupine == checker.LinIllegal {
			return 1
		}
	case checker.KindOwnership:
		if mutex {
			return r.OwnershipViolations
		}
	}
	return 0
}

// try runs the best config with fs and clients; if it still fails with the
// kind, it becomes the best. At the run bound it runs nothing and sets
// exhausted.
func (s *shrinker) try(fs []faults.Fault, clients int) bool {
	if s.runs >= s.opt.MaxRuns {
		s.exhausted = true
		return false
	}
	cand := s.best
	cand.Faults, cand.Clients = fs, clients
	if cand.Validate() != nil {
		return false
	}
	j, err := s.run(cand)
	failed := err == nil && s.fails(j)
	if s.opt.Progress != nil {
		s.opt.Progress(s.runs, failed, len(fs), clients)
	}
	if failed {
		s.best, s.bestCheck = cand, j.Check
	}
	return failed
}

// dropFaults removes chunks of the schedule, halving the chunk size down to
// one fault.
func (s *shrinker) dropFaults() bool {
	changed := false
	for size := max(1, len(s.best.Faults)/2); size >= 1 && len(s.best.Faults) > 0; size /= 2 {
		for i := 0; i < len(s.best.Faults) && !s.exhausted; {
			fs := s.best.Faults
			cand := slices.Concat(fs[:i], fs[min(i+size, len(fs)):])
			if s.try(cand, s.best.Clients) {
				changed = true
			} else {
				i += size
			}
		}
		if s.exhausted {
			break
		}
	}
	return changed
}

// dropClients lowers the client count while no fault names the clients
// dropped: first straight to the lowest such count, then one at a time.
func (s *shrinker) dropClients() bool {
	lo := max(1, highestClientNamed(s.best.Faults)+1)
	if s.best.Clients <= lo {
		return false
	}
	if s.try(s.best.Faults, lo) {
		return true
	}
	changed := false
	for s.best.Clients-1 > lo && !s.exhausted && s.try(s.best.Faults, s.best.Clients-1) {
		changed = true
	}
	return changed
}

// highestClientNamed is the highest client index ("c<i>") any fault names
// (an armed fault's On too), -1 for none.
func highestClientNamed(fs []faults.Fault) int {
	hi := -1
	for _, f := range fs {
		for _, list := range [][]string{f.Targets, f.From, f.To, {f.On}} {
			for _, n := range list {
				if i, ok := clientIndex(n); ok && i > hi {
					hi = i
				}
			}
		}
	}
	return hi
}

func clientIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "c")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0
}

// dropNames removes one process at a time from a fault's targets or sides
// (from the end of each list), never emptying one.
func (s *shrinker) dropNames() bool {
	changed := false
	for i := 0; i < len(s.best.Faults) && !s.exhausted; i++ {
		for field := 0; field < 3 && !s.exhausted; field++ {
			for j := len(*nameList(&s.best.Faults[i], field)) - 1; j >= 0 && !s.exhausted; j-- {
				if len(*nameList(&s.best.Faults[i], field)) < 2 {
					break
				}
				fs := slices.Clone(s.best.Faults)
				l := nameList(&fs[i], field)
				*l = slices.Delete(slices.Clone(*l), j, j+1)
				if s.try(fs, s.best.Clients) {
					changed = true
				}
			}
		}
	}
	return changed
}

func nameList(f *faults.Fault, field int) *[]string {
	switch field {
	case 0:
		return &f.Targets
	case 1:
		return &f.From
	}
	return &f.To
}

// narrow halves each fault's duration while the run still fails: the first
// half, else the second half.
func (s *shrinker) narrow() bool {
	changed := false
	for i := 0; i < len(s.best.Faults) && !s.exhausted; i++ {
		for !s.exhausted {
			f := s.best.Faults[i]
			half := f.Duration / 2
			if f.Kind == faults.ClockJump || half < s.opt.MinDuration {
				break
			}
			fs := slices.Clone(s.best.Faults)
			fs[i].Duration = half
			if s.try(fs, s.best.Clients) {
				changed = true
				continue
			}
			fs[i].Start, fs[i].Duration = f.Start+half, f.Duration-half
			if !s.try(fs, s.best.Clients) {
				break
			}
			changed = true
		}
	}
	return changed
}

// earlier halves each fault's start while the run still fails.
func (s *shrinker) earlier() bool {
	changed := false
	for i := 0; i < len(s.best.Faults) && !s.exhausted; i++ {
		for !s.exhausted {
			f := s.best.Faults[i]
			if f.Start/2 < s.opt.MinDuration {
				break
			}
			fs := slices.Clone(s.best.Faults)
			fs[i].Start = f.Start / 2
			if !s.try(fs, s.best.Clients) {
				break
			}
			changed = true
		}
	}
	return changed
}
