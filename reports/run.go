package reports

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// Exec says how a plan runs.
type Exec struct {
	// Workers is how many runs go at once (at least 1).
	Workers int
	// Worker is a worker process's command line (sweep.NewRunners); empty:
	// every run in this process.
	Worker []string
	// Log receives the worker processes' stderr (nil: discarded).
	Log io.Writer
	// Store, if set, answers the runs it holds and keeps the others
	// (OpenStore); nil: every run runs.
	Store *Store
	// Progress, if set, is called after each run with the runs done and
	// their number (the number grows once, when the timelines are known).
	Progress func(done, total int)
}

// Run runs every simulation of the plan in bubbles from b, then reruns
// each unsafe cell's first unsafe seed and draws its timeline into
// dir/timelines (its trace must hash as the first run's did, and be
// unsafe). Cancelling ctx stops it after the running simulations; the
// plan is then incomplete and Run returns ctx's error.
//
// When a rerun disagrees with what the result store gave for its cell (a
// forged or swapped entry that passed its checksum), the store is wrong,
// not the simulator: the entries are dropped and the plan is run again
// with that cell's runs run anew (and stored again). A cell whose runs all
// ran and still disagree is a determinism bug: an internal error. Each
// round distrusts one more cell, so there are at most as many rounds as
// cells.
func (p *Plan) Run(ctx context.Context, b sim.Bubble, dir string, ex Exec) error {
	log := ex.Log
	if log == nil {
		log = io.Discard
	}
	distrust := map[string]bool{}
	for {
		err := p.runOnce(ctx, b, dir, ex, log, distrust)
		var d *distrusted
		if !errors.As(err, &d) || distrust[d.cell] {
			if err == nil {
				err = p.runPerYear(ctx, b, log, ex.Store)
			}
			p.store = ex.Store // Write's charts
			return err
		}
		fmt.Fprintf(log, "locksim: result store: %v; its entries are dropped and the report runs again, that cell's runs anew\n", d)
		distrust[d.cell] = true
		fresh, err := NewPlan(p.opt)
		if err != nil {
			return err
		}
		*p = *fresh
	}
}

// distrusted is a timeline rerun that disagreed with the result store's
// answer for its cell.
type distrusted struct {
	cell string // scenario × lock
	what string
}

func (d *distrusted) Error() string { return d.what }

// cellName names a cell, for distrust.
func cellName(c *Cell) string { return c.Scenario.ID + " × " + c.Lock.ID }

