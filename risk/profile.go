// Package risk estimates how often a lock lets two holders in per year of
// operation, for a lease (TTL), a client count and a fault profile: a file
// of fault classes, each with a rate per process, a size distribution and
// the sources of its numbers.
//
// Faults this rare do not meet, so each class is measured alone, one fault per
// run (conditional simulation); its sizes are cut into strata in TTLs of
// the lock, each stratum's runs draw their sizes from the distribution
// within it, and the probability that one fault breaks the lock, weighed
// by each stratum's share of the class's events, times the class's events
// per year and the processes it can hit, is the class's violations per
// year. Classes add up. The report's per-year section
// (reports/perhour.go) runs it for each design of the debate.
package risk

import (
	"bytes"
	_ "embed"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/locksim/locksim/internal/inputfile"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// Kind is what a fault class does to the world.
type Kind string

// The kinds a class can be. Each names the one fault a run injects.
const (
	Pause      Kind = "pause"       // a client process stops for size (GC, VM stall, SIGSTOP): client-pause on c0
	ClockStep  Kind = "clock-step"  // a node's clock steps forward by size: clock-jump on the first node
	ClockDrift Kind = "clock-drift" // a node's clock runs fast by size (ppm) to the heal: clock-drift on the first node
	Crash      Kind = "crash"       // a node crashes and restarts after size under Persistence
	Failover   Kind = "failover"    // the primary fails and Sentinel promotes a replica; size: how long the old primary stays down
	Partition  Kind = "partition"   // the first node is cut from every client for size
	Delay      Kind = "delay"       // messages between the clients and the first node take size longer, for size
)

var kinds = []Kind{Pause, ClockStep, ClockDrift, Crash, Failover, Partition, Delay}

// Limits of a profile file.
const (
	MaxFileBytes  = 64 << 10
	MaxClasses    = 32
	MaxEmpirical  = 10_000
	maxPerHour    = 3_600_000 // a thousand events a second per process (a busy Go heap collects many times a second)
	maxDuration   = 24 * time.Hour
	maxDriftPPM   = 500_000 // faults.Fault's range
	hoursPerYear  = 8766    // 365.25 days
	defaultSource = "default.yaml"
)

// Profile is a fleet's fault classes.
type Profile struct {
	ID          string  `yaml:"id"`
	Description string  `yaml:"description"`
	Classes     []Class `yaml:"classes"`
	// name is where the profile came from (a path or "default.yaml").
	name string
}

// Class is one fault class: a kind, how often it strikes one process, how
// large its faults are, and where each number comes from.
type Class struct {
	ID   string `yaml:"id"`
	Kind Kind   `yaml:"kind"`
	// Exactly one of PerHour and PerYear: events per process.
	PerHour float64 `yaml:"per_hour"`
	PerYear float64 `yaml:"per_year"`
	Size    Dist    `yaml:"size"`
	// Persistence is a crash's node durability (none, everysec, always;
	// crash only, default none).
	Persistence string `yaml:"persistence"`
	// DownAfter is Sentinel's down-after for a failover's world (failover
	// only; "": the world's own).
	DownAfter string `yaml:"down_after"`
	Source    Source `yaml:"source"`

	downAfter time.Duration
}

// Source says where a class's numbers come from: a public source, or the
// word "assumption".
type Source struct {
	Rate string `yaml:"rate"`
	Size string `yaml:"size"`
}

// Dist is a size distribution: exactly one field set. Sizes are durations
// ("500ms"), or for clock-drift rates ("200ppm").
type Dist struct {
	Fixed      string          `yaml:"fixed"`
	Pareto     *ParetoDist     `yaml:"pareto"`
	Lognormal  *LognormalDist  `yaml:"lognormal"`
	LogUniform *LogUniformDist `yaml:"loguniform"`
	Empirical  []string        `yaml:"empirical"`

	d distribution
}

// ParetoDist is P(size > x) = (min/x)^alpha for x ≥ min.
type ParetoDist struct {
	Min   string  `yaml:"min"`
	Alpha float64 `yaml:"alpha"`
}

// LognormalDist is a size whose logarithm is normal: median and sigma
// (the standard deviation of the natural logarithm).
type LognormalDist struct {
	Median string  `yaml:"median"`
	Sigma  float64 `yaml:"sigma"`
}

// LogUniformDist is a size whose logarithm is uniform between min and max.
type LogUniformDist struct {
	Min string `yaml:"min"`
	Max string `yaml:"max"`
}

//go:embed default.yaml
var defaultYAML []byte

// Default is the shipped profile (risk/default.yaml).
func Default() (*Profile, error) { return Decode(defaultYAML, defaultSource) }

// DefaultYAML is the shipped profile's text.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// Load reads a profile file (a regular file of at most MaxFileBytes).
func Load(path string) (*Profile, error) {
	raw, err := inputfile.Read(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return Decode(raw, path)
}

// Decode decodes and validates a profile; unknown fields are refused.
// Errors name the file and the field.
func Decode(raw []byte, name string) (prof *Profile, err error) {
	if len(raw) > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", name, len(raw), MaxFileBytes)
	}
	// The parser's time grows with nesting (scenarios.CheckYAMLShape
	// bounds it first), and a failure inside it is an error, not a panic.
	if err := scenarios.CheckYAMLShape(raw); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	defer func() {
		if r := recover(); r != nil {
			prof, err = nil, fmt.Errorf("%s: the YAML parser failed on this file (%v)", name, r)
		}
	}()
	var p Profile
	if err := yaml.NewDecoder(bytes.NewReader(raw), yaml.Strict()).Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	p.name = name
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return &p, nil
}

// Name is where the profile came from.
func (p *Profile) Name() string { return p.name }

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,63}$`)

func (p *Profile) validate() error {
	if !idPattern.MatchString(p.ID) {
		return fmt.Errorf("id %q: 1-64 lower-case letters, digits, '.' and '-'", clip(p.ID))
	}
	if len(p.Classes) == 0 {
		return fmt.Errorf("classes: none (a profile needs at least one fault class)")
	}
	if len(p.Classes) > MaxClasses {
		return fmt.Errorf("classes: %d, more than %d", len(p.Classes), MaxClasses)
	}
	seen := map[string]bool{}
	for i := range p.Classes {
		c := &p.Classes[i]
		where := fmt.Sprintf("classes[%d]", i)
		if c.ID != "" {
			where = fmt.Sprintf("classes[%d] (%s)", i, clip(c.ID))
		}
		if err := c.validate(); err != nil {
			return fmt.Errorf("%s.%v", where, err)
		}
		if seen[c.ID] {
			return fmt.Errorf("%s.id: %q twice", where, c.ID)
		}
		seen[c.ID] = true
	}
	return nil
}

func (c *Class) validate() error {
	if !idPattern.MatchString(c.ID) {
		return fmt.Errorf("id: %q: 1-64 lower-case letters, digits, '.' and '-'", clip(c.ID))
	}
	ok := false
	for _, k := range kinds {
		ok = ok || c.Kind == k
	}
	if !ok {
		var names []string
		for _, k := range kinds {
			names = append(names, string(k))
		}
		return fmt.Errorf("kind: %q is not one of %s", clip(string(c.Kind)), strings.Join(names, ", "))
	}
	switch {
	case c.PerHour != 0 && c.PerYear != 0:
		return fmt.Errorf("per_hour and per_year: give one, not both")
	case c.PerHour == 0 && c.PerYear == 0:
		return fmt.Errorf("per_hour or per_year: required (events per process)")
	case c.PerHour < 0 || c.PerYear < 0 || math.IsNaN(c.PerHour) || math.IsNaN(c.PerYear) || math.IsInf(c.PerHour, 0) || math.IsInf(c.PerYear, 0):
		return fmt.Errorf("per_hour/per_year: must be a positive number")
	case c.EventsPerYear() > maxPerHour*hoursPerYear:
		return fmt.Errorf("per_hour/per_year: more than %d events per process per hour", maxPerHour)
	}
	if c.Persistence != "" && c.Kind != Crash {
		return fmt.Errorf("persistence: only a crash has one")
	}
	switch sim.Persistence(c.Persistence) {
	case "", sim.PersistNone, sim.PersistEverysec, sim.PersistAlways:
	default:
		return fmt.Errorf("persistence: %q is not one of none, everysec, always", clip(c.Persistence))
	}
	if c.DownAfter != "" {
		if c.Kind != Failover {
			return fmt.Errorf("down_after: only a failover has one")
		}
		d, err := parseDuration(c.DownAfter)
		if err != nil {
			return fmt.Errorf("down_after: %v", err)
		}
		c.downAfter = d
	}
	if strings.TrimSpace(c.Source.Rate) == "" {
		return fmt.Errorf("source.rate: required (a public source, or \"assumption\")")
	}
	if strings.TrimSpace(c.Source.Size) == "" {
		return fmt.Errorf("source.size: required (a public source, or \"assumption\")")
	}
	d, err := c.Size.build(c.Kind == ClockDrift)
	if err != nil {
		return fmt.Errorf("size.%v", err)
	}
	c.Size.d = d
	return nil
}

// EventsPerYear is the class's events per process per year.
func (c Class) EventsPerYear() float64 {
	if c.PerYear != 0 {
		return c.PerYear
	}
	return c.PerHour * hoursPerYear
}

// Hits is which processes a class's event can hit: "clients" or "nodes".
func (c Class) Hits() string {
	if c.Kind == Pause {
		return "clients"
	}
	return "nodes"
}

// RateText is the class's rate as the file gives it.
func (c Class) RateText() string {
	if c.PerYear != 0 {
		return fmt.Sprintf("%s/year", fmtNum(c.PerYear))
	}
	return fmt.Sprintf("%s/hour", fmtNum(c.PerHour))
}

// SizeText is the class's size distribution in words.
func (c Class) SizeText() string { return c.Size.d.String() }

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}

// parseDuration parses a positive duration of at most maxDuration.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (e.g. 500ms, 2s)", clip(s))
	}
	if d <= 0 || d > maxDuration {
		return 0, fmt.Errorf("%q out of range (1ns..%v)", clip(s), maxDuration)
	}
	return d, nil
}

// parseSize parses a size in the class's unit: a duration (seconds), or
// for clock-drift a rate ("200ppm"), returned in ppm.
func parseSize(s string, ppm bool) (float64, error) {
	if !ppm {
		d, err := parseDuration(s)
		return d.Seconds(), err
	}
	t := strings.TrimSpace(s)
	if !strings.HasSuffix(t, "ppm") {
		return 0, fmt.Errorf("%q: a clock-drift size is a rate in ppm (e.g. 500ppm)", clip(s))
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "ppm")), 64)
	if err != nil || math.IsNaN(v) || v <= 0 || v > maxDriftPPM {
		return 0, fmt.Errorf("%q out of range (a rate above 0 and up to %dppm)", clip(s), maxDriftPPM)
	}
	return v, nil
}

// Kinds are the kinds a class can be.
func Kinds() []Kind { return append([]Kind(nil), kinds...) }
