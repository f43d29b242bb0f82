package risk

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Sensitivity is the total were one class's rate 10 times higher or lower
// (the classes add up, so only that class's share moves).
type Sensitivity struct {
	Class string  `json:"class"`
	Share float64 `json:"share"` // of the total
	Up    float64 `json:"total_if_10x"`
	Down  float64 `json:"total_if_tenth"`
}

// Sensitivities are a line a class that applies, in profile order.
func (r *Result) Sensitivities() []Sensitivity {
	var out []Sensitivity
	for _, c := range r.Classes {
		if c.NA != "" {
			continue
		}
		s := Sensitivity{Class: c.ID, Up: r.PerYear + 9*c.PerYear, Down: r.PerYear - 0.9*c.PerYear}
		if r.PerYear > 0 {
			s.Share = c.PerYear / r.PerYear
		}
		out = append(out, s)
	}
	return out
}

// num is a rate in three significant digits ("0" for zero).
func num(v float64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%.3g", v)
}

// Every is the mean time between violations in words.
func Every(perYear float64) string {
	if perYear <= 0 {
		return "none measured"
	}
	y := 1 / perYear
	switch {
	case y < 1.0/8766:
		return fmt.Sprintf("%.0f min", y*8766*60)
	case y < 2.0/365.25:
		return fmt.Sprintf("%.1f h", y*8766)
	case y < 2:
		return fmt.Sprintf("%.0f days", y*365.25)
	}
	return fmt.Sprintf("%.3g years", y)
}

// WriteText prints the estimate: a line a class, the total, the
// sensitivity lines and the method.
func (r *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "lock %s, TTL %v, %d clients, profile %s, %d runs a stratum on average, shared out by weight (seed %d): %d runs, %d unknown\n\n",
		r.Lock, r.TTL, r.Clients, r.Profile, r.Seeds, r.Seed, r.Runs, r.Unknown)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "class\trate/process\thits\tsize\tP(violation | fault) [95%]\tviolations/year [95%]\t")
	for _, c := range r.Classes {
		if c.NA != "" {
			fmt.Fprintf(tw, "%s\t%s/year\t-\t%s\tn/a: %s\t-\t\n", c.ID, num(c.EventsPerYear), c.Size, c.NA)
			continue
		}
		hits := c.Hits
		if c.Processes == 1 {
			hits = strings.TrimSuffix(hits, "s")
		}
		fmt.Fprintf(tw, "%s\t%s/year\t%d %s\t%s\t%s [%s, %s]\t%s [%s, %s]\t\n", c.ID, num(c.EventsPerYear), c.Processes, hits, c.Size,
			num(c.P), num(c.PCI95[0]), num(c.PCI95[1]), num(c.PerYear), num(c.PerYearCI95[0]), num(c.PerYearCI95[1]))
	}
	fmt.Fprintf(tw, "total\t\t\t\t\t%s [%s, %s]\t\n", num(r.PerYear), num(r.PerYearCI95[0]), num(r.PerYearCI95[1]))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "one violation every %s (point estimate)\n\n", Every(r.PerYear))
	fmt.Fprintln(w, "sensitivity: the total if one class's rate were 10x higher / 10x lower")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range r.Sensitivities() {
		fmt.Fprintf(tw, "  %s\t%.0f%% of the total\t10x: %s\t1/10: %s\t\n", s.Class, 100*s.Share, num(s.Up), num(s.Down))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nmethod: %s\n", Method)
	return err
}
