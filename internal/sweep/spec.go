package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// MaxJobs bounds a sweep's cross product (a complete results file is read
// into memory for the summary, the CSV and merge: about 1 KiB a job).
const MaxJobs = 10_000_000

// Spec is what a sweep runs; it is written to sweep.json, and a rerun into
// the same folder must give the same Spec (then it resumes).
type Spec struct {
	Format   int    `json:"format"`   // 1
	Scenario string `json:"scenario"` // a built-in id or a scenario file's path
	// ScenarioSHA256 is the scenario file's hash (a file only): a file
	// edited since makes a different sweep, which does not resume.
	ScenarioSHA256 string    `json:"scenario_sha256,omitempty"`
	Locks          []string  `json:"locks"`
	Seeds          int       `json:"seeds"`
	FirstSeed      uint64    `json:"first_seed"`
	Param          string    `json:"param,omitempty"`
	Values         []float64 `json:"values,omitempty"`
	// Base parameters every job gets (0: the scenario's default).
	Clients    int   `json:"clients,omitempty"`
	Nodes      int   `json:"nodes,omitempty"`
	DurationNS int64 `json:"duration_ns,omitempty"`
	LivenessNS int64 `json:"liveness_ns,omitempty"`
	Shard      int   `json:"shard"`
	Shards     int   `json:"shards"`
	// Backend is "" (the simulator) or "real" (real Redis: the
	// runners come from Sweep.NewRunner), with the lock's TTL there. A
	// sweep of one backend never resumes into the other's folder.
	Backend string `json:"backend,omitempty"`
	TTLNS   int64  `json:"ttl_ns,omitempty"`
	// Build names the locksim build that runs the sweep (the command sets
	// it: store.Ident.Runs, a hash of its sources but the scenarios and
	// designs, its dependencies, Go version and build settings, and the
	// swept locks' and built-in scenario's own files). Two builds may
	// give different results, so their shards never merge and a folder
	// never resumes under another build. "" in a sweep.json written
	// before builds were recorded.
	Build string `json:"build,omitempty"`
}

// otherBuild says how sweep a (in folder da) and b (in db) come from two
// builds, when that is all they differ in ("" otherwise).
func otherBuild(a, b Spec, da, db string) string {
	if a.Build == b.Build {
		return ""
	}
	name := func(s Spec) string {
		if s.Build == "" {
			return "a build that recorded none"
		}
		return fmt.Sprintf("build %.16s…", s.Build)
	}
	what := fmt.Sprintf("%s was run by %s, %s by %s", da, name(a), db, name(b))
	a.Build, b.Build = "", ""
	if !bytes.Equal(a.encode(), b.encode()) {
		return "" // another sweep, whatever its build
	}
	return what
}

// Job is one run of the cross product. Index is its position in job
// order: parameter value (outer), lock, seed (inner).
type Job struct {
	Index    int
	Lock     string
	Seed     uint64
	HasValue bool
	Value    float64
}

func (s *Spec) values() int { return max(1, len(s.Values)) }

// Total is the number of jobs of the whole (unsharded) sweep.
func (s *Spec) Total() int { return s.values() * len(s.Locks) * s.Seeds }

// Job is job i of the whole sweep.
func (s *Spec) Job(i int) Job {
	per := len(s.Locks) * s.Seeds
	vi, rest := i/per, i%per
	j := Job{Index: i, Lock: s.Locks[rest/s.Seeds], Seed: s.FirstSeed + uint64(rest%s.Seeds)}
	if len(s.Values) > 0 {
		j.HasValue, j.Value = true, s.Values[vi]
	}
	return j
}

// Mine reports whether job i belongs to this shard.
func (s *Spec) Mine(i int) bool { return i%s.Shards == s.Shard }

// shardJobs is how many jobs belong to this shard.
func (s *Spec) shardJobs() int {
	n := 0
	for i := 0; i < s.Total(); i++ {
		if s.Mine(i) {
			n++
		}
	}
	return n
}

// Base is the scenario parameters before the swept one is applied.
func (s *Spec) Base() scenarios.Params {
	return scenarios.Params{Clients: s.Clients, Nodes: s.Nodes, Duration: time.Duration(s.DurationNS), Liveness: time.Duration(s.LivenessNS)}
}

// FileParam is the Param prefix of a scenario file's own sweep (its
// sweep: block): "sweep:" and the block's name.
const FileParam = "sweep:"

// Run is job j as a run.Spec.
func (s *Spec) Run(j Job) run.Spec {
	rs := run.Spec{Scenario: s.Scenario, Lock: j.Lock, Seed: j.Seed, Params: s.Base()}
	switch {
	case !j.HasValue:
	case strings.HasPrefix(s.Param, FileParam):
		step := j.Index / (len(s.Locks) * s.Seeds)
		rs.Step = &step
	default:
		params[s.Param].apply(&rs, j.Value)
	}
	return rs
}

