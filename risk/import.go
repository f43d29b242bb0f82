package risk

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Importers turn telemetry an operator already has into a profile's
// classes. Each says what its input cannot tell.

// MaxImportLines bounds an imported log.
const MaxImportLines = 1_000_000

// gctraceLine is one line of Go's GODEBUG=gctrace=1 output:
// "gc 7 @0.095s 5%: 2.6+25+0.025 ms clock, ...". The first and last of
// the clock times are the two stop-the-world phases (sweep termination,
// mark termination); the middle one is concurrent marking, not a pause.
var gctraceLine = regexp.MustCompile(`^gc \d+ @([0-9.]+)s \d+%: ([0-9.]+)\+([0-9.]+)\+([0-9.]+) ms clock`)

// GCTraceNote is what a gctrace cannot tell.
const GCTraceNote = "a Go gctrace sees only the runtime's own stop-the-world phases: not a VM's stolen time or live migration, swapping, CPU throttling by a cgroup quota, or SIGSTOP; its rate is per process over the trace's span"

// FromGCTrace reads GODEBUG=gctrace=1 lines (others are skipped and
// counted) and returns a profile of one pause class: each stop-the-world
// phase a size of an empirical distribution, at the rate the trace shows.
func FromGCTrace(r io.Reader, name string) (*Profile, int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var sizes []string
	skipped, lines := 0, 0
	last := 0.0
	for sc.Scan() {
		lines++
		if lines > MaxImportLines {
			return nil, 0, fmt.Errorf("%s: more than %d lines", name, MaxImportLines)
		}
		m := gctraceLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			skipped++
			continue
		}
		at, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			skipped++
			continue
		}
		last = max(last, at)
		for _, ms := range []string{m[2], m[4]} {
			v, err := strconv.ParseFloat(ms, 64)
			if err != nil || v <= 0 {
				continue
			}
			if len(sizes) >= MaxEmpirical {
				return nil, 0, fmt.Errorf("%s: more than %d pauses (cut the trace)", name, MaxEmpirical)
			}
			sizes = append(sizes, strconv.FormatFloat(v*1000, 'f', -1, 64)+"us")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("%s: line %d: %v", name, lines+1, err)
	}
	if len(sizes) == 0 || last <= 0 {
		return nil, skipped, fmt.Errorf("%s: no gctrace lines with a pause and a time (\"gc N @T.s P%%: a+b+c ms clock, ...\")", name)
	}
	perHour := float64(len(sizes)) / last * 3600
	c := Class{ID: "go-gc-pause", Kind: Pause, PerHour: perHour,
		Size:   Dist{Empirical: sizes},
		Source: Source{Rate: fmt.Sprintf("measured: %d stop-the-world phases in %gs of %s", len(sizes), last, name), Size: "measured: " + name + "; " + GCTraceNote}}
	p := &Profile{ID: "imported", Description: "imported from " + name, Classes: []Class{c}, name: name}
	if err := p.validate(); err != nil {
		return nil, skipped, fmt.Errorf("%s: %v", name, err)
	}
	return p, skipped, nil
}

// WriteYAML writes the profile as a file Decode reads back.
func (p *Profile) WriteYAML(w io.Writer) error {
	q := func(s string) string { return strconv.Quote(s) }
	var b strings.Builder
	fmt.Fprintf(&b, "id: %s\ndescription: %s\nclasses:\n", p.ID, q(p.Description))
	for _, c := range p.Classes {
		fmt.Fprintf(&b, "  - id: %s\n    kind: %s\n", c.ID, c.Kind)
		if c.PerYear != 0 {
			fmt.Fprintf(&b, "    per_year: %s\n", strconv.FormatFloat(c.PerYear, 'g', -1, 64))
		} else {
			fmt.Fprintf(&b, "    per_hour: %s\n", strconv.FormatFloat(c.PerHour, 'g', -1, 64))
		}
		if c.Persistence != "" {
			fmt.Fprintf(&b, "    persistence: %s\n", c.Persistence)
		}
		if c.DownAfter != "" {
			fmt.Fprintf(&b, "    down_after: %s\n", c.DownAfter)
		}
		d := c.Size
		switch {
		case d.Fixed != "":
			fmt.Fprintf(&b, "    size: {fixed: %s}\n", d.Fixed)
		case d.Pareto != nil:
			fmt.Fprintf(&b, "    size: {pareto: {min: %s, alpha: %g}}\n", d.Pareto.Min, d.Pareto.Alpha)
		case d.Lognormal != nil:
			fmt.Fprintf(&b, "    size: {lognormal: {median: %s, sigma: %g}}\n", d.Lognormal.Median, d.Lognormal.Sigma)
		case d.LogUniform != nil:
			fmt.Fprintf(&b, "    size: {loguniform: {min: %s, max: %s}}\n", d.LogUniform.Min, d.LogUniform.Max)
		default:
			fmt.Fprintf(&b, "    size: {empirical: [%s]}\n", strings.Join(d.Empirical, ", "))
		}
		fmt.Fprintf(&b, "    source:\n      rate: %s\n      size: %s\n", q(c.Source.Rate), q(c.Source.Size))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
