package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/locksim/locksim/clock"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/inputfile"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/sim"
)

// A scenario file (YAML) describes one world, its workload, its fault
// schedule, the locks it is meant for and what each side of the Redlock
// debate expects of them. Every field but id and description is optional;
// the zero values take the defaults named below. A short example:
//
//	id: pause-after-check
//	description: the holder stops right after its validity check, for longer than the TTL
//	source: Kleppmann 2016, "How to do distributed locking" (the GC-pause figure)
//	clients: {count: 5}
//	duration: 8ttl            # durations: Go syntax (1.5s, 200ms) or a multiple of the lock's TTL
//	liveness: 6ttl
//	faults:
//	  - {kind: client-pause, at: after-check, start: 1ttl, duration: 1.5ttl, targets: [c0]}
//	locks: [set-nx-cad, fencing]
//	expect:
//	  set-nx-cad: {kleppmann: unsafe, antirez: unsafe, agreed: unsafe}
//	  fencing:    {kleppmann: safe, antirez: safe, agreed: safe}
//
// Decoding is strict: an unknown field, a wrong type or a value out of
// range is an error naming the file, line, column and field
// ("f.yaml:12:15: faults[2].duration: ..."). Anchors, aliases, merge keys
// and tags are not accepted (a file stays readable top to bottom, and its
// size bounds its expansion). A file is at most MaxFileBytes (256 KiB),
// nests at most 32 levels deep, and has at most 1000 entries in a list and
// 128 keys in a mapping: the YAML parser's cost grows faster than the
// file's size, so these are checked before it runs (checkShape).

// File is a parsed, validated scenario file.
type File struct {
	ID          string `yaml:"id"`
	Description string `yaml:"description"`
	// Source cites where the scenario comes from (article, seed, issue).
	Source string `yaml:"source"`
	// Debate names the row of the debate's outcome table (S1 … S14), if any.
	Debate   string       `yaml:"debate"`
	Topology TopologySpec `yaml:"topology"`
	Clients  ClientsSpec  `yaml:"clients"`
	// Duration of the safety phase (default 30 s) and of the liveness phase
	// after the heal (default 10 s).
	Duration Span `yaml:"duration"`
	Liveness Span `yaml:"liveness"`
	// MaxUnavailable > 0 makes a window longer than it in which clients
	// were trying to acquire and nobody held the lock a liveness failure
	// (checker.Options.MaxUnavailable).
	MaxUnavailable Span         `yaml:"max_unavailable"`
	Net            NetSpec      `yaml:"net"`
	Workload       WorkloadSpec `yaml:"workload"`
	// Faults is a scripted schedule; Swarm instead draws one from the seed.
	// At most one of the two.
	Faults []FaultSpec `yaml:"faults"`
	Swarm  *SwarmSpec  `yaml:"swarm"`
	// Locks are the lock ids the scenario is meant for: each has an
	// Expect entry. Other locks can still be run in it.
	Locks []string `yaml:"locks"`
	// Matrix false keeps the scenario out of the report's matrix: the
	// report runs it only for a curve or an estimate of its own (the
	// per-hour estimate's background faults). Default true.
	Matrix *bool `yaml:"matrix"`
	// NotFor names locks that fit the scenario's topology but that the
	// report does not run in it, each with why (the matrix shows — and
	// the reason; 'locksim run' still runs them).
	NotFor map[string]string `yaml:"not_for"`
	// Params override a lock's own parameters in this scenario, by lock id.
	Params map[string]LockParams `yaml:"params"`
	Sweep  *SweepSpec            `yaml:"sweep"`
	// Expect holds, per lock id, the outcome each side of the debate
	// expects. The simulator's verdict never comes from here: tests compare
	// what a run measures against it.
	Expect map[string]Expectation `yaml:"expect"`

	// swept: in a step of a faults[*] sweep (AtSweep), the faults the
	// original file's sweep sets (a step of 0 would otherwise set none).
	swept []int

	name string      // the file's name in error messages
	ix   *fieldIndex // where each field is, for errors after parsing
}

// TopologySpec is the Redis side of the world.
type TopologySpec struct {
	// Nodes is the node count; 0 lets the lock decide (1 for a single
	// node, 5 independent nodes, 1 primary + 2 replicas).
	Nodes int `yaml:"nodes"`
	// Replicated makes node 0 a primary with async replicas and Sentinel
	// failover; absent, the lock's topology decides.
	Replicated *bool `yaml:"replicated"`
	ReplLag    Span  `yaml:"repl_lag"` // added to every replication message
	// ReplLagUpTo draws the replication lag from the seed instead,
	// uniform in [0, ReplLagUpTo) (the default scenario's 50 ms); an
	// absolute duration, not with ReplLag.
	ReplLagUpTo Span `yaml:"repl_lag_up_to"`
	DownAfter   Span `yaml:"down_after"` // Sentinel's down-after (default 5 s)
	// Persistence of every node on crash: none (default), everysec,
	// always, or random: each node's drawn from the seed, uniformly.
	Persistence string `yaml:"persistence"`
	// PerNode overrides persistence and sets clocks, by node name (n0, n1 …).
	PerNode map[string]NodeSpec `yaml:"per_node"`
	// Groups splits a replicated world into this many primary/replica
	// groups of Nodes nodes each, named on across groups (group g is
	// n(g·Nodes) …), each failed over by Sentinel on its own; a failover
	// fault's targets name groups (g0, g1 …; none: every group). Absent,
	// the world has one group, except for a lock that needs groups
	// (redisson-multilock): its world is locks.DefaultGroups copies of the
	// file's group, and a fault or per-node setting naming node nX applies
	// to nX of every group.
	Groups int `yaml:"groups"`
}

// NodeSpec is one node's persistence and clock.
type NodeSpec struct {
	Persistence string `yaml:"persistence"`
	ClockOffset Span   `yaml:"clock_offset"`
	DriftPPM    int64  `yaml:"drift_ppm"`
}

// ClientsSpec is the lock clients.
type ClientsSpec struct {
	Count int `yaml:"count"` // default 5
	// PerClient sets clocks by client name (c0, c1 …).
	PerClient map[string]ClockSpec `yaml:"per_client"`
}

// ClockSpec is a process clock's offset from true time at t=0 and its
// drift rate.
type ClockSpec struct {
	ClockOffset Span  `yaml:"clock_offset"`
	DriftPPM    int64 `yaml:"drift_ppm"`
}

// NetSpec is the network's normal one-way latency: LatencyMin plus an
// exponential with mean LatencyJitter (defaults 200 µs + 300 µs).
type NetSpec struct {
	LatencyMin    Span `yaml:"latency_min"`
	LatencyJitter Span `yaml:"latency_jitter"`
}

