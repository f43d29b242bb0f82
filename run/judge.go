package run

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// History converts a run's result into the checkers' input. Resource and
// initial are the workload's object (scenarios.Judging).
func History(res *sim.Result, cfg sim.Config, info locks.Info, resourceKind string, initial int64) checker.History {
	return history(nil, res, cfg, info, resourceKind, initial)
}

// history is History appending the events to buf[:0].
func history(buf []checker.Event, res *sim.Result, cfg sim.Config, info locks.Info, resourceKind string, initial int64) checker.History {
	h := checker.History{
		Heal:     int64(cfg.Duration),
		End:      int64(cfg.Duration + cfg.Liveness),
		Fencing:  info.Fencing,
		Resource: resourceKind,
		Initial:  initial,
		Capped:   res.TraceCapped,
		KeyTruth: len(cfg.WatchKeys) > 0,
		LeaseTTL: int64(info.TTL),
		Fair:     info.Fair,
		Faults:   cfg.Faults,
	}
	if res.Stats.VirtualNS > 0 {
		h.End = res.Stats.VirtualNS
	}
	for i := 0; i < cfg.Clients; i++ {
		h.Clients = append(h.Clients, fmt.Sprintf("c%d", i))
	}
	h.Events = slices.Grow(buf[:0], len(res.History))
	for _, e := range res.History {
		if e.Proc == "world" && e.Kind == event.KindHeal {
			h.Heal = e.T
		}
		h.Events = append(h.Events, checker.Event{T: e.T, Proc: e.Proc, Kind: e.Kind, Op: e.Op, OpID: e.OpID,
			Until: e.Until, Token: e.Token, Value: e.Value, Result: e.Result, Lock: e.Lock, Peer: e.Peer, Detail: e.Detail, Fault: e.Fault, Held: e.Held})
	}
	return h
}

// Judged is one run with its checked result.
type Judged struct {
	Job     *Job
	Result  *sim.Result
	History checker.History
	Check   checker.Result
	// Err is set when the simulator could not finish the run (an event
	// budget): the history is judged as far as it goes, and the verdict
	// is unknown unless what ran was already unsafe.
	Err error

	outcome     Outcome   // Outcome's, once computed
	outcomeOnce sync.Once // guards outcome
}

// Verdict is the run's verdict.
func (j *Judged) Verdict() checker.Verdict { return j.Check.Verdict }

// Outcome is what is kept of the run (OutcomeOf), computed on the first
// call and the same value after: the CLI's report, locktest, the sweep's
// lines, parity and the real arm all read this one.
func (j *Judged) Outcome() Outcome {
	j.outcomeOnce.Do(func() { j.outcome = outcomeOf(j) })
	return j.outcome
}

// Run runs the job's world in bubble b and judges it: the one place a run
// becomes a verdict (the CLI, sweeps, reports, the shrinker and locktest
// all come here). The checkers run outside the bubble (porcupine uses
// goroutines and real timers). The error is set only when the simulator
// returned no result at all; an incomplete run is a Judged with Err.
func (j *Job) Run(b sim.Bubble) (*Judged, error) { return j.RunReusing(b, nil) }

// RunReusing is Run on the memory r holds (nil: none): the histories of
// a run the caller is done with (Reuse.Recycle).
func (j *Job) RunReusing(b sim.Bubble, r *Reuse) (*Judged, error) {
	if j.Lock.RealOnly != "" {
		return nil, &InputError{"lock", fmt.Errorf("%s runs on the %s", j.Lock.ID, j.Lock.RealOnly)}
	}
	cfg := j.Config
	if r != nil {
		cfg.HistoryBuf, r.sim = r.sim, nil
	}
	res, err := sim.Run(b, cfg)
	if res == nil {
		if err == nil {
			err = errors.New("the simulator returned no result")
		}
		return nil, err
	}
	return j.judge(res, err, r), nil
}

// Judge checks a run of the job's world (res, and the error sim.Run
// returned with it).
func (j *Job) Judge(res *sim.Result, runErr error) *Judged { return j.judge(res, runErr, nil) }

func (j *Job) judge(res *sim.Result, runErr error, r *Reuse) *Judged {
	opt := j.Check
	if opt.MaxUnavailable == 0 {
		opt.MaxUnavailable = j.Judging.MaxUnavailable
	}
	var buf []checker.Event
	if r != nil {
		buf, r.check = r.check, nil
	}
	h := history(buf, res, j.Config, j.Lock, j.Judging.Resource, j.Judging.Initial)
	if runErr == nil {
		runErr = factoryError(h)
	}
	c := checker.Check(h, opt)
	if runErr != nil && c.Verdict != checker.VerdictUnsafe {
		c.Verdict = checker.VerdictUnknown
		c.Reasons = append([]string{"the run did not complete: " + runErr.Error()}, c.Reasons...)
	}
	jd := &Judged{Job: j, Result: res, History: h, Check: c, Err: runErr}
	if c.First != nil {
		jd.Check.First.Cause = Cause(jd)
	}
	return jd
}

// factoryError is the first client whose lock could not be built (the
// lock's factory, Info.New, returned an error: the client recorded it and
// never ran). Such a run is not judged on its merits: nobody taking the
// lock would read as a liveness failure.
func factoryError(h checker.History) error {
	for _, e := range h.Events {
		if e.Kind == event.KindError && e.Proc != "world" {
			return fmt.Errorf("the factory failed for client %s: %s", e.Proc, e.Detail)
		}
	}
	return nil
}

// Reuse carries the memory of one judged run into the next: a worker that
// runs job after job recycles each run's histories (the simulator's and
// the checkers') once it has taken what it needs from them, and the next
// run appends to them instead of growing new ones from nothing. Growing
// a history copies it at every doubling into fresh memory, and fresh
// memory is dear: a page the process touches for the first time costs a
// fault (measured on this machine kind: some 10,000 page faults a run of
// redisson-multilock in pause-during-acquire, whose history holds 46,000
// events). The zero value is ready; a Reuse serves one goroutine.
type Reuse struct {
	sim   []sim.Event
	check []checker.Event
}

// maxReuse bounds the histories a Reuse keeps (events): a worker holds at
// most two of them between runs, some 100 MiB; a larger one is left to
// the garbage collector.
const maxReuse = 1 << 18

// Recycle takes back j's histories (j.Result.History, j.History.Events):
// the caller must not use them, nor anything sliced from them, again.
// Strings the events point to stay valid; the events are cleared so the
// buffers keep nothing else alive.
func (r *Reuse) Recycle(j *Judged) {
	if r == nil || j == nil {
		return
	}
	if j.Result != nil && cap(j.Result.History) > cap(r.sim) && cap(j.Result.History) <= maxReuse {
		clear(j.Result.History)
		r.sim = j.Result.History[:0]
		j.Result.History = nil
	}
	if cap(j.History.Events) > cap(r.check) && cap(j.History.Events) <= maxReuse {
		clear(j.History.Events)
		r.check = j.History.Events[:0]
		j.History.Events = nil
	}
}
