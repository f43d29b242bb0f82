package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// Spec names one run: everything that decides it, as a user writes it.
// It is what 'locksim run' flags, a sweep's job and a report's cell
// become, and what a worker process is sent (it encodes as JSON). The
// same Spec always gives the same run.
type Spec struct {
	// Scenario is a built-in scenario id or a scenario file's path
	// ("": "default").
	Scenario string `json:"scenario"`
	// Lock is a lock id of the catalogue (locks.IDs).
	Lock string `json:"lock"`
	Seed uint64 `json:"seed"`
	// Params override the scenario's defaults (a zero field keeps it).
	Params scenarios.Params `json:"params"`
	// Pause, if set, makes every targeted client pause of the schedule
	// last Pause × the lock's TTL, or adds one where there is none: c0
	// stops just before its first protected write at or after PauseStart
	// (Kleppmann's GC pause; the sweep's "pause" parameter). 0 removes
	// the targeted pauses.
	Pause *float64 `json:"pause,omitempty"`
	// Faults, if non-nil, replace the seed's fault schedule (a shrunk
	// counterexample); FaultsFile is the file they came from, for Repro.
	Faults     []faults.Fault `json:"faults,omitempty"`
	FaultsFile string         `json:"faults_file,omitempty"`
	// Fairness: a client that never acquires after the heal while others
	// do fails liveness (checker.Options.RequireFairness).
	Fairness bool `json:"fairness,omitempty"`
	// Step, if set, runs the scenario file's own sweep (its sweep: block)
	// at that step, 0-based: the swept parameter set to its Step-th value.
	Step *int `json:"step,omitempty"`
	// MaxEvents, if set, is the world's event budget (sim.Config.MaxEvents;
	// 0: DefaultMaxEvents): a run that takes more steps stops unjudged.
	MaxEvents int64 `json:"max_events,omitempty"`
	// EndWhenLive ends the liveness phase as soon as every client has
	// acquired after the heal (sim.Config.EndWhenLive; Judged.LiveAt says
	// when), for a design that promises no fairness, judged without
	// Fairness or an unavailability bound, whose progress is an
	// acquisition (not Fencing "version"); other runs run the phase to
	// its end. It changes the trace of the runs it ends early.
	EndWhenLive bool `json:"end_when_live,omitempty"`
}

// ScenarioID is the spec's scenario, "default" when empty.
func (s Spec) ScenarioID() string {
	if s.Scenario == "" {
		return "default"
	}
	return s.Scenario
}

// An InputError is a Spec that names no valid run (an unknown lock or
// scenario, a parameter out of range): the user's mistake, not a verdict.
// Field is what to correct: "lock", "scenario", "clients", "nodes",
// "duration", "liveness", "pause", "faults" or "" (the scenario as a
// whole).
type InputError struct {
	Field string
	Err   error
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return "invalid scenario configuration: " + e.Err.Error()
	}
	msg := e.Err.Error()
	if strings.HasPrefix(msg, e.Field+":") {
		return msg
	}
	return e.Field + ": " + msg
}

func (e *InputError) Unwrap() error { return e.Err }

// Job is one run, built and validated: the world's configuration and how
// its history is judged. Run it in a bubble with Job.Run.
type Job struct {
	// Spec is what the job was built from (zero for a job made with
	// NewJob); Repro reproduces it.
	Spec     Spec
	Scenario string // the scenario's id
	Lock     locks.Info
	Config   sim.Config
	// Judging is the workload's resource and the liveness bound.
	Judging scenarios.Judging
	// Check is handed to the checker (MaxUnavailable 0: Judging's).
	Check checker.Options
}