// FileSweep is the sweep a scenario file declares in its sweep: block, as
// a Spec's Param and Values (an error if it declares none).
func FileSweep(scenario string) (param string, values []float64, err error) {
	sc, err := scenarios.Resolve(scenario)
	if err != nil {
		return "", nil, err
	}
	if sc.File == nil || sc.File.Sweep == nil {
		return "", nil, fmt.Errorf("scenario %s has no sweep: block", sc.ID)
	}
	return FileParam + sc.File.Sweep.Name, sc.File.SweepNumbers(), nil
}

// unit is the swept parameter's unit, for axis labels.
func (s *Spec) unit() string {
	if strings.HasPrefix(s.Param, FileParam) {
		if sc, err := scenarios.Resolve(s.Scenario); err == nil && sc.File != nil {
			return sc.File.SweepUnit()
		}
		return ""
	}
	return ParamUnit(s.Param)
}

// Validate checks the sweep's shape and builds the first job of every
// (value, lock) pair, so a parameter a scenario or lock rejects is an
// input error before anything runs. Every error is an *InputError.
func (s *Spec) Validate() error {
	if s.Format != 1 {
		return &InputError{"", fmt.Errorf("sweep format %d (this locksim writes 1)", s.Format)}
	}
	if _, err := scenarios.Resolve(s.Scenario); err != nil {
		return &InputError{"scenario", err}
	}
	if h := run.ScenarioHash(s.Scenario); h != s.ScenarioSHA256 {
		return &InputError{"scenario", fmt.Errorf("%s: the spec names sha256 %.12s…, the file has %.12s…", s.Scenario, s.ScenarioSHA256, h)}
	}
	if len(s.Locks) == 0 {
		return &InputError{"locks", fmt.Errorf("no lock")}
	}
	if s.Seeds < 1 {
		return &InputError{"seeds", fmt.Errorf("%d: want at least 1", s.Seeds)}
	}
	if s.FirstSeed > math.MaxUint64-uint64(s.Seeds)+1 {
		return &InputError{"first-seed", fmt.Errorf("%d + %d seeds runs past the largest seed", s.FirstSeed, s.Seeds)}
	}
	if s.Shards < 1 || s.Shard < 0 || s.Shard >= s.Shards {
		return &InputError{"shard", fmt.Errorf("%d/%d: want 0 <= i < n", s.Shard, s.Shards)}
	}
	if (s.Param == "") != (len(s.Values) == 0) {
		return &InputError{"param", fmt.Errorf("a parameter needs its values, and values their parameter")}
	}
	if strings.HasPrefix(s.Param, FileParam) {
		p, vals, err := FileSweep(s.Scenario)
		if err != nil {
			return &InputError{"param", err}
		}
		if p != s.Param || !slices.Equal(vals, s.Values) {
			return &InputError{"param", fmt.Errorf("%s with %d values is not the sweep %s declares (%s, %d values)", s.Param, len(s.Values), s.Scenario, p, len(vals))}
		}
	} else if s.Param != "" {
		if _, ok := params[s.Param]; !ok {
			return &InputError{"param", fmt.Errorf("unknown parameter %q (one of: %s)", s.Param, ParamNames())}
		}
	}
	if total := s.Total(); total > MaxJobs || total < 0 {
		return &InputError{"", fmt.Errorf("the sweep has %d jobs (values × locks × seeds); at most %d", total, MaxJobs)}
	}
	for vi := 0; vi < s.values(); vi++ {
		for li := range s.Locks {
			j := s.Job((vi*len(s.Locks) + li) * s.Seeds)
			if _, err := s.Run(j).Build(); err != nil {
				what := "lock " + j.Lock
				if j.HasValue {
					what += fmt.Sprintf(", %s=%s", s.Param, run.FormatValue(j.Value))
				}
				return &InputError{"", fmt.Errorf("%s: %v", what, err)}
			}
		}
	}
	return nil
}

// Describe is the sweep in a few words, for messages.
func (s *Spec) Describe() string {
	d := fmt.Sprintf("scenario %s, locks %s, %d seeds from %d", s.Scenario, strings.Join(s.Locks, ","), s.Seeds, s.FirstSeed)
	if s.Param != "" {
		vs := make([]string, len(s.Values))
		for i, v := range s.Values {
			vs[i] = run.FormatValue(v)
		}
		d += fmt.Sprintf(", %s=%s", s.Param, strings.Join(vs, ","))
	}
	if s.Shards > 1 {
		d += fmt.Sprintf(", shard %d/%d", s.Shard, s.Shards)
	}
	return d
}

