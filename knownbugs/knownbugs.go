// Package knownbugs is the known-bugs suite: bugs filed against the lock
// libraries people run (and those locksim and its users found), each an
// entry in bugs/ID.yaml with the buggy and fixed versions, the mechanism
// read from the code, how locksim finds it and the measured rates on both
// sides (knownbugs/README.md describes the format). `locksim list bugs`
// prints them, the report's known-bugs page shows them, and the suite's
// test reruns the quick ones (knownbugs/check_test.go).
package knownbugs

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/locksim/locksim/internal/stats"
)

//go:embed bugs/*.yaml
var files embed.FS

// Bug is one entry of the suite.
type Bug struct {
	ID         string   `yaml:"id"`
	Library    string   `yaml:"library"`
	Language   string   `yaml:"language"`
	Package    string   `yaml:"package"`
	Buggy      string   `yaml:"buggy"`
	Fixed      string   `yaml:"fixed"`
	Twin       string   `yaml:"twin"`
	Tracker    string   `yaml:"tracker"`
	Mechanism  string   `yaml:"mechanism"`
	Faults     []string `yaml:"faults"`
	FoundBy    string   `yaml:"found_by"`
	FoundByWhy string   `yaml:"found_by_why"`
	Verdict    string   `yaml:"verdict"`
	Check      *Check   `yaml:"check"`
	Quick      bool     `yaml:"quick"`
	Measured   *Measure `yaml:"measured"`
	Repro      string   `yaml:"repro"`
	Status     string   `yaml:"status"`
	WhyNot     string   `yaml:"why_not"`
	// Notes is anything else a reader needs (what was verified, what was
	// inferred from the tracker).
	Notes string `yaml:"notes"`
}

// CheckKind is how an entry's check runs.
type CheckKind string

// The kinds of check.
const (
	// CheckGoTest: nested modules pinned to the library's versions, whose
	// own tests assert the outcome.
	CheckGoTest CheckKind = "go-test"
	// CheckDriver: the real arm, one driver folder per side.
	CheckDriver CheckKind = "driver"
)

// Check is what the suite runs for an entry, machine-readable.
type Check struct {
	// Kind is CheckGoTest or CheckDriver.
	Kind CheckKind `yaml:"kind"`
	// Dirs are the nested modules of a go-test check (Dir is one).
	Dir  string   `yaml:"dir"`
	Dirs []string `yaml:"dirs"`
	// Tags are the build tags the nested modules' tests need.
	Tags string `yaml:"tags"`
	// The driver check: both sides in the same world and scenario.
	BuggyDriver string `yaml:"buggy_driver"`
	FixedDriver string `yaml:"fixed_driver"`
	Lock        string `yaml:"lock"`
	Scenario    string `yaml:"scenario"`
	TTL         string `yaml:"ttl"`
	Seeds       int    `yaml:"seeds"`
	Careful     bool   `yaml:"careful"`
	// CrashSignature, for a crash verdict, is text the run's error must
	// hold (from the driver's stderr: the library's own error or file), so
	// that a driver dying of something else is not counted as the bug.
	CrashSignature string `yaml:"crash_signature"`
}

// Modules are the nested modules of a go-test check.
func (c *Check) Modules() []string {
	if c.Dir != "" {
		return append([]string{c.Dir}, c.Dirs...)
	}
	return c.Dirs
}

// Measure is one dated measurement of both sides.
type Measure struct {
	Date    string   `yaml:"date"`
	Command string   `yaml:"command"`
	Buggy   Count    `yaml:"buggy"`
	Fixed   Count    `yaml:"fixed"`
	Traces  []string `yaml:"traces"`
}

// Count is how many runs of one side showed the entry's verdict.
type Count struct {
	Runs int `yaml:"runs"`
	Bad  int `yaml:"bad"`
}

// String is the count as a rate with its 95% Wilson interval: "17/20 =
// 85.0% [64.0%, 94.8%]".
func (c Count) String() string { return stats.Rate{K: c.Bad, N: c.Runs}.String() }

// Reproduced reports whether the entry reproduces: the buggy side showed
// the verdict and the fixed side never did.
func (b Bug) Reproduced() bool { return b.Status == StatusReproduced }

// How a bug was found (Bug.FoundBy): by a search (locktest's, or a
// scenario whose faults are drawn per seed), with no fault at all (the
// seeds' workloads alone show it: nothing was placed by hand), or by a
// hand-written fault schedule (FoundByWhy says why a search could not).
const (
	FoundBySearch   = "search"
	FoundByNoFault  = "no-fault"
	FoundBySchedule = "schedule"
)

// The entry statuses.
const (
	StatusReproduced    = "reproduced"
	StatusNotReproduced = "not reproduced"
)

// SafeSide names what the fixed side runs: the fixed version, or the twin.
func (b Bug) SafeSide() string {
	if b.Fixed == "" || b.Fixed == "unfixed" || b.Twin != "" {
		return "twin"
	}
	return b.Fixed
}