// Build resolves the spec's scenario and lock, builds the world, applies
// Pause and Faults, and validates it. Every error is an *InputError.
func (s Spec) Build() (*Job, error) {
	if s.Lock == "" {
		return nil, &InputError{"lock", fmt.Errorf("required (one of: %s)", strings.Join(locks.IDs(), ", "))}
	}
	info, err := locks.Lookup(s.Lock)
	if err != nil {
		return nil, &InputError{"lock", fmt.Errorf("unknown lock %q (%sone of: %s)", s.Lock, scenarios.DidYouMean(s.Lock, locks.IDs()), strings.Join(locks.IDs(), ", "))}
	}
	if info.Unavailable != "" {
		return nil, &InputError{"lock", fmt.Errorf("%s is %s", s.Lock, info.Unavailable)}
	}
	sc, err := scenarios.Resolve(s.ScenarioID())
	if err != nil {
		var fe *scenarios.FileError
		if errors.As(err, &fe) {
			return nil, &InputError{"scenario", err}
		}
		return nil, &InputError{"scenario", fmt.Errorf("unknown scenario %q (%sone of: %s; or a scenario file)", s.Scenario, scenarios.DidYouMean(s.Scenario, scenarios.IDs()), strings.Join(scenarios.IDs(), ", "))}
	}
	if s.Step != nil {
		if sc.File == nil || sc.File.Sweep == nil {
			return nil, &InputError{"step", fmt.Errorf("scenario %s has no sweep: block to step through", sc.ID)}
		}
		at, _, err := sc.File.AtSweep(*s.Step)
		if err != nil {
			return nil, &InputError{"step", err}
		}
		sc = at.Scenario()
	}
	cfg, err := sc.Build(info, s.Seed, s.Params)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return nil, configError(err)
	}
	if s.Faults != nil {
		cfg.Faults = s.Faults
		if err := cfg.Validate(); err != nil {
			where := "the schedule"
			if s.FaultsFile != "" {
				where = s.FaultsFile
			}
			return nil, &InputError{"faults", fmt.Errorf("%s: %v", where, err)}
		}
	}
	if s.MaxEvents > 0 {
		cfg.MaxEvents = s.MaxEvents
	}
	if s.Pause != nil {
		if err := applyPause(&cfg, info, *s.Pause); err != nil {
			return nil, &InputError{"pause", err}
		}
		if err := cfg.Validate(); err != nil {
			return nil, &InputError{"pause", err}
		}
	}
	job := &Job{Spec: s, Scenario: sc.ID, Lock: info, Config: cfg, Judging: sc.Judging(info),
		Check: checker.Options{RequireFairness: s.Fairness}}
	job.Config.EndWhenLive = s.EndWhenLive && !info.Fair && !s.Fairness && job.Judging.MaxUnavailable == 0 && info.Fencing != checker.FenceVersion
	return job, nil
}

// configError names the parameter behind a scenario or sim.Config
// validation error where there is one ("nodes: 70 out of range 1..64").
func configError(err error) error {
	msg := err.Error()
	for _, name := range []string{"nodes", "clients", "duration", "liveness", "hold-min", "hold-max"} {
		if strings.HasPrefix(msg, name+":") {
			return &InputError{name, err}
		}
	}
	return &InputError{"", err}
}

// NewJob makes a job from parts: a lock that need not be in the catalogue
// (a user's, in locktest), a world built by the caller, and the judging
// of the built-in scenario named (the default's bonus pool for any other
// name).
func NewJob(scenario string, info locks.Info, cfg sim.Config, opt checker.Options) *Job {
	return &Job{Scenario: scenario, Lock: info, Config: cfg, Judging: scenarios.JudgingFor(scenario, info), Check: opt}
}

// PausePoint is where Spec.Pause stops a client: in the critical section
// just before its write to the protected resource, which the workload
// marks for every lock (Kleppmann's GC-pause figure).
const PausePoint = string(locks.PointBeforeWrite)

// PauseStart is when an added pause is armed: the first time c0 reaches
// the pause point at or after it.
const PauseStart = time.Second