// WorkloadSpec is what clients do while they hold the lock.
type WorkloadSpec struct {
	// Resource is pool (default: seed 001's bonus pool, decremented),
	// counter (incremented from 0) or none (the section only takes time).
	Resource string `yaml:"resource"`
	PoolSize *int64 `yaml:"pool_size"` // default 300
	// Hold and Think are [min, max] ranges: the critical section's length
	// and the pause between attempts (defaults [50ms, 1s], [10ms, 500ms]).
	Hold  []Span `yaml:"hold"`
	Think []Span `yaml:"think"`
	// Reentrant: a reentrant lock's holder acquires again inside its
	// section (Workload.Reentrant); other locks ignore it.
	Reentrant bool `yaml:"reentrant"`
	// ReadFraction: a read-write lock's clients (locks.Info.ReadWrite)
	// take the read lock for this fraction of their rounds, drawn per
	// round, and only read the storage then (Workload.ReadFraction);
	// other locks ignore it. 0..1, default 0 (every round writes).
	ReadFraction float64 `yaml:"read_fraction"`
}

// FaultSpec is one scripted fault (faults.Fault) with durations that may
// be multiples of the lock's TTL, an optional repetition, and an optional
// restriction to some locks.
type FaultSpec struct {
	Kind     string   `yaml:"kind"`
	Start    Span     `yaml:"start"`
	Duration Span     `yaml:"duration"`
	Targets  []string `yaml:"targets"`
	From     []string `yaml:"from"`
	To       []string `yaml:"to"`
	OneWay   bool     `yaml:"one_way"`
	DriftPPM int64    `yaml:"drift_ppm"`
	Jump     Span     `yaml:"jump"`
	Delay    Span     `yaml:"delay"`
	LossProb float64  `yaml:"loss_prob"`
	At       string   `yaml:"at"`
	// NodeClock times a crash's duration on the crashed node's own clock
	// (a delayed restart's timer): see faults.Fault.NodeClock.
	NodeClock bool `yaml:"node_clock"`
	// Repeat the fault Count times, Every apart (Count 0 or 1: once).
	Repeat *RepeatSpec `yaml:"repeat"`
	// Locks, if set, restricts the fault to these lock ids (a scenario
	// that serves several topologies scripts each). A lock that no fault's
	// Locks names (a library, a user's lock) takes the faults of its
	// topology's StandIn.
	Locks []string `yaml:"locks"`
}

// RepeatSpec repeats a fault.
type RepeatSpec struct {
	Count int  `yaml:"count"`
	Every Span `yaml:"every"`
}

// SwarmSpec draws a random fault mix from the seed (faults.Swarm).
type SwarmSpec struct {
	MinFaults int      `yaml:"min_faults"`
	MaxFaults int      `yaml:"max_faults"`
	Kinds     []string `yaml:"kinds"` // default: every kind that applies
}

// InMatrix reports whether the report's matrix has a row for the file.
func (f *File) InMatrix() bool { return f.Matrix == nil || *f.Matrix }

// SweepSpec names one parameter to sweep over a range (for `locksim
// sweep`): Steps values from From to To, evenly spaced, or the listed
// Values.
type SweepSpec struct {
	Name  string     `yaml:"name"`
	From  SweepBound `yaml:"from"`
	To    SweepBound `yaml:"to"`
	Steps int        `yaml:"steps"`
	// Values, instead of From, To and Steps, lists the values (in
	// increasing order): a sweep finer where it matters.
	Values []SweepBound `yaml:"values"`
}

// SweepBound is a sweep's from or to: a duration (Span) or a plain number,
// as the swept parameter needs.
type SweepBound struct {
	Span  Span
	Num   float64
	IsNum bool
}

// Set reports whether the bound was given.
func (b SweepBound) Set() bool { return b.IsNum || b.Span.Set }

func (b SweepBound) String() string {
	if b.IsNum {
		return strconv.FormatFloat(b.Num, 'g', -1, 64)
	}
	return b.Span.String()
}

// UnmarshalYAML implements yaml.NodeUnmarshaler.
func (b *SweepBound) UnmarshalYAML(node ast.Node) error {
	if v, ok := sweepNumber(node); ok {
		*b = SweepBound{Num: v, IsNum: true}
		return nil
	}
	*b = SweepBound{}
	return b.Span.UnmarshalYAML(node)
}

// Expectation is what the debate expects of one lock in this scenario.
type Expectation struct {
	// Role is the lock's column in the debate's table (A1 … A6), if any.
	Role string `yaml:"role"`
	// Kleppmann and Antirez: safe | unsafe | liveness | - (no position).
	Kleppmann string `yaml:"kleppmann"`
	Antirez   string `yaml:"antirez"`
	// Agreed is the outcome both sides accept (DEBATE.md's table).
	Agreed string `yaml:"agreed"`
	// OutsideAssumptions: the scenario breaks the lock's own stated
	// assumptions (e.g. clock drift beyond its configured allowance).
	OutsideAssumptions bool `yaml:"outside_assumptions"`
	// Simulated, when set, is the verdict the simulation gives where it
	// contradicts Agreed; Note must say why. Tests compare the measured
	// verdict with Simulated then, so the contradiction stays checked.
	Simulated string `yaml:"simulated"`
	Note      string `yaml:"note"`
	// Seed, for an unsafe expectation that only a few percent of seeds
	// show, is one seed that shows it: tests run it beside the first
	// seeds, so the expectation stays checked at a test's small budget.
	Seed uint64 `yaml:"seed"`
}

// Want is the verdict a run of this lock should measure: Simulated when
// the file records a contradiction, else Agreed.
func (e Expectation) Want() string {
	if e.Simulated != "" {
		return e.Simulated
	}
	return e.Agreed
}

// Span is a duration in a scenario file: Go syntax ("1.5s", "200ms", "0")
// or a multiple of the lock's TTL ("1.5ttl"), resolved when the scenario is
// built for a lock.
type Span struct {
	NS   time.Duration // absolute part
	TTLs float64       // multiple of the TTL (0: absolute)
	Set  bool          // given in the file
	// AtLeast: the span is the longer of NS and TTLs × the TTL (written
	// max(30s, 2ttl)); NS alone for a lock without a TTL.
	AtLeast bool
}

// IsTTL reports whether s is a multiple of the TTL.
func (s Span) IsTTL() bool { return s.TTLs != 0 }

