package sweep

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/run"
)

// Finish writes a complete sweep's results.csv into dir, the rate table to
// summary (nil: none), and, if draw, the rate charts (rates-*.png and
// .svg; their paths follow the table).
func Finish(dir string, s *Spec, lines []Line, summary io.Writer, draw bool) error {
	if summary == nil {
		summary = io.Discard
	}
	if err := WriteCSV(filepath.Join(dir, CSVFile), lines); err != nil {
		return err
	}
	t := tabulate(s, lines)
	if err := t.write(summary, s); err != nil {
		return err
	}
	fmt.Fprintf(summary, "results: %s (%d runs), %s\n", filepath.Join(dir, ResultsFile), len(lines), filepath.Join(dir, CSVFile))
	if !draw || len(lines) == 0 { // an empty shard has nothing to draw
		return nil
	}
	paths, err := t.draw(dir, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(summary, "charts: %s\n", strings.Join(paths, ", "))
	return nil
}

type cellKey struct {
	value float64
	lock  string
}

// table is a sweep's lines tallied per (value, lock).
type table struct {
	tallies  map[cellKey]*Tally
	short    map[cellKey]int // pause sweep: runs left out (Outcome.PauseShort)
	anyShort bool
	values   []float64
}

func tabulate(s *Spec, lines []Line) *table {
	t := &table{tallies: map[cellKey]*Tally{}, short: map[cellKey]int{}, values: s.Values}
	if len(t.values) == 0 {
		t.values = []float64{0}
	}
	for _, l := range lines {
		k := cellKey{lock: l.Lock}
		if l.Value != nil {
			k.value = *l.Value
		}
		c := t.tallies[k]
		if c == nil {
			c = &Tally{}
			t.tallies[k] = c
		}
		if l.PauseShort && s.Param == "pause" {
			// Not a run of the pause asked for (the report does the same).
			t.short[k]++
			t.anyShort = true
			continue
		}
		c.Add(l.Outcome, l.Seed)
	}
	return t
}

func (t *table) write(w io.Writer, s *Spec) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "lock\truns\tunsafe (95% Wilson)\tlease overlap\tresource violation\tstale section\tfenced\tliveness\tstarved\tunknown"
	if s.Param != "" {
		head = s.Param + "\t" + head
	}
	if t.anyShort {
		head += "\tpause short (left out)"
	}
	fmt.Fprintln(tw, head)
	for _, v := range t.values {
		for _, lock := range s.Locks {
			c := t.tallies[cellKey{v, lock}]
			if c == nil {
				continue
			}
			row := fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d", lock, c.Runs, stats.Rate{K: c.Unsafe, N: c.Runs},
				pct(c.Overlap, c.Runs), pct(c.Resource, c.Runs), pct(c.Stale, c.Runs), pct(c.Fenced, c.Runs), c.Liveness, c.Starved, c.Unknown)
			if s.Param != "" {
				row = run.FormatValue(v) + "\t" + row
			}
			if t.anyShort {
				row += fmt.Sprintf("\t%d", t.short[cellKey{v, lock}])
			}
			fmt.Fprintln(tw, row)
		}
	}
	return tw.Flush()
}

// draw draws the rates against the parameter (three charts), or, without
// one, lease overlaps beside resource violations per lock.
func (t *table) draw(dir string, s *Spec) ([]string, error) {
	var paths []string
	save := func(fig charts.Figure, name string) error {
		p, err := charts.SaveAll(fig, filepath.Join(dir, name))
		paths = append(paths, p...)
		return err
	}
	if s.Param != "" && len(s.Values) > 1 {
		xlabel := s.Param
		if u := s.unit(); u != "" {
			xlabel += " (" + u + ")"
		}
		for _, m := range []struct {
			name, ylabel string
			k            func(*Tally) int
		}{
			{"unsafe", "runs judged unsafe", func(t *Tally) int { return t.Unsafe }},
			{"overlap", "runs with a lease overlap", func(t *Tally) int { return t.Overlap }},
			{"resource", "runs with a resource violation", func(t *Tally) int { return t.Resource }},
		} {
			rc := charts.RateChart{Title: fmt.Sprintf("%s: %s vs %s", s.Scenario, m.ylabel, s.Param), XLabel: xlabel, YLabel: m.ylabel}
			for _, lock := range s.Locks {
				rs := charts.RateSeries{Name: lock}
				for _, v := range s.Values {
					if c := t.tallies[cellKey{v, lock}]; c != nil {
						rs.Points = append(rs.Points, charts.RatePoint{X: v, Rate: stats.Rate{K: m.k(c), N: c.Runs}})
					}
				}
				rc.Series = append(rc.Series, rs)
			}
			fig, err := rc.Figure()
			if err != nil {
				return nil, err
			}
			if err := save(fig, "rates-"+m.name); err != nil {
				return nil, err
			}
		}
		return paths, nil
	}
	fc := charts.FencingChart{Title: fmt.Sprintf("%s: lease overlap vs resource violation", s.Scenario)}
	for _, lock := range s.Locks {
		if c := t.tallies[cellKey{t.values[0], lock}]; c != nil {
			fc.Groups = append(fc.Groups, charts.FencingGroup{Name: lock, Overlap: stats.Rate{K: c.Overlap, N: c.Runs}, Resource: stats.Rate{K: c.Resource, N: c.Runs}})
		}
	}
	fig, err := fc.Figure()
	if err != nil {
		return nil, err
	}
	if err := save(fig, "rates-overlap-vs-resource"); err != nil {
		return nil, err
	}
	return paths, nil
}

func pct(k, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%d (%.1f%%)", k, 100*float64(k)/float64(n))
}