// All returns every entry, sorted: reproduced first, then by library and id.
func All() ([]Bug, error) {
	names, err := fs.Glob(files, "bugs/*.yaml")
	if err != nil {
		return nil, err
	}
	return load(files, names)
}

func load(fsys fs.FS, names []string) ([]Bug, error) {
	var bugs []Bug
	seen := map[string]string{}
	for _, name := range names {
		b, err := decodeFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[b.ID]; dup {
			return nil, fmt.Errorf("knownbugs/%s: id %q is also %s's", name, b.ID, prev)
		}
		seen[b.ID] = name
		bugs = append(bugs, b)
	}
	sort.SliceStable(bugs, func(i, j int) bool {
		a, b := bugs[i], bugs[j]
		if a.Reproduced() != b.Reproduced() {
			return a.Reproduced()
		}
		if a.Library != b.Library {
			return a.Library < b.Library
		}
		return a.ID < b.ID
	})
	return bugs, nil
}

// Get returns the entry with this id.
func Get(id string) (Bug, error) {
	all, err := All()
	if err != nil {
		return Bug{}, err
	}
	var ids []string
	for _, b := range all {
		if b.ID == id {
			return b, nil
		}
		ids = append(ids, b.ID)
	}
	sort.Strings(ids)
	return Bug{}, fmt.Errorf("unknown bug %q (one of: %s)", id, strings.Join(ids, ", "))
}

func decodeFile(fsys fs.FS, name string) (Bug, error) {
	raw, err := fs.ReadFile(fsys, name)
	if err != nil {
		return Bug{}, err
	}
	var b Bug
	if err := yaml.NewDecoder(bytes.NewReader(raw), yaml.Strict()).Decode(&b); err != nil {
		return Bug{}, fmt.Errorf("knownbugs/%s: %v", name, err)
	}
	if err := b.validate(strings.TrimSuffix(path.Base(name), ".yaml")); err != nil {
		return Bug{}, fmt.Errorf("knownbugs/%s: %v", name, err)
	}
	return b, nil
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)

// validate refuses an entry the suite, the list or the report could not
// use, naming the field.
func (b Bug) validate(file string) error {
	if !idPattern.MatchString(b.ID) {
		return fmt.Errorf("id %q: lower-case letters, digits, '.' and '-' only", b.ID)
	}
	if b.ID != file {
		return fmt.Errorf("id %q differs from the file's name %q", b.ID, file)
	}
	for _, f := range []struct{ name, v string }{
		{"library", b.Library}, {"language", b.Language}, {"package", b.Package},
		{"buggy", b.Buggy}, {"tracker", b.Tracker}, {"mechanism", b.Mechanism},
	} {
		if strings.TrimSpace(f.v) == "" {
			return fmt.Errorf("%s is empty", f.name)
		}
	}
	if strings.HasPrefix(b.Tracker, "http") {
		if u, err := url.Parse(strings.Fields(b.Tracker)[0]); err != nil || u.Host == "" {
			return fmt.Errorf("tracker %q is not a link", b.Tracker)
		}
	}
	switch b.Status {
	case StatusNotReproduced:
		if strings.TrimSpace(b.WhyNot) == "" {
			return fmt.Errorf("status %q needs why_not", b.Status)
		}
		if b.Quick || b.Check != nil || b.Measured != nil || b.Repro != "" || b.FoundBy != "" || b.Verdict != "" {
			return fmt.Errorf("an entry not reproduced has no quick, check, measured, repro, found_by or verdict (nothing was found to rerun)")
		}
		return nil
	case StatusReproduced:
	default:
		return fmt.Errorf("status %q: one of %q, %q", b.Status, StatusReproduced, StatusNotReproduced)
	}
	if b.Fixed == "" {
		return fmt.Errorf("fixed is empty (a version, or \"unfixed\" with a twin)")
	}
	if (b.Fixed == "unfixed") && strings.TrimSpace(b.Twin) == "" {
		return fmt.Errorf("fixed is \"unfixed\": twin must say what the safe side runs")
	}
	switch b.FoundBy {
	case FoundBySearch:
	case FoundByNoFault, FoundBySchedule:
		if strings.TrimSpace(b.FoundByWhy) == "" {
			return fmt.Errorf("found_by %q needs found_by_why", b.FoundBy)
		}
	default:
		return fmt.Errorf("found_by %q: one of %q, %q, %q", b.FoundBy, FoundBySearch, FoundByNoFault, FoundBySchedule)
	}
	switch b.Verdict {
	case "unsafe", "liveness", "crash":
	default:
		return fmt.Errorf("verdict %q: one of unsafe, liveness, crash", b.Verdict)
	}
	if strings.TrimSpace(b.Repro) == "" {
		return fmt.Errorf("repro is empty")
	}
	if b.Check == nil {
		return fmt.Errorf("check is missing")
	}
	if err := b.Check.validate(); err != nil {
		return fmt.Errorf("check: %v", err)
	}
	if b.Verdict == "crash" && (b.Check.Kind != CheckDriver || strings.TrimSpace(b.Check.CrashSignature) == "") {
		return fmt.Errorf("check: verdict crash needs a driver check with crash_signature (text of the library's own error the run must show)")
	}
	m := b.Measured
	if m == nil || m.Date == "" || m.Command == "" {
		return fmt.Errorf("measured needs date and command")
	}
	if _, err := time.Parse(time.DateOnly, m.Date); err != nil {
		return fmt.Errorf("measured.date %q: YYYY-MM-DD", m.Date)
	}
	if m.Buggy.Runs <= 0 || m.Fixed.Runs <= 0 || m.Buggy.Bad < 0 || m.Fixed.Bad < 0 || m.Buggy.Bad > m.Buggy.Runs || m.Fixed.Bad > m.Fixed.Runs {
		return fmt.Errorf("measured: bad must be 0..runs and runs > 0 on both sides (buggy %d/%d, fixed %d/%d)", m.Buggy.Bad, m.Buggy.Runs, m.Fixed.Bad, m.Fixed.Runs)
	}
	if m.Buggy.Bad == 0 || m.Fixed.Bad != 0 {
		return fmt.Errorf("status %q, but measured buggy %d/%d and fixed %d/%d (reproduced means the buggy side showed it and the fixed never did)", b.Status, m.Buggy.Bad, m.Buggy.Runs, m.Fixed.Bad, m.Fixed.Runs)
	}
	return nil
}

