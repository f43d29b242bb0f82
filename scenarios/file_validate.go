package scenarios

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/clock"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// The scenario language's validation: every field that needs no lock,
// then a build for each lock the file lists.

// Verdict names (checker verdicts) and the debate positions.
var (
	agreedVerdicts   = []string{"safe", "unsafe", "liveness"}
	positionVerdicts = []string{"safe", "unsafe", "liveness", "-"}
	measuredVerdicts = []string{"safe", "unsafe", "liveness", "unknown"}
	roles            = []string{"A1", "A2", "A3", "A4", "A5", "A6"}
	// persistences are the modes random draws from (unchanged, so a
	// seed draws what it always drew); a file may also name "no"
	// (appendfsync no).
	persistences     = []string{string(sim.PersistNone), string(sim.PersistEverysec), string(sim.PersistAlways)}
	persistenceNames = append(slices.Clip(persistences), string(sim.PersistNo))
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
		info, ok, _ := f.lockFor(id)
		if !ok {
			continue
		}
		if _, err := f.build(info, 1, Params{}); err != nil {
			return err
		}
	}
	return nil
}

// lockFor looks a lock the file names up (locks.Lookup). The built-in
// files name designs of locksim's catalogue, which a program that does not
// link it (a test of a user's own lock through locktest) has not
// registered: there, with no design registered at all, such a lock is
// skipped (ok false, no error), and cannot be run either (run.Spec.Build
// looks it up again). Where designs are registered, an unknown id is an
// error in a built-in file too.
func (f *File) lockFor(id string) (info locks.Info, ok bool, err error) {
	info, err = locks.Lookup(id)
	if err != nil && f.builtin && len(locks.AllIDs()) == 0 {
		return info, false, nil
	}
	return info, err == nil, err
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
	if t.Failover != "" && t.Failover != "sentinel" && t.Failover != "cluster" {
		return f.errAt("topology.failover", "%q is not a failover (sentinel or cluster)", scalarText(t.Failover))
	}
	if err := f.checkSpan("topology.down_after", t.DownAfter, 0, sim.MaxDuration); err != nil {
		return err
	}
	if t.Persistence != "" && t.Persistence != randomPersistence && !slices.Contains(persistenceNames, t.Persistence) {
		return f.errAt("topology.persistence", "%q is not one of %s, %s", t.Persistence, strings.Join(persistenceNames, ", "), randomPersistence)
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
		if n.Persistence != "" && !slices.Contains(persistenceNames, n.Persistence) {
			return f.errAt(p+".persistence", "%q is not one of %s", n.Persistence, strings.Join(persistenceNames, ", "))
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
		if !slices.Contains(faults.Kinds, k) && k != faults.SlotMigration {
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
			if _, _, err := f.lockFor(id); err != nil {
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
		if s.Targets != nil && len(s.Targets) == 0 {
			return f.errAt("swarm.targets", "empty: name the processes the faults aim at (c0.., n0.., %s, %s), or leave targets out for any process", GroupClients, GroupNodes)
		}
		for i, t := range s.Targets {
			if t == "" {
				return f.errAt(fmt.Sprintf("swarm.targets[%d]", i), "empty name")
			}
			if slices.Contains(s.Targets[:i], t) {
				return f.errAt(fmt.Sprintf("swarm.targets[%d]", i), "%q is named twice", t)
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
	s = append(s, string(faults.SlotMigration))
	return strings.Join(s, ", ")
}

func (f *File) validateLocks() error {
	seen := map[string]bool{}
	for i, id := range f.Locks {
		p := fmt.Sprintf("locks[%d]", i)
		if _, _, err := f.lockFor(id); err != nil {
			return f.errAt(p, "unknown lock %q (known: %s)", id, strings.Join(locks.IDs(), ", "))
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
		if _, _, err := f.lockFor(id); err != nil {
			return f.errAt(p, "unknown lock %q (known: %s)", id, strings.Join(locks.IDs(), ", "))
		}
		if seen[id] {
			return f.errAt(p, "lock %q is in locks: a listed lock runs", id)
		}
		if strings.TrimSpace(f.NotFor[id]) == "" {
			return f.errAt(p, "say why %q does not run here", id)
		}
	}
	for _, id := range sortedKeys(f.Params) {
		info, ok, err := f.lockFor(id)
		if err != nil {
			return f.errAt("params."+id, "unknown lock %q", id)
		}
		if !ok {
			continue
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
