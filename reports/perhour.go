package reports

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/risk"
	"github.com/locksim/locksim/sim"
	"gonum.org/v1/plot/vg"
)

// The per-year estimate: how many times a year each design of the debate,
// at one stated TTL, lets two holders in under the fault profile locksim
// ships (risk/default.yaml, every number with its source), with the
// sensitivity of each total to each class's rate. It is `locksim risk
// --lock ID --ttl 10s` for each design (package risk: conditional
// simulation, one fault per run, sizes stratified in TTLs), run after the
// matrix; the report prints the profile it used.

// PerYearTTL is the lease every design of the estimate is played at.
const PerYearTTL = 10 * time.Second

// perYearLocks are the designs the estimate covers (those of them in the
// report).
var perYearLocks = []string{"set-nx-cad", "primary-replica", "redlock", "fencing", "redsync"}

// Runs a stratum on average (risk.Options.Seeds): the full report's and
// --quick's.
const (
	perYearSeeds      = 10
	perYearQuickSeeds = 4
)

// PerYearResult is results.json's per_year section.
type PerYearResult struct {
	TTLNS int64 `json:"ttl_ns"`
	// Profile is the profile's name, ProfileYAML the file itself.
	Profile     string `json:"profile"`
	ProfileYAML string `json:"profile_yaml"`
	Seeds       int    `json:"runs_per_stratum"`
	// Locks are each design's estimate (risk.Result: per class and in
	// total, with their strata and intervals).
	Locks []*risk.Result `json:"locks"`
}

// PerHourResult was results.json's per_hour section, the per-hour
// estimate the per-year one replaced.
//
// Deprecated: no longer filled; see PerYearResult.
type PerHourResult struct {
	Model  []PerHourClass `json:"model"`
	Locks  []PerHourLock  `json:"locks"`
	Method string         `json:"method"`
}

// PerHourClass was one fault class of the per-hour model.
//
// Deprecated: see PerYearResult.
type PerHourClass struct {
	ID       string  `json:"id"`
	Scenario string  `json:"scenario"`
	Model    string  `json:"model"`
	PerHour  float64 `json:"events_per_process_per_hour"`
	Hits     string  `json:"hits"`
	Source   string  `json:"source"`
}

// PerHourLock was one design's per-hour estimate.
//
// Deprecated: see PerYearResult.
type PerHourLock struct {
	Lock              string           `json:"lock"`
	TTLNS             int64            `json:"ttl_ns"`
	ViolationsPerHour float64          `json:"violations_per_hour"`
	CI95              [2]float64       `json:"violations_per_hour_ci95"`
	Classes           []PerHourLockCls `json:"classes"`
}

// PerHourLockCls was one class's share of a design's per-hour estimate.
//
// Deprecated: see PerYearResult.
type PerHourLockCls struct {
	Class             string       `json:"class"`
	Processes         int          `json:"processes"`
	ViolationsPerHour float64      `json:"violations_per_hour"`
	CI95              [2]float64   `json:"violations_per_hour_ci95"`
	Strata            []PerHourStr `json:"strata"`
	Bins              []PerHourBin `json:"bins"`
}

// PerHourBin was a range of fault sizes of the per-hour estimate.
//
// Deprecated: see PerYearResult.
type PerHourBin struct {
	FromTTL float64  `json:"from_ttl"`
	ToTTL   *float64 `json:"to_ttl,omitempty"`
	Weight  float64  `json:"weight"`
}

// PerHourStr was one stratum of the per-hour estimate.
//
// Deprecated: see PerYearResult.
type PerHourStr struct {
	SizeTTL    float64    `json:"size_ttl"`
	Runs       int        `json:"runs"`
	UnsafeRuns int        `json:"unsafe_runs"`
	CI95       [2]float64 `json:"unsafe_rate_ci95"`
}

// perYearDesigns are the estimate's designs in the report, in
// perYearLocks' order (none: no section).
func (p *Plan) perYearDesigns() []string {
	var in []string
	for _, c := range p.cells {
		in = append(in, c.Lock.ID)
	}
	var out []string
	for _, id := range perYearLocks {
		if info, err := catalogue.Get(id); err == nil && info.Unavailable == "" && slices.Contains(in, id) {
			out = append(out, id)
		}
	}
	return out
}

// runPerYear runs the estimate for the report's designs in bubble b
// (after the matrix: Run calls it, when Options.PerYear asks), saying
// each design on log; a design's estimate the result store holds (nil:
// none) is taken from it, and one made is kept there; a
// cancelled ctx stops it between designs.
func (p *Plan) runPerYear(ctx context.Context, b sim.Bubble, log io.Writer, store *Store) error {
	ids := p.perYearDesigns()
	if !p.opt.PerYear || len(ids) == 0 {
		return nil
	}
	prof, err := risk.Default()
	if err != nil {
		return fmt.Errorf("per-year estimate: %v", err)
	}
	seeds := perYearSeeds
	if p.opt.Quick {
		seeds = perYearQuickSeeds
	}
	res := &PerYearResult{TTLNS: int64(PerYearTTL), Profile: prof.Name(), ProfileYAML: string(risk.DefaultYAML()), Seeds: seeds}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		o := risk.Options{Lock: id, TTL: PerYearTTL, Clients: 3, Seeds: seeds, Seed: 1, Profile: prof}
		if r, ok := store.perYear(o); ok {
			fmt.Fprintf(log, "locksim report: per-year estimate of %s from the result store\n", id)
			res.Locks = append(res.Locks, r)
			continue
		}
		fmt.Fprintf(log, "locksim report: per-year estimate of %s (%d runs)\n", id, o.Plan())
		r, err := risk.Estimate(b, o, nil)
		if err != nil {
			return fmt.Errorf("per-year estimate of %s: %v", id, err)
		}
		store.putPerYear(o, r)
		res.Locks = append(res.Locks, r)
	}
	p.perYear = res
	return nil
}