// encode is the Spec as sweep.json holds it.
func (s *Spec) encode() []byte {
	b, _ := json.MarshalIndent(s, "", "  ")
	return append(b, '\n')
}

// firstDiff names the first field (in sweep.json's order) in which two
// specs differ, with both values as JSON; "" when none does.
func firstDiff(a, b Spec) (field, av, bv string) {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	for i := 0; i < t.NumField(); i++ {
		if !t.Field(i).IsExported() {
			continue
		}
		x, _ := json.Marshal(va.Field(i).Interface())
		y, _ := json.Marshal(vb.Field(i).Interface())
		if !bytes.Equal(x, y) {
			name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
			if name == "" {
				name = t.Field(i).Name
			}
			const maxLen = 80
			cut := func(s []byte) string {
				if len(s) > maxLen {
					return string(s[:maxLen]) + "…"
				}
				return string(s)
			}
			return name, cut(x), cut(y)
		}
	}
	return "", "", ""
}

// differs describes another sweep's spec (held in a folder) against s.
func (s *Spec) differs(have []byte) string {
	var old Spec
	if json.Unmarshal(have, &old) != nil {
		return "an unreadable spec"
	}
	desc := old.Describe()
	if f, a, b := firstDiff(old, *s); f != "" {
		desc += fmt.Sprintf("; first difference: %s is %s there, %s here", f, a, b)
	}
	return desc
}

// Line is one job's result: one line of results.jsonl. Field order is
// fixed (struct order); nothing in it depends on the machine, so a
// sweep's lines are the same bytes however it was run (workers, shards,
// resumes).
type Line struct {
	Job      int      `json:"job"`
	Scenario string   `json:"scenario"`
	Lock     string   `json:"lock"`
	Seed     uint64   `json:"seed"`
	Param    string   `json:"param"`
	Value    *float64 `json:"value"`
	Outcome
}

// Line is job j's line with its outcome.
func (s *Spec) Line(j Job, o Outcome) Line {
	l := Line{Job: j.Index, Scenario: s.Scenario, Lock: j.Lock, Seed: j.Seed, Param: s.Param, Outcome: o}
	if j.HasValue {
		v := j.Value
		l.Value = &v
	}
	return l
}

// Matches reports whether l is the line its job of this spec would write.
func (s *Spec) Matches(l Line) bool {
	if l.Job < 0 || l.Job >= s.Total() || !s.Mine(l.Job) {
		return false
	}
	j := s.Job(l.Job)
	if l.Scenario != s.Scenario || l.Lock != j.Lock || l.Seed != j.Seed || l.Param != s.Param {
		return false
	}
	if j.HasValue != (l.Value != nil) {
		return false
	}
	return !j.HasValue || *l.Value == j.Value
}

// ---- the parameters a sweep can vary ----

// param is a parameter a sweep can vary.
type param struct {
	unit     string // for axis labels and help
	integer  bool
	min, max float64
	minOpen  bool // min itself is not allowed
	apply    func(rs *run.Spec, v float64)
}

func seconds(v float64) time.Duration { return time.Duration(math.Round(v * 1e9)) }

var params = map[string]param{
	"clients": {unit: "clients", integer: true, min: 1, max: sim.MaxClients,
		apply: func(rs *run.Spec, v float64) { rs.Params.Clients = int(v) }},
	"nodes": {unit: "nodes", integer: true, min: 1, max: sim.MaxNodes,
		apply: func(rs *run.Spec, v float64) { rs.Params.Nodes = int(v) }},
	"duration": {unit: "s", min: 0, minOpen: true, max: sim.MaxDuration.Seconds(),
		apply: func(rs *run.Spec, v float64) { rs.Params.Duration = seconds(v) }},
	"liveness": {unit: "s", min: 0, minOpen: true, max: sim.MaxDuration.Seconds(),
		apply: func(rs *run.Spec, v float64) { rs.Params.Liveness = seconds(v) }},
	"repl-lag": {unit: "s", min: 0, minOpen: true, max: 600,
		apply: func(rs *run.Spec, v float64) { rs.Params.ReplLag = seconds(v) }},
	"pause": {unit: "× TTL", min: 0, max: 100,
		apply: func(rs *run.Spec, v float64) { rs.Pause = &v }},
}

