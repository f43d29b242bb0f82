package scenarios

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

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
	// builtin: one of the embedded files, whose lock ids a program that
	// does not link locksim's catalogue has not registered (lockFor).
	builtin bool
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
	// Failover is how a Redis Cluster lock's replicated world fails over:
	// sentinel (absent: the Sentinel stand-in promotes a shard's replica
	// once its primary has been unreachable for down_after) or cluster (the
	// cluster's own failure detection, down_after its node timeout: a
	// majority of primaries flag the primary FAIL, its replica wins an
	// election, and a primary cut off from the majority answers
	// -CLUSTERDOWN after the node timeout; sim/cluster_failover.go).
	Failover string `yaml:"failover"`
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
	// Resource is pool (default: “Redis + RedLock” (yield-bytes)'s bonus pool, decremented),
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
	// On is the client whose arrival at At begins an armed fault of a
	// kind other than a client pause: see faults.Fault.On.
	On string `yaml:"on"`
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
	// Targets aims the drawn faults at these processes of the world
	// (faults.Bounds.Targets): clients c0.., nodes n0.., the storage, or
	// the groups all-clients and all-nodes. Absent: any process.
	Targets []string `yaml:"targets"`
	// TTLRelative draws every size that can break a lease relative to
	// the lock's TTL in the world (faults.Bounds.TTL) instead of the
	// absolute ranges.
	TTLRelative bool `yaml:"ttl_relative"`
	// Arm arms about half of the network faults and client pauses at the
	// workload's own points, and at renewals for a lock that renews
	// (faults.Bounds.ArmPoints, as locktest's search arms them).
	Arm bool `yaml:"arm"`
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