// perYearTable is the estimate a row a design: each class's violations
// per year [95%], the total and the mean time between violations.
func perYearTable(r *PerYearResult) *pauseTable {
	t := &pauseTable{XLabel: "lock"}
	var classes []string
	for _, l := range r.Locks {
		for _, c := range l.Classes {
			if !slices.Contains(classes, c.ID) {
				classes = append(classes, c.ID)
			}
		}
	}
	t.Locks = append(append(t.Locks, classes...), "total per year", "one violation every")
	for _, l := range r.Locks {
		row := pauseRow{Value: l.Lock}
		for _, id := range classes {
			txt := ""
			for _, c := range l.Classes {
				switch {
				case c.ID != id:
				case c.NA != "":
					txt = "n/a"
				default:
					txt = fmt.Sprintf("%s [%s, %s]", perYearText(c.PerYear), perYearText(c.PerYearCI95[0]), perYearText(c.PerYearCI95[1]))
				}
			}
			row.Cells = append(row.Cells, txt)
		}
		row.Cells = append(row.Cells, fmt.Sprintf("%s [%s, %s]", perYearText(l.PerYear), perYearText(l.PerYearCI95[0]), perYearText(l.PerYearCI95[1])),
			risk.Every(l.PerYear))
		t.Rows = append(t.Rows, row)
	}
	return t
}

func perYearText(v float64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%.3g", v)
}

// profileTable prints the profile: a row a class.
func profileTable(r *PerYearResult) *pauseTable {
	t := &pauseTable{XLabel: "class", Locks: []string{"kind", "events per process", "hits", "size", "source of the rate", "source of the size"}}
	if len(r.Locks) == 0 {
		return t
	}
	for _, c := range r.Locks[0].Classes {
		t.Rows = append(t.Rows, pauseRow{Value: c.ID, Cells: []string{string(c.Kind), perYearText(c.EventsPerYear) + " a year", c.Hits, c.Size, c.Source.Rate, c.Source.Size}})
	}
	return t
}

// perYearFloor is the charts' log scale's bottom (violations a year).
const perYearFloor = 1e-3

// perYearChart draws each design's total with its interval.
func perYearChart(r *PerYearResult) charts.BarChart {
	bc := charts.BarChart{Title: fmt.Sprintf("Expected violations per year under the default fault profile, every design scaled to TTL %v", time.Duration(r.TTLNS)),
		YLabel: "violations per year (log scale)", Floor: perYearFloor}
	for _, l := range r.Locks {
		bc.Bars = append(bc.Bars, charts.Bar{Name: l.Lock, Value: l.PerYear, Lo: l.PerYearCI95[0], Hi: l.PerYearCI95[1]})
	}
	return bc
}

// sensitivityChart draws, for each design and each class with a share of
// its total, the total (the bar) and the totals were the class's rate 10×
// lower and 10× higher (the whisker); when no class of any design has a
// share (nothing broke), every class that applies, all at zero.
func sensitivityChart(r *PerYearResult) charts.BarChart {
	bc := charts.BarChart{Title: fmt.Sprintf("Sensitivity: each design's total (TTL %v) were one class's rate 10x lower or higher", time.Duration(r.TTLNS)),
		YLabel: "violations per year (log scale)", Floor: perYearFloor, Whisker: "total at 1/10 to 10x the class's rate"}
	for _, all := range []bool{false, true} {
		for _, l := range r.Locks {
			for _, s := range l.Sensitivities() {
				if s.Share > 0 || all {
					bc.Bars = append(bc.Bars, charts.Bar{Name: l.Lock + "\n" + s.Class, Value: l.PerYear, Lo: s.Down, Hi: s.Up})
				}
			}
		}
		if len(bc.Bars) > 0 {
			break
		}
	}
	if n := len(bc.Bars); n > 8 {
		bc.Width = vg.Length(n) * vg.Inch
	}
	return bc
}

// perYearFigures are the section's two figures: the totals with the
// table of classes, and the sensitivity chart with the profile printed
// (save draws a chart into the report's img/ and returns its PNG's and
// SVG's paths).
func perYearFigures(r *PerYearResult, save func(chartSpec, string) (string, string, error)) ([]figure, error) {
	png, svg, err := save(perYearChart(r), "per-year")
	if err != nil {
		return nil, err
	}
	out := []figure{{Title: perYearTitle, PNG: png, SVG: svg, Table: perYearTable(r),
		Caption: fmt.Sprintf("The debate's question: how many times a year does each design, played at the same lease (TTL %v: its own durations scaled to it, so this differs from the TTL the matrix plays it at), let two holders in, in a world of 3 clients under the fault profile locksim ships (%s, printed below with the source of every number)? "+
			"Each is 'locksim risk --lock ID --ttl %v --seeds %d'. %s The bars are on a log scale from %g (a zero is drawn there); the strata and their counts are in results.json (per_year).",
			time.Duration(r.TTLNS), r.Profile, time.Duration(r.TTLNS), r.Seeds, risk.Method, perYearFloor)}}
	png, svg, err = save(sensitivityChart(r), "per-year-sensitivity")
	if err != nil {
		return nil, err
	}
	return append(out, figure{Title: "Sensitivity to the fault profile", PNG: png, SVG: svg, Table: profileTable(r),
		Caption: "Which inputs dominate: for each design and each class with a share of its total, the bar is the total and the whisker the totals were that class's rate 10x lower or 10x higher (the classes add up, so only its share moves). " +
			"A class with no violation measured moves no point estimate and is left out (its interval's top is in the table above). The profile the estimate used, a row a class, every number with its source or the word assumption:"}), nil
}