// String renders s as it would be written in a file.
func (s Span) String() string {
	if s.AtLeast {
		return fmt.Sprintf("max(%v, %sttl)", s.NS, strconv.FormatFloat(s.TTLs, 'g', -1, 64))
	}
	if s.TTLs != 0 {
		return strconv.FormatFloat(s.TTLs, 'g', -1, 64) + "ttl"
	}
	return s.NS.String()
}

// Resolve turns s into a duration for a lock with the given TTL.
func (s Span) Resolve(ttl time.Duration) (time.Duration, error) {
	if s.TTLs == 0 || (s.AtLeast && ttl <= 0) {
		return s.NS, nil
	}
	if s.AtLeast {
		v, err := Span{TTLs: s.TTLs, Set: true}.Resolve(ttl)
		return max(v, s.NS), err
	}
	if ttl <= 0 {
		return 0, fmt.Errorf("%s is relative to the lock's TTL, and this lock has none", s)
	}
	v := s.TTLs * float64(ttl)
	if math.Abs(v) > float64(sim.MaxDuration) {
		return 0, fmt.Errorf("%s is %v for a TTL of %v: out of range ±%v", s, time.Duration(v), ttl, sim.MaxDuration)
	}
	return time.Duration(math.Round(v)), nil
}

// maxTTLs bounds a TTL multiple (a file-level sanity bound; the resolved
// duration is checked against sim.MaxDuration).
const maxTTLs = 100_000

// UnmarshalYAML implements yaml.NodeUnmarshaler.
func (s *Span) UnmarshalYAML(node ast.Node) error {
	var raw string
	switch n := node.(type) {
	case *ast.NullNode:
		*s = Span{}
		return nil
	case *ast.IntegerNode, *ast.FloatNode:
		raw = n.GetToken().Value
	case *ast.StringNode:
		raw = n.Value
	default:
		return &posError{tok: node.GetToken(), msg: fmt.Sprintf("want a duration (1.5s, 200ms) or a multiple of the TTL (1.5ttl), got %s", nodeKind(node))}
	}
	v, err := ParseSpan(raw)
	if err != nil {
		return &posError{tok: node.GetToken(), msg: err.Error()}
	}
	*s = v
	return nil
}

// ParseSpan parses a duration in Go syntax or a multiple of the TTL
// ("1.5ttl"). A bare number must be 0 (a missing unit is an error).
func ParseSpan(raw string) (Span, error) {
	t := strings.TrimSpace(raw)
	if inner, ok := strings.CutPrefix(t, "max("); ok && strings.HasSuffix(inner, ")") {
		return parseAtLeast(raw, strings.TrimSuffix(inner, ")"))
	}
	if k, ok := strings.CutSuffix(t, "ttl"); ok {
		k = strings.TrimSpace(k)
		if k == "" {
			k = "1"
		}
		f, err := strconv.ParseFloat(k, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return Span{}, fmt.Errorf("%q is not a multiple of the TTL (want e.g. 1.5ttl)", raw)
		}
		if math.Abs(f) > maxTTLs {
			return Span{}, fmt.Errorf("%q: TTL multiple out of range ±%d", raw, maxTTLs)
		}
		if f == 0 {
			return Span{Set: true}, nil
		}
		return Span{TTLs: f, Set: true}, nil
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Span{}, fmt.Errorf("%q is not a duration (want e.g. 1.5s, 200ms, or a multiple of the TTL: 1.5ttl)", raw)
		}
		if f != 0 {
			return Span{}, fmt.Errorf("%q has no unit (want e.g. %ss, %sms or %sttl)", raw, t, t, t)
		}
		return Span{Set: true}, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return Span{}, fmt.Errorf("%q is not a duration (want e.g. 1.5s, 200ms, or a multiple of the TTL: 1.5ttl)", raw)
	}
	if d > sim.MaxDuration || d < -sim.MaxDuration {
		return Span{}, fmt.Errorf("%q out of range ±%v", raw, sim.MaxDuration)
	}
	return Span{NS: d, Set: true}, nil
}

// parseAtLeast parses the inside of max(a, b): one absolute duration and
// one multiple of the TTL, in either order.
func parseAtLeast(raw, inner string) (Span, error) {
	bad := fmt.Errorf("%q: max takes a duration and a multiple of the TTL (e.g. max(30s, 2ttl))", raw)
	a, b, ok := strings.Cut(inner, ",")
	if !ok || strings.Contains(b, ",") || strings.Contains(inner, "max(") {
		return Span{}, bad
	}
	x, err := ParseSpan(a)
	if err != nil {
		return Span{}, err
	}
	y, err := ParseSpan(b)
	if err != nil {
		return Span{}, err
	}
	if x.IsTTL() {
		x, y = y, x
	}
	if x.IsTTL() || !y.IsTTL() || x.NS < 0 || y.TTLs < 0 {
		return Span{}, bad
	}
	return Span{NS: x.NS, TTLs: y.TTLs, Set: true, AtLeast: true}, nil
}

// Limits of a scenario file.
const (
	MaxFileBytes  = 256 << 10 // a larger file is rejected before parsing
	MaxFileFaults = 1000      // scripted faults after repetition
)

// FileError is an error in a scenario file: where, which field, what.
type FileError struct {
	File   string
	Line   int // 0: the file as a whole
	Column int
	Field  string // e.g. "faults[2].duration"; "" when none applies
	Msg    string
}

// Error is one line: "file[:line[:column]]: [field: ]message", control
// characters (a key with a newline in it) escaped.
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(oneLine(e.File))
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(cutLong(oneLine(e.Field), 120))
		b.WriteString(": ")
	}
	b.WriteString(cutLong(oneLine(e.Msg), 400))
	return b.String()
}

// cutLong shortens s to about n bytes (on a rune boundary), saying how
// much was left out: a 500 KB key is not echoed whole.
func cutLong(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:i], len(s)-i)
}

// oneLine escapes control characters so that a message stays on one line.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// posError is an error a custom decoder found at a token.
type posError struct {
	tok *token.Token
	msg string
}

func (e *posError) Error() string { return e.msg }

// LoadFile reads and parses a scenario file. Only a regular file is read
// (not a directory, device or FIFO), and at most MaxFileBytes of it.
func LoadFile(path string) (*File, error) {
	data, err := inputfile.Read(path, MaxFileBytes)
	if err != nil {
		var tl *inputfile.TooLargeError
		switch {
		case errors.As(err, &tl):
			return nil, &FileError{File: path, Msg: err.Error() + " of a scenario file"}
		case inputfile.NotRegular(err):
			return nil, &FileError{File: path, Msg: err.Error() + ", not a scenario file"}
		}
		return nil, &FileError{File: path, Msg: err.Error()}
	}
	return Parse(path, data)
}