// applyPause makes the schedule's targeted client pauses last frac × the
// lock's TTL; a schedule without one gets one: client c0 pauses for that
// long just before its first protected write at or after PauseStart. frac
// 0 removes them (the baseline).
func applyPause(cfg *sim.Config, info locks.Info, frac float64) error {
	if math.IsNaN(frac) || frac < 0 {
		return fmt.Errorf("%v is not a fraction of the TTL (want ≥ 0)", frac)
	}
	if info.TTL <= 0 {
		return fmt.Errorf("lock %s has no TTL to scale the pause by", info.ID)
	}
	d := time.Duration(math.Round(frac * float64(info.TTL)))
	var kept []faults.Fault
	targeted := false
	fits := func(start time.Duration) error {
		if start+d >= cfg.Duration {
			return fmt.Errorf("a %v pause (%s × %s's TTL of %v) from t=%v does not end before the safety phase does (%v): raise --duration",
				d, FormatValue(frac), info.ID, info.TTL, start, cfg.Duration)
		}
		return nil
	}
	for _, f := range cfg.Faults {
		if f.Kind == faults.ClientPause && f.At != "" {
			targeted = true
			if d <= 0 {
				continue
			}
			if err := fits(f.Start); err != nil {
				return err
			}
			f.Duration = d
		}
		kept = append(kept, f)
	}
	if !targeted && d > 0 {
		if err := fits(PauseStart); err != nil {
			return err
		}
		kept = append(kept, faults.Fault{Kind: faults.ClientPause, Start: PauseStart, Duration: d, Targets: []string{"c0"}, At: PausePoint})
	}
	faults.Sort(kept)
	cfg.Faults = kept
	return nil
}

// FormatValue prints a parameter value as flags and files take it (the
// shortest form that reads back the same).
func FormatValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Repro is the one command line that runs the spec again: 'locksim run'
// with the spec's scenario, lock, seed and every parameter it sets. It is
// what every summary, report and test failure prints.
func (s Spec) Repro() string {
	var b strings.Builder
	fmt.Fprintf(&b, "locksim run --scenario %s --lock %s --seed %d", ShellQuote(s.ScenarioID()), ShellQuote(s.Lock), s.Seed)
	p := s.Params
	pause, step := "", ""
	if s.Pause != nil {
		pause = FormatValue(*s.Pause)
	}
	if s.Step != nil {
		step = strconv.Itoa(*s.Step)
	}
	for _, f := range []struct {
		name string
		set  bool
		v    string
	}{
		{"clients", p.Clients != 0, strconv.Itoa(p.Clients)},
		{"nodes", p.Nodes != 0, strconv.Itoa(p.Nodes)},
		{"duration", p.Duration != 0, p.Duration.String()},
		{"liveness", p.Liveness != 0, p.Liveness.String()},
		{"repl-lag", p.ReplLag != 0, p.ReplLag.String()},
		{"down-after", p.DownAfter != 0, p.DownAfter.String()},
		{"hold-min", p.HoldMin != 0, p.HoldMin.String()},
		{"hold-max", p.HoldMax != 0, p.HoldMax.String()},
		{"careful", p.Careful, ""},
		{"pause", s.Pause != nil, pause},
		{"step", s.Step != nil, step},
		{"max-events", s.MaxEvents != 0, strconv.FormatInt(s.MaxEvents, 10)},
		{"fairness", s.Fairness, ""},
		{"end-when-live", s.EndWhenLive, ""},
	} {
		if !f.set {
			continue
		}
		b.WriteString(" --" + f.name)
		if f.v != "" {
			b.WriteString(" " + f.v)
		}
	}
	if s.Faults != nil {
		file := s.FaultsFile
		if file == "" {
			file = "FILE"
		}
		b.WriteString(" --faults " + ShellQuote(file))
	}
	return b.String()
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=+,@%-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// specJSON is Spec's wire form: NoFaults says that Faults is an empty,
// non-nil schedule (no faults at all), which "faults" (omitempty) cannot:
// without it a worker process received nil and ran the scenario's own
// faults.
type specJSON struct {
	specFields
	NoFaults bool `json:"no_faults,omitempty"`
}

type specFields Spec

// MarshalJSON encodes s, keeping an empty fault schedule apart from none.
func (s Spec) MarshalJSON() ([]byte, error) {
	return json.Marshal(specJSON{specFields: specFields(s), NoFaults: s.Faults != nil && len(s.Faults) == 0})
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var j specJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Spec(j.specFields)
	if j.NoFaults {
		s.Faults = []faults.Fault{}
	}
	return nil
}