func (c *Check) validate() error {
	clean := func(field, p string) error {
		if p == "" || path.Clean(p) != p || !strings.HasPrefix(p, "knownbugs/") && !strings.HasPrefix(p, "drivers/") {
			return fmt.Errorf("%s %q: a clean path under knownbugs/ or drivers/", field, p)
		}
		return nil
	}
	switch c.Kind {
	case CheckGoTest:
		if len(c.Modules()) != 2 {
			return fmt.Errorf("kind go-test needs two nested modules (dirs: [buggy, fixed]), got %d", len(c.Modules()))
		}
		for _, d := range c.Modules() {
			if err := clean("dir", d); err != nil {
				return err
			}
		}
		if c.BuggyDriver != "" || c.FixedDriver != "" || c.Lock != "" || c.Scenario != "" || c.TTL != "" || c.Seeds != 0 || c.Careful || c.CrashSignature != "" {
			return fmt.Errorf("kind go-test takes dirs and tags only (the drivers' fields are for kind driver)")
		}
	case CheckDriver:
		for _, f := range []struct{ name, v string }{
			{"buggy_driver", c.BuggyDriver}, {"fixed_driver", c.FixedDriver}, {"lock", c.Lock}, {"scenario", c.Scenario}, {"ttl", c.TTL},
		} {
			if f.v == "" {
				return fmt.Errorf("kind driver needs %s", f.name)
			}
		}
		if err := clean("buggy_driver", c.BuggyDriver); err != nil {
			return err
		}
		if err := clean("fixed_driver", c.FixedDriver); err != nil {
			return err
		}
		if strings.HasSuffix(c.Scenario, ".yaml") {
			if err := clean("scenario", c.Scenario); err != nil {
				return err
			}
		}
		if d, err := time.ParseDuration(c.TTL); err != nil || d <= 0 {
			return fmt.Errorf("ttl %q: a positive duration (2s)", c.TTL)
		}
		if c.Seeds < 1 || c.Seeds > 50 {
			return fmt.Errorf("seeds %d: 1..50", c.Seeds)
		}
		if c.Dir != "" || len(c.Dirs) != 0 || c.Tags != "" {
			return fmt.Errorf("kind driver takes no dir, dirs or tags (those are for kind go-test)")
		}
	default:
		return fmt.Errorf("kind %q: one of go-test, driver", c.Kind)
	}
	return nil
}

// Outcome is the entry's result in a few words: "unsafe 17/20, fixed
// 0/20" (or "twin 0/20"), or "not reproduced: " and the first clause of
// why_not.
func (b Bug) Outcome() string {
	if !b.Reproduced() {
		why := strings.Join(strings.Fields(b.WhyNot), " ")
		if i := strings.IndexAny(why, ":,."); i > 0 {
			why = why[:i]
		}
		return "not reproduced: " + strings.ToLower(why[:1]) + why[1:]
	}
	m := b.Measured
	side := "fixed"
	if b.SafeSide() == "twin" {
		side = "twin"
	}
	return fmt.Sprintf("%s %d/%d, %s %d/%d", b.Verdict, m.Buggy.Bad, m.Buggy.Runs, side, m.Fixed.Bad, m.Fixed.Runs)
}