// Parse parses and validates a scenario file's bytes; name is used in
// error messages. It checks everything that does not need a run: syntax,
// types, unknown fields, ranges, names, and that the scenario builds for
// every lock it lists. It never panics: a failure inside the YAML library
// is reported as an error too.
func Parse(name string, data []byte) (f *File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, &FileError{File: name, Msg: fmt.Sprintf("the YAML parser failed on this file (%v)", r)}
		}
	}()
	if len(data) > MaxFileBytes {
		return nil, &FileError{File: name, Msg: fmt.Sprintf("%d bytes: larger than the %d-byte limit of a scenario file", len(data), MaxFileBytes)}
	}
	// A UTF-8 byte order mark (some editors write one) is not part of the
	// first key.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	// The lexer is linear in the file's size; the parser is not in its
	// nesting depth, so the depth is bounded between the two.
	toks := lexer.Tokenize(string(data))
	if err := checkShape(toks); err != nil {
		return nil, yamlError(name, nil, err)
	}
	astFile, err := parser.Parse(toks, 0)
	if err != nil {
		return nil, yamlError(name, nil, err)
	}
	var body ast.Node
	for _, d := range astFile.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if _, ok := d.Body.(*ast.CommentGroupNode); ok {
			continue
		}
		if body != nil {
			return nil, &FileError{File: name, Line: d.Body.GetToken().Position.Line, Msg: "more than one YAML document: a scenario file holds one"}
		}
		body = d.Body
	}
	if body == nil {
		return nil, &FileError{File: name, Msg: "empty scenario file (want at least id and description)"}
	}
	ix := &fieldIndex{byPath: map[string]*token.Position{}, byPos: map[[2]int]string{}}
	if err := ix.walk(body, ""); err != nil {
		return nil, ix.fileError(name, err)
	}
	switch body.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		return nil, &FileError{File: name, Line: body.GetToken().Position.Line, Column: body.GetToken().Position.Column,
			Msg: fmt.Sprintf("want a mapping of fields (id, description, …), got %s", nodeKind(body))}
	}
	f = &File{}
	if err := checkTypes(body, reflect.TypeOf(f)); err != nil {
		return nil, ix.fileError(name, err)
	}
	if err := yaml.NodeToValue(body, f, yaml.Strict()); err != nil {
		return nil, yamlError(name, ix, err)
	}
	f.name, f.ix = name, ix
	if err := f.validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// yamlError turns an error of the YAML library into a FileError.
func yamlError(name string, ix *fieldIndex, err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		return ix.at(name, pe.tok, pe.msg)
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg := ye.GetMessage()
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msg = fmt.Sprintf("want %s, got %s", typeWord(te.DstType.String()), typeWord(te.SrcType.String()))
		}
		var oe *yaml.OverflowError
		if errors.As(err, &oe) {
			msg = fmt.Sprintf("%s is out of range for %s", oe.SrcNum, typeWord(oe.DstType.String()))
		}
		var ue *yaml.UnexpectedNodeTypeError
		if errors.As(err, &ue) {
			msg = fmt.Sprintf("want %s, got %s", nodeTypeWord(ue.Expected), nodeTypeWord(ue.Actual))
		}
		e := ix.at(name, ye.GetToken(), msg)
		if strings.HasPrefix(msg, "unknown field") {
			if hint := unknownFieldHint(e.Field); hint != "" {
				e.Msg += " (" + hint + ")"
			}
		}
		return e
	}
	return &FileError{File: name, Msg: err.Error()}
}

// typeWord names a Go type the way a scenario file's reader thinks of it.
func typeWord(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), t == "*int", t == "*int64":
		return "an integer"
	case strings.HasPrefix(t, "float"), t == "*float64":
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.Contains(t, "scenarios."), strings.Contains(t, "Spec"):
		return "a mapping"
	}
	return t
}

func nodeTypeWord(t ast.NodeType) string {
	switch t {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.StringType, ast.LiteralType:
		return "a string"
	case ast.IntegerType:
		return "an integer"
	case ast.FloatType:
		return "a number"
	case ast.BoolType:
		return "a boolean"
	case ast.NullType:
		return "nothing"
	}
	return strings.ToLower(t.String())
}

func nodeKind(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode:
		return "an integer"
	case *ast.FloatNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.NullNode:
		return "nothing"
	}
	return strings.ToLower(n.Type().String())
}

// fieldIndex knows where each field of a file is: path → position, and
// position → path (for the YAML library's errors, which carry a token).
type fieldIndex struct {
	byPath map[string]*token.Position
	byPos  map[[2]int]string
}

// Bounds on a scenario file's shape (checkShape): a 6 KB built-in file
// has 1,500 tokens, nests 5 deep, and its longest list has 20 entries.
const (
	maxNesting = 32
	maxEntries = 1000 // in a list: MaxFileFaults
	maxKeys    = 128  // in a mapping (the parser is quadratic in them)
	maxTokens  = 100_000
)

// checkShape bounds what go-yaml's parser is given, from the lexer's
// tokens alone: the parser takes time and memory quadratic in a
// collection's nesting depth and in a block mapping's number of keys
// (issue 36: 16,000 levels of "{a: " took 0.7 s and 550 MB; 20,000 keys in
// one mapping 1.9 s), so both are bounded before it runs, and so are the
// entries of a list and the number of tokens. Flow collections ([, {) count one level each, and their
// commas count entries; block ones are a stack of the columns where their
// entries ("-", "?", a key) start: an entry further right opens a level,
// one further left closes those right of it, one at the same column is the
// next entry, and a list may sit at its key's own column. The depth errs
// high, never low; walk checks the exact depth after.
func checkShape(toks token.Tokens) *posError {
	type level struct {
		col     int
		list    bool
		entries int
	}
	var block, flow []level
	tooDeep := func(tk *token.Token) *posError {
		if len(block)+len(flow) > maxNesting {
			return &posError{tok: tk, msg: fmt.Sprintf("nested deeper than %d levels", maxNesting)}
		}
		return nil
	}
	tooMany := func(tk *token.Token, l *level) *posError {
		if l.entries++; l.list && l.entries > maxEntries {
			return &posError{tok: tk, msg: fmt.Sprintf("more than %d entries in one list", maxEntries)}
		} else if !l.list && l.entries > maxKeys {
			return &posError{tok: tk, msg: fmt.Sprintf("more than %d keys in one mapping", maxKeys)}
		}
		return nil
	}
	var prev *token.Token
	for i, tk := range toks {
		if i == maxTokens {
			return &posError{tok: tk, msg: fmt.Sprintf("more than %d YAML tokens (keys, values, punctuation, comments): too large for a scenario file", maxTokens)}
		}
		if tk == nil || tk.Position == nil || tk.Type == token.CommentType {
			continue
		}
		var err *posError
		switch tk.Type {
		case token.DocumentHeaderType, token.DocumentEndType:
			block, flow = block[:0], flow[:0]
		case token.SequenceStartType, token.MappingStartType:
			flow = append(flow, level{list: tk.Type == token.SequenceStartType, entries: 1})
			err = tooDeep(tk)
		case token.SequenceEndType, token.MappingEndType:
			if len(flow) > 0 {
				flow = flow[:len(flow)-1]
			}
		case token.CollectEntryType:
			if len(flow) > 0 {
				err = tooMany(tk, &flow[len(flow)-1])
			}
		case token.SequenceEntryType, token.MappingKeyType, token.MappingValueType:
			if len(flow) > 0 {
				break
			}
			col, list := tk.Position.Column, tk.Type == token.SequenceEntryType
			if tk.Type == token.MappingValueType {
				if prev == nil || prev.Position.Line != tk.Position.Line || prev.Type == token.MappingKeyType {
					break // ": v" after a "?" key, whose "?" counted
				}
				col = prev.Position.Column // the key's
			}
			for len(block) > 0 && block[len(block)-1].col > col {
				block = block[:len(block)-1]
			}
			if n := len(block); !list && n > 0 && block[n-1].col == col && block[n-1].list {
				block = block[:n-1] // a key at the column of a list under the key before
			}
			if n := len(block); n > 0 && block[n-1].col == col && block[n-1].list == list {
				err = tooMany(tk, &block[n-1]) // the next entry of the same collection
				break
			}
			block = append(block, level{col: col, list: list, entries: 1})
			err = tooDeep(tk)
		}
		if err != nil {
			return err
		}
		prev = tk
	}
	return nil
}

