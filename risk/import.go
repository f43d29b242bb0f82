package risk

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
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

// logTime reads a line's timestamp: ISO 8601 (journalctl -o short-iso,
// "2026-11-28T22:53:01"), syslog ("Nov 28 22:53:01", no year), or Redis's
// own ("1234:X 28 Nov 2026 22:53:01.123").
func logTime(line string) (time.Time, bool) {
	if len(line) >= 19 {
		if t, err := time.Parse("2006-01-02T15:04:05", line[:19]); err == nil {
			return t, true
		}
	}
	if len(line) >= 15 {
		if t, err := time.Parse(time.Stamp, line[:15]); err == nil {
			return t, true
		}
	}
	if m := redisLogTime.FindStringSubmatch(line); m != nil {
		if t, err := time.Parse("2 Jan 2006 15:04:05.000", m[1]); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

var redisLogTime = regexp.MustCompile(`^\d+:[XCSM] (\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}\.\d{3}) `)

// logScan reads a log's lines with their times (a syslog time without a
// year that runs backwards by more than half a year is taken as the next
// year), calling each for every line; it returns the span the timed lines
// cover.
func logScan(r io.Reader, name string, each func(at time.Time, line string) error) (time.Duration, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var first, prev time.Time
	shift := time.Duration(0)
	n := 0
	for sc.Scan() {
		n++
		if n > MaxImportLines {
			return 0, fmt.Errorf("%s: more than %d lines", name, MaxImportLines)
		}
		line := sc.Text()
		at, ok := logTime(line)
		if !ok {
			continue
		}
		at = at.Add(shift)
		if !prev.IsZero() && at.Before(prev.Add(-180*24*time.Hour)) {
			shift += 365 * 24 * time.Hour
			at = at.Add(365 * 24 * time.Hour)
		}
		if first.IsZero() {
			first = at
		}
		prev = at
		if err := each(at, line); err != nil {
			return 0, fmt.Errorf("%s: line %d: %v", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s: line %d: %v", name, n+1, err)
	}
	return prev.Sub(first), nil
}

// ChronyNote is what a chrony log cannot tell.
const ChronyNote = "a chrony log shows its steps (forward ones counted: a backward step only lengthens a node's leases), not its slewing (at most 500 ppm) nor a clock's offset between corrections; the rate is over the log's span"

var chronyStep = regexp.MustCompile(`System clock was stepped by (-?[0-9.]+) seconds`)

// FromChrony reads a chronyd log (syslog or journalctl lines) and returns
// a profile of one clock-step class: each forward "System clock was
// stepped by X seconds" a size, at the rate the log's span shows. It also
// returns the backward steps it left out.
func FromChrony(r io.Reader, name string) (*Profile, int, error) {
	var sizes []string
	backward := 0
	span, err := logScan(r, name, func(_ time.Time, line string) error {
		m := chronyStep.FindStringSubmatch(line)
		if m == nil {
			return nil
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return fmt.Errorf("step %q: %v", m[1], err)
		}
		if v <= 0 {
			backward++
			return nil
		}
		if len(sizes) >= MaxEmpirical {
			return fmt.Errorf("more than %d steps (cut the log)", MaxEmpirical)
		}
		sizes = append(sizes, strconv.FormatFloat(v*1e6, 'f', 0, 64)+"us")
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if len(sizes) == 0 || span <= 0 {
		return nil, backward, fmt.Errorf("%s: no forward \"System clock was stepped by X seconds\" lines in a log with a time span (%d backward)", name, backward)
	}
	c := Class{ID: "clock-step", Kind: ClockStep, PerYear: float64(len(sizes)) / (span.Hours() / hoursPerYear),
		Size:   Dist{Empirical: sizes},
		Source: Source{Rate: fmt.Sprintf("measured: %d forward steps in %v of %s", len(sizes), span, name), Size: "measured: " + name + "; " + ChronyNote}}
	return imported(name, c, backward)
}

// SentinelNote is what a Sentinel log cannot tell.
const SentinelNote = "a Sentinel log shows failovers and how long the old primary was down to Sentinel (+sdown to its -sdown), not a partition between clients and a node, nor how long clients kept writing to the old primary; the rate is over the log's span"

var (
	sentinelSwitch = regexp.MustCompile(`\+switch-master \S+ (\S+) (\d+) `)
	sentinelDown   = regexp.MustCompile(`([+-])sdown (master|slave) (\S+)(?: (\S+) (\d+))?`)
)

// FromSentinel reads a Redis Sentinel log and returns a profile of one
// failover class: "+switch-master" lines at the rate the log's span shows,
// each old primary's downtime (its "+sdown master" to the next "-sdown" of
// its address, as master or slave, with a failover away from it between)
// a size. It also returns the outages still open at the log's end.
func FromSentinel(r io.Reader, name string) (*Profile, int, error) {
	failovers := 0
	type outage struct {
		since    time.Time
		switched bool // a failover away from it began while it was down
	}
	down := map[string]*outage{} // address → its "+sdown master"
	var sizes []string
	span, err := logScan(r, name, func(at time.Time, line string) error {
		if m := sentinelSwitch.FindStringSubmatch(line); m != nil {
			failovers++
			if o := down[m[1]+":"+m[2]]; o != nil {
				o.switched = true
			}
		}
		m := sentinelDown.FindStringSubmatch(line)
		if m == nil {
			return nil
		}
		addr := m[3] // a slave is named ip:port
		if m[2] == "master" && m[4] != "" {
			addr = m[4] + ":" + m[5]
		}
		switch {
		case m[1] == "+" && m[2] == "master":
			down[addr] = &outage{since: at}
		case m[1] == "-":
			o := down[addr]
			if o == nil {
				return nil
			}
			delete(down, addr)
			if o.switched && at.After(o.since) {
				if len(sizes) >= MaxEmpirical {
					return fmt.Errorf("more than %d downtimes (cut the log)", MaxEmpirical)
				}
				sizes = append(sizes, at.Sub(o.since).String())
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if failovers == 0 || span <= 0 {
		return nil, 0, fmt.Errorf("%s: no \"+switch-master\" lines in a log with a time span", name)
	}
	if len(sizes) == 0 {
		return nil, 0, fmt.Errorf("%s: %d failovers but no old primary's downtime (\"+sdown master NAME IP PORT\" then \"-sdown ... IP:PORT\")", name, failovers)
	}
	c := Class{ID: "failover", Kind: Failover, PerYear: float64(failovers) / (span.Hours() / hoursPerYear),
		Size:   Dist{Empirical: sizes},
		Source: Source{Rate: fmt.Sprintf("measured: %d failovers in %v of %s", failovers, span, name), Size: "measured: " + name + "; " + SentinelNote}}
	return imported(name, c, len(down))
}

func imported(name string, c Class, n int) (*Profile, int, error) {
	p := &Profile{ID: "imported", Description: "imported from " + name, Classes: []Class{c}, name: name}
	if err := p.validate(); err != nil {
		return nil, n, fmt.Errorf("%s: %v", name, err)
	}
	return p, n, nil
}
