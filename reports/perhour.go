package reports

import (
	"fmt"
	"strings"
	"time"

	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/risk"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

// The per-hour estimate: how often each design fails per hour of
// operation under a stated background fault model. Violations are rare
// events, so the estimate is not a long run waiting for them: each fault
// class has a rate (events per process per hour) and a size distribution;
// a background scenario (bg-*.yaml, out of the matrix) injects exactly one
// fault of the class at a moment the seed's workload decides, at each size
// of its sweep: block (its strata); the measured probability that one
// fault breaks the lock, weighed by how often faults of each stratum's
// sizes happen and multiplied by the class's rate and the processes it can
// hit, is the class's violations per hour; the classes add up (faults this
// rare do not meet). Each event is counted in the stratum whose size is the
// next at or above its own (the upper edge: a longer fault breaks a lock at
// least as often), events longer than the last stratum in the last.

// bgClass is one fault class of the background model.
type bgClass struct {
	ID       string // results.json's class id
	Scenario string // the bg-*.yaml that injects one fault of the class
	What     string // the model in words (the table and results.json)
	// PerHour is the events per process per hour; Hits is which processes
	// an event can hit: "clients" (every client of the world) or "nodes"
	// (the nodes like n0: the one node, the primary, every independent
	// Redlock node).
	PerHour float64
	Hits    string
	// Survival is P(size > d) for one event.
	Survival func(d time.Duration) float64
	Source   string
}

// bgModel is the background fault model. Its figures are assumptions made
// for the report, stated with their reasons; the per-fault probabilities
// (results.json, per_hour.locks[].classes[].strata) let a reader rescale
// them to another model.
var bgModel = []bgClass{
	{ID: "process-pause", Scenario: "bg-process-pause", PerHour: 1, Hits: "clients",
		What:     "pauses of a client process of 500 ms or more, whatever stops it (CPU throttling by a cgroup quota, swapping, a VM's stolen time or live migration, SIGSTOP, and in older runtimes a stop-the-world GC), 1 per client per hour, Pareto-distributed length (x_min 500 ms, α 1.5: 1 in 8 lasts 2 s or more, 1 in 90 10 s or more)",
		Survival: pareto(500*time.Millisecond, 1.5),
		Source:   "Kleppmann 2016 (process pauses of minutes happen, rarely: GC, VM suspension, swapping, SIGSTOP); the rate and the tail's exponent are this report's assumption"},
	{ID: "ntp-step", Scenario: "bg-ntp-step", PerHour: 1.0 / 48, Hits: "nodes",
		What:     "forward steps of a Redis node's clock, one a day per node of which half forward (backward steps only lengthen leases), Pareto-distributed size (x_min 128 ms, α 1: 1 in 10 is 1.28 s or more)",
		Survival: pareto(128*time.Millisecond, 1),
		Source:   "ntpd steps instead of slewing when the offset exceeds 128 ms (ntp.org, tinker step); Jepsen's clock nemesis (bumps up to ±288 s) for the tail; the rate is this report's assumption"},
	{ID: "crash", Scenario: "bg-crash", PerHour: 1.0 / 720, Hits: "nodes",
		What:     "crashes of a Redis node without persistence, one a month per node, down for a log-uniform time between 1 s (a supervisor's restart) and 60 s (a machine's reboot)",
		Survival: logUniform(time.Second, time.Minute),
		Source:   "redis.io persistence (without AOF a restart loses every key); the rate and downtimes are this report's assumption"},
}

// perHourLocks are the designs the estimate covers.
var perHourLocks = []string{"set-nx-cad", "primary-replica", "redlock", "fencing", "redsync"}

// pareto and logUniform are the risk package's survival functions
// (risk/dist.go), which its fault profiles share.
func pareto(xmin time.Duration, alpha float64) func(time.Duration) float64 {
	return func(d time.Duration) float64 { return risk.ParetoSurvival(float64(xmin), alpha, float64(d)) }
}

func logUniform(lo, hi time.Duration) func(time.Duration) float64 {
	return func(d time.Duration) float64 { return risk.LogUniformSurvival(float64(lo), float64(hi), float64(d)) }
}

// bgCurves are the classes as curves over their scenarios' strata (the
// plan runs them like the debate's curves; they are not drawn as such).
func bgCurves() []*curve {
	var out []*curve
	for _, c := range bgModel {
		out = append(out, &curve{ID: "per_hour:" + c.ID, Scenario: c.Scenario, Locks: perHourLocks, Scale: 1})
	}
	return out
}

// PerHourResult is results.json's per_hour section.
type PerHourResult struct {
	Model []PerHourClass `json:"model"`
	Locks []PerHourLock  `json:"locks"`
	// Method says how the numbers are made.
	Method string `json:"method"`
}

// PerHourClass is one fault class of the model.
type PerHourClass struct {
	ID       string  `json:"id"`
	Scenario string  `json:"scenario"`
	Model    string  `json:"model"`
	PerHour  float64 `json:"events_per_process_per_hour"`
	Hits     string  `json:"hits"`
	Source   string  `json:"source"`
}

// PerHourLock is one design's estimate.
type PerHourLock struct {
	Lock string `json:"lock"`
	// TTLNS is the lease every class ran the design with (the bg-*.yaml
	// files give each design the same one).
	TTLNS int64 `json:"ttl_ns"`
	// ViolationsPerHour is the expected violations per hour of the world
	// (its clients and nodes), with a conservative 95% interval.
	ViolationsPerHour float64          `json:"violations_per_hour"`
	CI95              [2]float64       `json:"violations_per_hour_ci95"`
	Classes           []PerHourLockCls `json:"classes"`
}

// PerHourLockCls is one class's share of a design's estimate.
type PerHourLockCls struct {
	Class             string       `json:"class"`
	Processes         int          `json:"processes"` // how many the class can hit
	ViolationsPerHour float64      `json:"violations_per_hour"`
	CI95              [2]float64   `json:"violations_per_hour_ci95"`
	Strata            []PerHourStr `json:"strata"`
	Bins              []PerHourBin `json:"bins"`
}

// PerHourBin is a range of fault sizes between two strata (ToTTL nil: to
// infinity) and the share of the class's events in it.
type PerHourBin struct {
	FromTTL float64  `json:"from_ttl"`
	ToTTL   *float64 `json:"to_ttl,omitempty"`
	Weight  float64  `json:"weight"`
}

// PerHourStr is one stratum: a fault size and how often one such fault
// broke the lock.
type PerHourStr struct {
	SizeTTL    float64    `json:"size_ttl"`
	Runs       int        `json:"runs"`
	UnsafeRuns int        `json:"unsafe_runs"`
	CI95       [2]float64 `json:"unsafe_rate_ci95"`
}

const perHourMethod = "For each fault class, one fault per run at each size of its scenario's sweep (the strata, in TTLs of the lock). " +
	"The sizes between two strata form a bin, weighed by the share of the model's events in it; the rate in a bin is taken to lie between the rates at its edges " +
	"(the mean of the two is the estimate; a fault of size 0 breaks nothing; past the last stratum the rate stays). " +
	"Violations per hour = Σ classes: events per process per hour × processes it can hit × Σ bins: weight × rate. " +
	"The interval adds up each bin's lowest and highest 95% Wilson bound at its edges the same way: conservative, wider than a joint 95% interval, " +
	"and its top is mostly the first bins, where most events fall and no run broke a lock: a few dozen runs cannot rule out a small rate there."

// perHour computes the estimate from the plan's background curves (nil
// when the plan has none).
func (p *Plan) perHour() *PerHourResult {
	if len(p.bgCurves) != len(bgModel) {
		return nil // a part of the model is no total: perHourMissing says so
	}
	res := &PerHourResult{Method: perHourMethod}
	for _, c := range bgModel {
		res.Model = append(res.Model, PerHourClass{ID: c.ID, Scenario: c.Scenario, Model: c.What, PerHour: round6(c.PerHour), Hits: c.Hits, Source: c.Source})
	}
	for _, id := range perHourLocks {
		info, err := catalogue.Get(id)
		if err != nil {
			continue
		}
		pl := PerHourLock{Lock: id}
		// The lease as the background files parameterise it (run.Job.Lock
		// is the catalogue's): strata are in TTLs of it.
		ttl := info.TTL
		if s, err := scenarios.Get(bgModel[0].Scenario); err == nil && s.File != nil {
			if parts, err := s.File.Parts(info, 1, scenarios.Params{}); err == nil {
				ttl = parts.Lock.TTL
			}
		}
		pl.TTLNS = int64(ttl)
		have := false
		for _, cl := range bgModel {
			cv := p.bgCurve(cl.ID)
			if cv == nil {
				continue
			}
			var pts []*point
			for _, pt := range cv.points {
				if pt.lock == id {
					pts = append(pts, pt)
				}
			}
			if len(pts) == 0 {
				continue
			}
			have = true
			n := processes(cl.Hits, info, cl.Scenario)
			pc := PerHourLockCls{Class: cl.ID, Processes: n}
			est, lo, hi := 0.0, 0.0, 0.0
			// A bin is the sizes between two strata (from 0 to the first;
			// the last stratum to infinity): its rate lies between the
			// rates at its edges (a fault of size 0 breaks nothing; past
			// the last stratum the rate stays).
			prev, prevSize, prevS := edge{}, 0.0, 1.0
			for k, pt := range pts {
				r := stats.Rate{K: pt.Unsafe, N: pt.Runs}
				rl, rh := r.Interval()
				pc.Strata = append(pc.Strata, PerHourStr{SizeTTL: pt.value, Runs: pt.Runs, UnsafeRuns: pt.Unsafe, CI95: [2]float64{round6(rl), round6(rh)}})
				cur := edge{r.P(), rl, rh}
				sv := cl.Survival(time.Duration(pt.value * float64(ttl)))
				bins := []bin{{prevSize, pt.value, prevS - sv, prev, cur}}
				if k == len(pts)-1 {
					bins = append(bins, bin{pt.value, -1, sv, cur, cur})
				}
				for _, b := range bins {
					est += b.w * (b.a.p + b.b.p) / 2
					lo += b.w * min(b.a.lo, b.b.lo)
					hi += b.w * max(b.a.hi, b.b.hi)
					pb := PerHourBin{FromTTL: b.from, Weight: round6(b.w)}
					if b.to >= 0 {
						to := b.to
						pb.ToTTL = &to
					}
					pc.Bins = append(pc.Bins, pb)
				}
				prev, prevSize, prevS = cur, pt.value, sv
			}
			k := cl.PerHour * float64(n)
			pc.ViolationsPerHour, pc.CI95 = round6(k*est), [2]float64{round6(k * lo), round6(k * hi)}
			pl.ViolationsPerHour += k * est
			pl.CI95[0] += k * lo
			pl.CI95[1] += k * hi
			pl.Classes = append(pl.Classes, pc)
		}
		if !have {
			continue
		}
		pl.ViolationsPerHour = round6(pl.ViolationsPerHour)
		pl.CI95 = [2]float64{round6(pl.CI95[0]), round6(pl.CI95[1])}
		res.Locks = append(res.Locks, pl)
	}
	return res
}

// edge is a stratum's measured rate: the estimate and its 95% bounds (the
// zero edge: a fault of size 0, which breaks nothing).
type edge struct{ p, lo, hi float64 }

// bin is the fault sizes from one stratum to the next (to < 0: infinity),
// the share w of the class's events in it, and the rates at its edges.
type bin struct {
	from, to float64
	w        float64
	a, b     edge
}

// perHourMissing names the background scenarios a plan lacks for its
// per-hour estimate ("" when it has them all or none).
func (p *Plan) perHourMissing() string {
	if len(p.bgCurves) == 0 || len(p.bgCurves) == len(bgModel) {
		return ""
	}
	var miss []string
	for _, c := range bgModel {
		if p.bgCurve(c.ID) == nil {
			miss = append(miss, c.Scenario)
		}
	}
	return strings.Join(miss, ", ")
}

func (p *Plan) bgCurve(class string) *curve {
	for _, c := range p.bgCurves {
		if c.ID == "per_hour:"+class {
			return c
		}
	}
	return nil
}

// processes is how many processes of the lock's world a class can hit
// (the world built when the plan was laid out, so it builds).
func processes(hits string, info locks.Info, scenario string) int {
	job, err := run.Spec{Scenario: scenario, Lock: info.ID, Seed: 1}.Build()
	switch {
	case err != nil:
		return 0
	case hits == "clients":
		return job.Config.Clients
	case info.Topology == locks.Independent:
		return len(job.Config.Nodes)
	}
	return 1 // one node, or the primary of a replicated world
}

// perHourTable renders the estimate: a row a design.
func perHourTable(r *PerHourResult) *pauseTable {
	t := &pauseTable{XLabel: "lock"}
	for _, c := range r.Model {
		t.Locks = append(t.Locks, c.ID)
	}
	t.Locks = append(t.Locks, "total per hour", "one violation every")
	for _, l := range r.Locks {
		row := pauseRow{Value: l.Lock}
		for _, c := range r.Model {
			txt := ""
			for _, lc := range l.Classes {
				if lc.Class == c.ID {
					txt = fmt.Sprintf("%s [%s, %s]", perHourText(lc.ViolationsPerHour), perHourText(lc.CI95[0]), perHourText(lc.CI95[1]))
				}
			}
			row.Cells = append(row.Cells, txt)
		}
		row.Cells = append(row.Cells, fmt.Sprintf("%s [%s, %s]", perHourText(l.ViolationsPerHour), perHourText(l.CI95[0]), perHourText(l.CI95[1])),
			every(l.ViolationsPerHour))
		t.Rows = append(t.Rows, row)
	}
	return t
}

func perHourText(v float64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%.3g", v)
}

// every is the mean time between violations.
func every(perHour float64) string {
	if perHour <= 0 {
		return "none measured"
	}
	h := 1 / perHour
	switch {
	case h < 1:
		return fmt.Sprintf("%.0f min", h*60)
	case h < 48:
		return fmt.Sprintf("%.1f h", h)
	case h < 24*730:
		return fmt.Sprintf("%.0f days", h/24)
	}
	return fmt.Sprintf("%.0f years", h/24/365)
}

// perHourChart draws each design's violations per hour with its interval.
func perHourChart(r *PerHourResult) charts.BarChart {
	bc := charts.BarChart{Title: "Expected violations per hour under the background fault model, each design at the TTL under its name", YLabel: "violations per hour (log scale)", Floor: 1e-5}
	for _, l := range r.Locks {
		name := l.Lock
		if l.TTLNS > 0 {
			name += fmt.Sprintf(" (TTL %v)", time.Duration(l.TTLNS))
		}
		bc.Bars = append(bc.Bars, charts.Bar{Name: name, Value: l.ViolationsPerHour, Lo: l.CI95[0], Hi: l.CI95[1]})
	}
	return bc
}