func (ix *fieldIndex) record(path string, tok *token.Token, primary bool) {
	if tok == nil || tok.Position == nil {
		return
	}
	p := tok.Position
	if _, ok := ix.byPos[[2]int{p.Line, p.Column}]; !ok {
		ix.byPos[[2]int{p.Line, p.Column}] = path
	}
	if _, ok := ix.byPath[path]; !ok || primary {
		ix.byPath[path] = p
	}
}

func (ix *fieldIndex) walk(n ast.Node, path string) error {
	if strings.Count(path, ".")+strings.Count(path, "[") > maxNesting {
		return &posError{tok: n.GetToken(), msg: fmt.Sprintf("nested deeper than %d levels", maxNesting)}
	}
	switch n := n.(type) {
	case *ast.MappingNode:
		for _, v := range n.Values {
			if err := ix.walk(v, path); err != nil {
				return err
			}
		}
	case *ast.MappingValueNode:
		if n.Key == nil {
			return nil
		}
		key := keyText(n.Key)
		p := key
		if path != "" {
			p = path + "." + key
		}
		ix.record(p, n.Key.GetToken(), true)
		if n.Key.IsMergeKey() {
			return &posError{tok: n.Key.GetToken(), msg: "merge keys (<<) are not accepted in scenario files"}
		}
		if n.Value != nil {
			ix.record(p, n.Value.GetToken(), false)
			return ix.walk(n.Value, p)
		}
	case *ast.SequenceNode:
		for i, v := range n.Values {
			p := fmt.Sprintf("%s[%d]", path, i)
			if v == nil {
				continue
			}
			ix.record(p, v.GetToken(), true)
			if err := ix.walk(v, p); err != nil {
				return err
			}
		}
	case *ast.TagNode:
		// Tags are refused: nothing in a scenario needs one, and
		// go-yaml v1.19.2 dereferences nil decoding a tagged mapping where
		// a list is expected (found by FuzzParse).
		return &posError{tok: n.GetToken(), msg: "YAML tags (!x, !!x) are not accepted in scenario files"}
	case *ast.AnchorNode, *ast.AliasNode:
		return &posError{tok: n.GetToken(), msg: "anchors and aliases (&x, *x) are not accepted in scenario files"}
	}
	return nil
}

func keyText(k ast.MapKeyNode) string {
	switch k := k.(type) {
	case *ast.StringNode:
		return k.Value
	case *ast.MappingKeyNode:
		if k.Value != nil {
			return k.Value.String()
		}
	}
	if t := k.GetToken(); t != nil {
		return t.Value
	}
	return k.String()
}

// at makes a FileError at a token, naming the field there when known.
func (ix *fieldIndex) at(name string, tok *token.Token, msg string) *FileError {
	e := &FileError{File: name, Msg: msg}
	if tok == nil || tok.Position == nil {
		return e
	}
	e.Line, e.Column = tok.Position.Line, tok.Position.Column
	if ix != nil {
		e.Field = ix.byPos[[2]int{e.Line, e.Column}]
	}
	return e
}

// fileError turns an error from walk into a FileError.
func (ix *fieldIndex) fileError(name string, err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		return ix.at(name, pe.tok, pe.msg)
	}
	return &FileError{File: name, Msg: err.Error()}
}

// errAt makes a FileError for a field by its path; a field absent from the
// file is placed at its nearest present parent.
func (f *File) errAt(path, format string, a ...any) *FileError {
	e := &FileError{File: f.name, Field: path, Msg: fmt.Sprintf(format, a...)}
	if f.ix == nil {
		return e
	}
	for p := path; p != ""; p = parentPath(p) {
		if pos, ok := f.ix.byPath[p]; ok {
			e.Line, e.Column = pos.Line, pos.Column
			return e
		}
	}
	if len(f.ix.byPath) > 0 {
		e.Line = 1
	}
	return e
}

func parentPath(p string) string {
	i := max(strings.LastIndexByte(p, '.'), strings.LastIndexByte(p, '['))
	if i < 0 {
		return ""
	}
	return p[:i]
}

// Name is the file name the scenario was parsed from.
func (f *File) Name() string { return f.name }

// Verdict names (checker verdicts) and the debate positions.
var (
	agreedVerdicts   = []string{"safe", "unsafe", "liveness"}
	positionVerdicts = []string{"safe", "unsafe", "liveness", "-"}
	measuredVerdicts = []string{"safe", "unsafe", "liveness", "unknown"}
	roles            = []string{"A1", "A2", "A3", "A4", "A5", "A6"}
	persistences     = []string{string(sim.PersistNone), string(sim.PersistEverysec), string(sim.PersistAlways)}
	// randomPersistence: each node's persistence drawn from the seed.
	randomPersistence = "random"
	resources         = []string{ResourcePool, ResourceCounter, "none"}
	idRE              = regexp.MustCompile(`^[a-z0-9][a-z0-9.+_-]{0,63}$`)
	nodeNameRE        = regexp.MustCompile(`^n(0|[1-9][0-9]?)$`)
	clientNameRE      = regexp.MustCompile(`^c(0|[1-9][0-9]{0,4})$`)
)