// ParamNames lists the parameters a sweep can vary, sorted.
func ParamNames() string {
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// ParamUnit is a parameter's unit, for axis labels ("" if unknown).
func ParamUnit(name string) string { return params[name].unit }

// MaxParamSteps bounds a parameter's steps.
const MaxParamSteps = 1000

// ParseParam reads "name=from:to:steps" (steps evenly spaced values, both
// ends included) or "name=v1,v2,..." into the name and its values.
// Durations take a unit ("500ms:5s:10") or are seconds.
func ParseParam(s string) (string, []float64, error) {
	name, spec, ok := strings.Cut(s, "=")
	if !ok || name == "" || spec == "" {
		return "", nil, fmt.Errorf("%q: want name=from:to:steps or name=v1,v2,... (names: %s)", s, ParamNames())
	}
	def, ok := params[name]
	if !ok {
		return "", nil, fmt.Errorf("unknown parameter %q (one of: %s)", name, ParamNames())
	}
	num := func(x string) (float64, error) {
		x = strings.TrimSpace(x)
		if def.unit == "s" {
			if d, err := time.ParseDuration(x); err == nil {
				return d.Seconds(), nil
			}
		}
		v, err := strconv.ParseFloat(x, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			unit := "a number"
			if def.unit == "s" {
				unit = "a number of seconds or a duration (500ms, 2s)"
			}
			return 0, fmt.Errorf("%s: %q is not %s", name, x, unit)
		}
		return v, nil
	}
	var vals []float64
	if parts := strings.Split(spec, ":"); len(parts) == 3 {
		from, err := num(parts[0])
		if err != nil {
			return "", nil, err
		}
		to, err := num(parts[1])
		if err != nil {
			return "", nil, err
		}
		steps, err := strconv.Atoi(strings.TrimSpace(parts[2]))
		if err != nil || steps < 1 || steps > MaxParamSteps {
			return "", nil, fmt.Errorf("%s: steps %q out of range (1..%d)", name, parts[2], MaxParamSteps)
		}
		for i := 0; i < steps; i++ {
			v := from
			if steps > 1 {
				v = from + (to-from)*float64(i)/float64(steps-1)
			}
			vals = append(vals, v)
		}
	} else if len(parts) == 1 {
		list := strings.Split(spec, ",")
		if len(list) > MaxParamSteps {
			return "", nil, fmt.Errorf("%s: %d values, at most %d", name, len(list), MaxParamSteps)
		}
		for _, x := range list {
			v, err := num(x)
			if err != nil {
				return "", nil, err
			}
			vals = append(vals, v)
		}
	} else {
		return "", nil, fmt.Errorf("%s: %q: want from:to:steps or v1,v2,...", name, spec)
	}
	for i, v := range vals {
		// 12 significant digits: 0.1*3 prints as 0.3, in JSON and on axes.
		v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
		vals[i] = v
		if def.integer && v != math.Trunc(v) {
			return "", nil, fmt.Errorf("%s: value %s is not a whole number (choose from:to:steps so every step is one)", name, run.FormatValue(v))
		}
		if v < def.min || (def.minOpen && v == def.min) || v > def.max {
			lo := "["
			if def.minOpen {
				lo = "("
			}
			return "", nil, fmt.Errorf("%s: value %s out of range %s%s, %s]", name, run.FormatValue(v), lo, run.FormatValue(def.min), run.FormatValue(def.max))
		}
		if slices.Contains(vals[:i], v) {
			return "", nil, fmt.Errorf("%s: value %s appears twice", name, run.FormatValue(v))
		}
	}
	return name, vals, nil
}

// AvailableLocks are the catalogue's locks this binary can run (a design
// behind a build tag is listed but Unavailable).
func AvailableLocks() []string {
	var ids []string
	for _, id := range catalogue.IDs() {
		if info, _ := catalogue.Get(id); info.Unavailable == "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// ParseLocks reads a comma-separated list of lock ids ("" or "all": every
// lock this binary can run). Every error is an *InputError on "locks".
func ParseLocks(s string) ([]string, error) {
	if s == "" || s == "all" {
		return AvailableLocks(), nil
	}
	var out []string
	for _, id := range strings.Split(s, ",") {
		id = strings.TrimSpace(id)
		info, err := catalogue.Get(id)
		if err != nil {
			return nil, &InputError{"locks", fmt.Errorf("unknown lock %q (one of: %s)", id, strings.Join(catalogue.IDs(), ", "))}
		}
		if info.Unavailable != "" {
			return nil, &InputError{"locks", fmt.Errorf("%s is %s", id, info.Unavailable)}
		}
		if slices.Contains(out, id) {
			return nil, &InputError{"locks", fmt.Errorf("%q appears twice", id)}
		}
		out = append(out, id)
	}
	return out, nil
}

// ParseShard reads "i/n".
func ParseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%q: want i/n, e.g. 0/4", s)
	}
	if n < 1 || n > 1_000_000 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("%q: want 0 <= i < n <= 1000000", s)
	}
	return i, n, nil
}