func (p *Plan) runOnce(ctx context.Context, b sim.Bubble, dir string, ex Exec, log io.Writer, distrust map[string]bool) error {
	progress := func(done, total int) {
		if ex.Progress != nil {
			ex.Progress(done, total)
		}
	}
	total := len(p.jobs)
	workers := min(max(1, ex.Workers), len(p.jobs))
	runners, err := sweep.NewRunners(workers, b, ex.Worker, log)
	if err != nil {
		return err
	}
	// A seed of a cell that has stopped is skipped (sequential.go): the
	// workers read its done flag, set by emit once the rule holds.
	_, err = sweep.RunOrdered(ctx, workers, sweep.Window, len(p.jobs), func(w, i int) (ran, error) {
		if p.jobs[i].seq.done.Load() {
			return ran{skipped: true}, nil
		}
		j := p.jobs[i]
		o, hit, err := ex.Store.run(runners[w], j.req, j.cell != nil && distrust[cellName(j.cell)])
		return ran{o: o, hit: hit}, err
	}, func(i int, r ran) error {
		j := p.jobs[i]
		switch {
		case r.skipped:
			p.skipped++
		case j.seq.stop != "":
			// Started before its cell stopped: paid for, not counted.
			p.overrun++
			p.cpu += r.o.CPU
		default:
			p.count(j, r.o, r.hit)
		}
		progress(i+1, total)
		return nil
	})
	if cerr := sweep.CloseRunners(runners); cerr != nil && err == nil {
		err = fmt.Errorf("a worker process failed: %v", cerr)
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var unsafe []*Cell
	for _, c := range p.cells {
		if c.HasUnsafe {
			unsafe = append(unsafe, c)
		}
	}
	// Timelines: rerun each unsafe cell's first unsafe seed (the same
	// trace, checked by its hash) and draw it.
	total += len(unsafe)
	p.reruns = len(unsafe)
	n := min(max(1, ex.Workers), max(1, len(unsafe)))
	runners, err = sweep.NewRunners(n, b, ex.Worker, log)
	if err != nil {
		return err
	}
	_, err = sweep.RunOrdered(ctx, n, n, len(unsafe), func(w, i int) (drawn, error) {
		c := unsafe[i]
		name := filepath.Join("timelines", c.Scenario.ID+"--"+c.Lock.ID+".png")
		req := sweep.Request{Spec: c.At(c.FirstUnsafe),
			Timeline: &sweep.TimelineRequest{Path: filepath.Join(dir, name), Title: fmt.Sprintf("%s × %s, seed %d", c.Scenario.ID, c.Lock.ID, c.FirstUnsafe),
				Caption: []string{"repro: " + c.Repro(c.FirstUnsafe)}}}
		fresh := distrust[cellName(c)]
		o, hit, err := ex.Store.run(runners[w], req, fresh)
		if err != nil {
			return drawn{}, err
		}
		if o.TraceSHA256 != c.FirstUnsafeSHA || o.Verdict != checker.VerdictUnsafe {
			if (hit || c.firstUnsafeStored) && !fresh {
				ex.Store.drop(req)
				ex.Store.drop(sweep.Request{Spec: req.Spec})
				os.Remove(req.Timeline.Path) // a picture of the wrong run, if any
				return drawn{}, &distrusted{cellName(c), fmt.Sprintf("%s seed %d is %s with trace %.12s… in the store, but %s with trace %.12s… run again",
					cellName(c), c.FirstUnsafe, checker.VerdictUnsafe, c.FirstUnsafeSHA, o.Verdict, o.TraceSHA256)}
			}
			return drawn{}, fmt.Errorf("internal error: %s × %s seed %d did not reproduce (trace %s, %s; first run %s, unsafe)",
				c.Scenario.ID, c.Lock.ID, c.FirstUnsafe, o.TraceSHA256, o.Verdict, c.FirstUnsafeSHA)
		}
		return drawn{filepath.ToSlash(name), o.Story, o.Minimal}, nil
	}, func(i int, d drawn) error {
		unsafe[i].Timeline, unsafe[i].Story, unsafe[i].Minimal = d.timeline, d.story, d.minimal
		progress(len(p.jobs)+i+1, total)
		return nil
	})
	if cerr := sweep.CloseRunners(runners); cerr != nil && err == nil {
		err = fmt.Errorf("a worker process failed: %v", cerr)
	}
	if err != nil {
		return err
	}
	return ctx.Err()
}

// ran is a planned run's outcome, or that it was skipped: its cell had
// stopped.
type ran struct {
	o       run.Outcome
	hit     bool // o came from the result store
	skipped bool
}

// count adds a run's outcome to its cell or point, in seed order, and
// applies the stopping rule to the seeds counted so far.
// stored: o came from the result store.
func (p *Plan) count(j job, o run.Outcome, stored bool) {
	seed := j.req.Spec.Seed
	p.cpu += o.CPU
	var t *run.Tally
	switch {
	case j.point != nil && j.point.leavesShortOut() && o.PauseShort:
		// Not a run of the pause the pause sweep asked for: counted
		// apart. (A debate curve runs its scenario's own schedule,
		// which counts as it comes.)
		j.point.short++
		t = &j.point.Tally
	case j.point != nil:
		if o.PauseShort {
			j.point.short++ // a debate curve counts it, and says so
		}
		j.point.Add(o, seed)
		t = &j.point.Tally
	default:
		c := j.cell
		if o.Verdict == checker.VerdictUnsafe && (!c.HasUnsafe || seed < c.FirstUnsafe) {
			c.FirstUnsafeSHA, c.firstUnsafeStored = o.TraceSHA256, stored
		}
		c.Add(o, seed)
		t = &c.Tally
	}
	s := j.seq
	s.seeds++
	if s.stop = stopReason(t, s.seeds, s.cap, p.opt.Fixed); s.stop != "" {
		s.done.Store(true)
	}
}

// drawn is an unsafe cell's rerun: its timeline's path and its story.
type drawn struct {
	timeline, story string
	minimal         *checker.MinimalHistory
}