// Limits of single fields.
const (
	maxLatency    = time.Hour
	maxPoolSize   = 1_000_000_000
	maxSweepSteps = 1000
	maxTries      = 1000
)

// validate checks every field that does not depend on the lock, then
// builds the scenario for each lock it lists (names, topology, TTL).
func (f *File) validate() error {
	if f.ID == "" {
		return f.errAt("id", "required (a name: lower case letters, digits and dashes)")
	}
	if !idRE.MatchString(f.ID) {
		return f.errAt("id", "%q is not a scenario id (lower case letters, digits and dashes, at most 64)", f.ID)
	}
	if strings.TrimSpace(f.Description) == "" {
		return f.errAt("description", "required (what the scenario does, one sentence or more)")
	}
	if err := f.validateTopology(); err != nil {
		return err
	}
	if f.Clients.Count < 0 || f.Clients.Count > sim.MaxClients {
		return f.errAt("clients.count", "%d out of range 1..%d (0 or absent: 5)", f.Clients.Count, sim.MaxClients)
	}
	for _, name := range sortedKeys(f.Clients.PerClient) {
		c := f.Clients.PerClient[name]
		p := "clients.per_client." + name
		if !clientNameRE.MatchString(name) {
			return f.errAt(p, "%q is not a client name (c0, c1, …)", name)
		}
		if i, _ := strconv.Atoi(name[1:]); f.Clients.Count > 0 && i >= f.Clients.Count {
			return f.errAt(p, "no client %s: the scenario has %d clients (c0..c%d)", name, f.Clients.Count, f.Clients.Count-1)
		}
		if err := f.checkClock(p, c.ClockOffset, c.DriftPPM); err != nil {
			return err
		}
	}
	for _, s := range []struct {
		path string
		v    Span
	}{{"duration", f.Duration}, {"liveness", f.Liveness}, {"max_unavailable", f.MaxUnavailable}} {
		if err := f.checkSpan(s.path, s.v, 0, sim.MaxDuration); err != nil {
			return err
		}
	}
	if err := f.checkSpan("net.latency_min", f.Net.LatencyMin, 0, maxLatency); err != nil {
		return err
	}
	if err := f.checkSpan("net.latency_jitter", f.Net.LatencyJitter, 0, maxLatency); err != nil {
		return err
	}
	if err := f.validateWorkload(); err != nil {
		return err
	}
	if err := f.validateFaults(); err != nil {
		return err
	}
	if err := f.validateLocks(); err != nil {
		return err
	}
	if err := f.validateSweep(); err != nil {
		return err
	}
	// Build for every listed lock: fault targets must exist in its world,
	// TTL multiples need a TTL, and sim.Config.Validate must agree.
	for _, id := range f.Locks {
		info, _ := catalogue.Get(id)
		if _, err := f.build(info, 1, Params{}); err != nil {
			return err
		}
	}
	return nil
}

func (f *File) validateTopology() error {
	t := f.Topology
	if t.Nodes < 0 || t.Nodes > sim.MaxNodes {
		return f.errAt("topology.nodes", "%d out of range 1..%d (0 or absent: the lock decides)", t.Nodes, sim.MaxNodes)
	}
	if t.Replicated != nil && *t.Replicated && t.Nodes == 1 {
		return f.errAt("topology.nodes", "a replicated topology needs at least 2 nodes (a primary and a replica)")
	}
	switch {
	case t.Groups < 0 || t.Groups > sim.MaxNodes/2:
		return f.errAt("topology.groups", "%d out of range 0..%d (absent: one group)", t.Groups, sim.MaxNodes/2)
	case t.Groups > 1 && (t.Replicated == nil || !*t.Replicated):
		return f.errAt("topology.groups", "%d groups need replicated: true (each group is a primary with replicas)", t.Groups)
	case t.Groups > 1 && t.Nodes == 1:
		return f.errAt("topology.nodes", "each of the %d groups needs at least 2 nodes (a primary and a replica)", t.Groups)
	case t.Groups > 1 && t.Nodes*t.Groups > sim.MaxNodes:
		return f.errAt("topology.groups", "%d groups of %d nodes: more than %d nodes", t.Groups, t.Nodes, sim.MaxNodes)
	}
	if err := f.checkSpan("topology.repl_lag", t.ReplLag, 0, sim.MaxDuration); err != nil {
		return err
	}
	if err := f.checkSpan("topology.down_after", t.DownAfter, 0, sim.MaxDuration); err != nil {
		return err
	}
	if t.Persistence != "" && t.Persistence != randomPersistence && !slices.Contains(persistences, t.Persistence) {
		return f.errAt("topology.persistence", "%q is not one of %s, %s", t.Persistence, strings.Join(persistences, ", "), randomPersistence)
	}
	if s := t.ReplLagUpTo; s.Set {
		switch {
		case t.ReplLag.Set:
			return f.errAt("topology.repl_lag_up_to", "give either repl_lag or repl_lag_up_to, not both")
		case s.IsTTL():
			return f.errAt("topology.repl_lag_up_to", "%s: an absolute duration (e.g. 50ms), not a multiple of the TTL", s)
		}
		if err := f.checkSpan("topology.repl_lag_up_to", s, 0, sim.MaxDuration); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(t.PerNode) {
		n := t.PerNode[name]
		p := "topology.per_node." + name
		if !nodeNameRE.MatchString(name) {
			return f.errAt(p, "%q is not a node name (n0, n1, …)", name)
		}
		if i, _ := strconv.Atoi(name[1:]); t.Nodes > 0 && i >= t.Nodes*max(1, t.Groups) {
			all := t.Nodes * max(1, t.Groups)
			return f.errAt(p, "no node %s: the topology has %d nodes (n0..n%d)", name, all, all-1)
		}
		if n.Persistence != "" && !slices.Contains(persistences, n.Persistence) {
			return f.errAt(p+".persistence", "%q is not one of %s", n.Persistence, strings.Join(persistences, ", "))
		}
		if err := f.checkClock(p, n.ClockOffset, n.DriftPPM); err != nil {
			return err
		}
	}
	return nil
}

func (f *File) checkClock(path string, offset Span, drift int64) error {
	if err := f.checkSpan(path+".clock_offset", offset, -sim.MaxDuration, sim.MaxDuration); err != nil {
		return err
	}
	if err := clock.CheckDrift(drift); err != nil {
		return f.errAt(path+".drift_ppm", "%v", err)
	}
	return nil
}

// checkSpan checks an absolute span against [lo, hi] and a TTL multiple's
// sign (its size is checked once a lock's TTL resolves it).
func (f *File) checkSpan(path string, s Span, lo, hi time.Duration) error {
	if s.IsTTL() {
		if lo >= 0 && s.TTLs < 0 {
			return f.errAt(path, "%s is negative", s)
		}
		return nil
	}
	if msg := outOfRange(s.NS, lo, hi); msg != "" {
		return f.errAt(path, "%s", msg)
	}
	return nil
}

// outOfRange says why v is not in [lo, hi] ("" when it is).
func outOfRange(v, lo, hi time.Duration) string {
	switch {
	case v >= lo && v <= hi:
		return ""
	case lo == 0 && v < 0:
		return fmt.Sprintf("%v is negative", v)
	case lo == 0:
		return fmt.Sprintf("%v out of range 0..%v", v, hi)
	}
	return fmt.Sprintf("%v out of range %v..%v", v, lo, hi)
}

// checkRates checks a fault's clock drift and loss probability.
func checkRates(driftPPM int64, lossProb float64) (field string, err error) {
	if err := clock.CheckDrift(driftPPM); err != nil {
		return "drift_ppm", err
	}
	if math.IsNaN(lossProb) || lossProb < 0 || lossProb > 1 {
		return "loss_prob", fmt.Errorf("%v out of range (0, 1]", lossProb)
	}
	return "", nil
}

// faultSpans are a fault's times and their bounds: the same for a
// scenario file's fault (checkSpan, before a TTL resolves it) and for a
// resolved one (CheckFault: a --faults file's).
var faultSpans = []struct {
	field  string
	lo, hi time.Duration
	file   func(FaultSpec) Span
	value  func(faults.Fault) time.Duration
}{
	{"start", 0, sim.MaxDuration, func(s FaultSpec) Span { return s.Start }, func(f faults.Fault) time.Duration { return f.Start }},
	{"duration", 0, sim.MaxDuration, func(s FaultSpec) Span { return s.Duration }, func(f faults.Fault) time.Duration { return f.Duration }},
	{"delay", 0, sim.MaxDuration, func(s FaultSpec) Span { return s.Delay }, func(f faults.Fault) time.Duration { return f.Delay }},
	{"jump", -sim.MaxDuration, sim.MaxDuration, func(s FaultSpec) Span { return s.Jump }, func(f faults.Fault) time.Duration { return f.Jump }},
}

// CheckFault checks a fault as a scenario file's fault is checked: its
// times within their bounds (faultSpans), its drift and loss probability,
// and its shape (faults.Fault.Validate; any process name: names are the
// world's to check). field is the fault's field at fault ("" for the
// fault as a whole).
func CheckFault(ff faults.Fault) (field string, err error) {
	for _, s := range faultSpans {
		if msg := outOfRange(s.value(ff), s.lo, s.hi); msg != "" {
			return s.field, errors.New(msg)
		}
	}
	if field, err := checkRates(ff.DriftPPM, ff.LossProb); err != nil {
		return field, err
	}
	if err := ff.Validate(func(string) bool { return true }); err != nil {
		return strings.TrimPrefix(faultField("", err), "."), err
	}
	return "", nil
}

func (f *File) validateWorkload() error {
	w := f.Workload
	if w.Resource != "" && !slices.Contains(resources, w.Resource) {
		return f.errAt("workload.resource", "%q is not one of %s", w.Resource, strings.Join(resources, ", "))
	}
	if w.ReadFraction < 0 || w.ReadFraction > 1 || w.ReadFraction != w.ReadFraction {
		return f.errAt("workload.read_fraction", "%v out of range 0..1", w.ReadFraction)
	}
	if w.PoolSize != nil {
		if w.Resource != "" && w.Resource != ResourcePool {
			return f.errAt("workload.pool_size", "only a pool has a size (resource is %s)", w.Resource)
		}
		if *w.PoolSize < 0 || *w.PoolSize > maxPoolSize {
			return f.errAt("workload.pool_size", "%d out of range 0..%d", *w.PoolSize, maxPoolSize)
		}
	}
	for _, r := range []struct {
		path string
		v    []Span
	}{{"workload.hold", w.Hold}, {"workload.think", w.Think}} {
		if r.v == nil {
			continue
		}
		if len(r.v) != 2 {
			return f.errAt(r.path, "want a range [min, max] of two durations, got %d values", len(r.v))
		}
		for i, s := range r.v {
			if err := f.checkSpan(fmt.Sprintf("%s[%d]", r.path, i), s, 0, sim.MaxDuration); err != nil {
				return err
			}
		}
		if r.v[0].IsTTL() == r.v[1].IsTTL() && (r.v[0].NS > r.v[1].NS || r.v[0].TTLs > r.v[1].TTLs) {
			return f.errAt(r.path, "min %s is above max %s", r.v[0], r.v[1])
		}
	}
	return nil
}

func (f *File) validateFaults() error {
	if f.Swarm != nil && len(f.Faults) > 0 {
		return f.errAt("swarm", "give either a scripted faults list or a swarm block, not both")
	}
	total := 0
	for i, fs := range f.Faults {
		p := fmt.Sprintf("faults[%d]", i)
		k := faults.Kind(fs.Kind)
		if fs.Kind == "" {
			return f.errAt(p+".kind", "required (one of %s)", kindList())
		}
		if !slices.Contains(faults.Kinds, k) {
			return f.errAt(p+".kind", "%q is not a fault kind (one of %s)", fs.Kind, kindList())
		}
		for _, s := range faultSpans {
			if err := f.checkSpan(p+"."+s.field, s.file(fs), s.lo, s.hi); err != nil {
				return err
			}
		}
		if field, err := checkRates(fs.DriftPPM, fs.LossProb); err != nil {
			return f.errAt(p+"."+field, "%v", err)
		}
		for _, id := range fs.Locks {
			if _, err := catalogue.Get(id); err != nil {
				return f.errAt(p+".locks", "unknown lock %q", id)
			}
		}
		n := 1
		if r := fs.Repeat; r != nil {
			if r.Count < 0 || r.Count > MaxFileFaults {
				return f.errAt(p+".repeat.count", "%d out of range 1..%d", r.Count, MaxFileFaults)
			}
			if err := f.checkSpan(p+".repeat.every", r.Every, 0, sim.MaxDuration); err != nil {
				return err
			}
			if r.Count > 1 && !r.Every.IsTTL() && r.Every.NS <= 0 {
				return f.errAt(p+".repeat.every", "a repeated fault needs a positive interval")
			}
			n = max(1, r.Count)
		}
		total += n
		if total > MaxFileFaults {
			return f.errAt(p, "more than %d faults after repetition", MaxFileFaults)
		}
		// Shape checks that need no world: resolve TTL multiples with a
		// nominal TTL (signs and zeros are what matter here) and accept any
		// process name; names are checked per lock in build.
		ff, err := fs.fault(time.Second)
		if err != nil {
			return f.errAt(p, "%v", err)
		}
		if err := ff.Validate(func(string) bool { return true }); err != nil {
			return f.errAt(faultField(p, err), "%v", err)
		}
	}
	if s := f.Swarm; s != nil {
		if s.MinFaults < 0 || s.MinFaults > 1000 {
			return f.errAt("swarm.min_faults", "%d out of range 0..1000", s.MinFaults)
		}
		if s.MaxFaults < s.MinFaults || s.MaxFaults > 1000 {
			return f.errAt("swarm.max_faults", "%d out of range %d..1000 (at least min_faults)", s.MaxFaults, s.MinFaults)
		}
		for i, k := range s.Kinds {
			if !slices.Contains(faults.Kinds, faults.Kind(k)) {
				return f.errAt(fmt.Sprintf("swarm.kinds[%d]", i), "%q is not a fault kind (one of %s)", k, kindList())
			}
		}
	}
	return nil
}

// faultField guesses which field of a fault a faults.Fault.Validate error
// is about, to point at it.
func faultField(p string, err error) string {
	msg := err.Error()
	for _, f := range []string{"drift_ppm", "loss_prob", "at ", "start", "duration", "delay"} {
		if strings.Contains(msg, ": "+f) {
			return p + "." + strings.TrimSpace(f)
		}
	}
	switch {
	case strings.Contains(msg, "needs targets"):
		return p + ".targets"
	case strings.Contains(msg, "needs from"):
		return p + ".from"
	}
	return p
}

func kindList() string {
	var s []string
	for _, k := range faults.Kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

func (f *File) validateLocks() error {
	seen := map[string]bool{}
	for i, id := range f.Locks {
		p := fmt.Sprintf("locks[%d]", i)
		if _, err := catalogue.Get(id); err != nil {
			return f.errAt(p, "unknown lock %q (known: %s)", id, strings.Join(catalogue.IDs(), ", "))
		}
		if seen[id] {
			return f.errAt(p, "lock %q listed twice", id)
		}
		seen[id] = true
		if _, ok := f.Expect[id]; !ok {
			return f.errAt(p, "no expect entry for %q: every listed lock needs one", id)
		}
	}
	for _, id := range sortedKeys(f.Expect) {
		e := f.Expect[id]
		p := "expect." + id
		if !seen[id] {
			return f.errAt(p, "lock %q is not in locks", id)
		}
		if e.Agreed == "" {
			return f.errAt(p+".agreed", "required (one of %s)", strings.Join(agreedVerdicts, ", "))
		}
		for _, c := range []struct {
			field, v string
			allowed  []string
		}{{"agreed", e.Agreed, agreedVerdicts}, {"kleppmann", e.Kleppmann, positionVerdicts}, {"antirez", e.Antirez, positionVerdicts},
			{"simulated", e.Simulated, measuredVerdicts}, {"role", e.Role, roles}} {
			if c.v != "" && !slices.Contains(c.allowed, c.v) {
				return f.errAt(p+"."+c.field, "%q is not one of %s", c.v, strings.Join(c.allowed, ", "))
			}
		}
		if e.Simulated != "" && strings.TrimSpace(e.Note) == "" {
			return f.errAt(p+".note", "required with simulated: say why the simulation differs from the agreed outcome")
		}
		if e.Simulated == e.Agreed && e.Simulated != "" {
			return f.errAt(p+".simulated", "equals agreed: leave it out")
		}
		if e.Seed != 0 && e.Want() != "unsafe" {
			return f.errAt(p+".seed", "only for an unsafe expectation (a seed that shows it)")
		}
	}
	for _, id := range sortedKeys(f.NotFor) {
		p := "not_for." + id
		if _, err := catalogue.Get(id); err != nil {
			return f.errAt(p, "unknown lock %q (known: %s)", id, strings.Join(catalogue.IDs(), ", "))
		}
		if seen[id] {
			return f.errAt(p, "lock %q is in locks: a listed lock runs", id)
		}
		if strings.TrimSpace(f.NotFor[id]) == "" {
			return f.errAt(p, "say why %q does not run here", id)
		}
	}
	for _, id := range sortedKeys(f.Params) {
		info, err := catalogue.Get(id)
		if err != nil {
			return f.errAt("params."+id, "unknown lock %q", id)
		}
		if _, err := f.lockInfo(info, f.Params[id]); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Scenario returns the file as a scenario: its id, its description, and a
// Build that makes the world for a lock and seed.
func (f *File) Scenario() Scenario {
	return Scenario{ID: f.ID, Description: f.Description, File: f,
		Build: func(info locks.Info, seed uint64, p Params) (sim.Config, error) { return f.build(info, seed, p) }}
}

// Resolve finds a scenario by built-in id or, failing that, as a path to
// a scenario file.
func Resolve(nameOrPath string) (Scenario, error) {
	if s, ok := builtins[nameOrPath]; ok {
		return s, nil
	}
	looksLikePath := strings.ContainsRune(nameOrPath, filepath.Separator) || strings.ContainsRune(nameOrPath, '/') ||
		strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml")
	if _, err := os.Stat(nameOrPath); err != nil && !looksLikePath {
		return Scenario{}, fmt.Errorf("unknown scenario %q: not a built-in (%s) and no such file", nameOrPath, strings.Join(IDs(), ", "))
	}
	f, err := LoadFile(nameOrPath)
	if err != nil {
		return Scenario{}, err
	}
	return f.Scenario(), nil
}

// Judging is how a scenario's runs are checked: the workload's resource
// and its initial value, and the liveness bound.
type Judging struct {
	Resource       string // checker.History.Resource: pool, counter or "" (none)
	Initial        int64
	MaxUnavailable time.Duration
}

// Judging returns how the scenario's runs are checked for a lock (the
// lock matters only for a bound given as a multiple of its TTL).
func (s Scenario) Judging(info locks.Info) Judging {
	if s.File == nil {
		return Judging{Resource: ResourcePool, Initial: PoolSize}
	}
	return s.File.judging(info)
}

// JudgingFor is Judging for a built-in scenario id (the default's for
// anything else).
func JudgingFor(id string, info locks.Info) Judging {
	s, ok := builtins[id]
	if !ok {
		return Judging{Resource: ResourcePool, Initial: PoolSize}
	}
	return s.Judging(info)
}
