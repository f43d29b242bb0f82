// Package scenarios turns a named scenario, a lock design and a seed into
// the world configuration the simulator runs. Every built-in scenario,
// default included, is a scenario file in builtin/, built by one builder:
//
//   - the scenario language: file.go (schema), file_decode.go,
//     file_validate.go, file_sweep.go, lockparams.go (a lock's params
//     block, read through the lock's parameter table, locks.Param);
//   - the world builder: world.go (TTL and every default as inputs),
//     scale.go (the same world played faster for another TTL);
//   - the workload: file_workload.go, workload.go, program.go (the
//     client loop).
package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// Params are the knobs of a built-in scenario a user may override.
type Params struct {
	Clients  int
	Nodes    int // 0: the lock's topology decides (5 independent, or 1 primary + 2 replicas)
	Duration time.Duration
	Liveness time.Duration
	ReplLag  time.Duration
	// DownAfter is Sentinel's down-after for replicated topologies (0: 5 s).
	DownAfter time.Duration
	// HoldMin and HoldMax bound a critical section (0: the scenario's
	// bound; the default's are 50 ms and 1 s). Each applies on its own;
	// a range whose min ends above its max is an error (applyHold).
	HoldMin, HoldMax time.Duration
	// Careful: the workload checks its belief before each write
	// (Workload.Careful).
	Careful bool
	// TTL, when set, is the lease to play the scenario with: every
	// duration of the world, the workload and the lock is scaled by TTL /
	// the lock's own TTL (Parts.Scale; the real arm's --ttl).
	TTL time.Duration
}

// Scenario is a built-in scenario: how to build a world for a lock and seed.
type Scenario struct {
	ID          string
	Description string
	Build       func(info locks.Info, seed uint64, p Params) (sim.Config, error)
	// File is the scenario file it comes from (every built-in has one;
	// nil for a Scenario a caller builds in Go):
	// its source, locks and expectations.
	File *File
}

// World builds the default world (topology by the lock, the bonus pool
// workload, the storage) for info and seed with p, and no faults: the base
// that locktest and custom schedules start from. It is default.yaml built
// without its swarm, so no fault schedule is drawn to be thrown away.
func World(info locks.Info, seed uint64, p Params) (sim.Config, error) {
	s, err := Get("default")
	if err != nil {
		return sim.Config{}, err
	}
	if s.File == nil {
		return s.Build(info, seed, p) // a broken built-in: its error
	}
	return s.File.buildWorld(info, seed, p)
}

// Get returns a built-in scenario.
func Get(id string) (Scenario, error) {
	s, ok := builtins()[id]
	if !ok {
		return Scenario{}, fmt.Errorf("unknown scenario %q (known: %v)", id, IDs())
	}
	return s, nil
}

// IDs lists the built-in scenario ids, sorted.
func IDs() []string {
	var ids []string
	for id := range builtins() {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// DefaultNodes is a world's node count when nothing sets it: 5
// independent nodes (Redlock's five), a primary with 2 replicas, or 1.
func DefaultNodes(t locks.Topology) int {
	switch t {
	case locks.Independent:
		return 5
	case locks.Replicated:
		return 3
	case locks.Groups:
		return 3 * locks.DefaultGroups
	case locks.Cluster:
		return locks.DefaultShards
	}
	return 1
}

// check refuses an override out of range: the caller's input (a flag, a
// sweep's value), named as such, not a line of the scenario file.
func (p Params) check() error {
	switch {
	case p.Duration != 0 && (p.Duration < sim.MinDuration || p.Duration > sim.MaxDuration):
		return fmt.Errorf("duration: %v out of range [%v, %v]", p.Duration, sim.MinDuration, sim.MaxDuration)
	case p.Liveness < 0 || p.Liveness > sim.MaxDuration:
		return fmt.Errorf("liveness: %v out of range [0, %v]", p.Liveness, sim.MaxDuration)
	case p.Nodes < 0 || p.Nodes > sim.MaxNodes:
		return fmt.Errorf("nodes: %d out of range 1..%d", p.Nodes, sim.MaxNodes)
	case p.Clients < 0 || p.Clients > sim.MaxClients:
		return fmt.Errorf("clients: %d out of range 1..%d", p.Clients, sim.MaxClients)
	}
	return nil
}

// PoolSize is the bonus pool's initial size (“Redis + RedLock” (yield-bytes): 300 units).
const PoolSize = 300

// DefaultParams are the default scenario's phases and clients, as
// builtin/default.yaml sets them (the CLI's help names them; a test
// holds the two equal). Liveness is its floor: max(30s, 2ttl).
var DefaultParams = Params{Clients: 5, Duration: 120 * time.Second, Liveness: 30 * time.Second}

// Build makes the world config for scenario id, lock id and seed.
func Build(scenarioID, lockID string, seed uint64, p Params) (sim.Config, error) {
	s, err := Get(scenarioID)
	if err != nil {
		return sim.Config{}, err
	}
	info, err := locks.Lookup(lockID)
	if err != nil {
		return sim.Config{}, err
	}
	return s.Build(info, seed, p)
}

// groupNodesError is the error for a node count that does not split into
// a lock's primary/replica groups: it says what counts do.
func groupNodesError(nodes, groups int, lock string) error {
	return fmt.Errorf("nodes: lock %s runs %d primary/replica groups of at least 2 nodes: want a multiple of %d from %d to %d, got %d",
		lock, groups, groups, 2*groups, sim.MaxNodes/groups*groups, nodes)
}

// applyHold sets the workload's critical-section range from p: a HoldMin
// or HoldMax given alone keeps the scenario's other bound (a --hold-min
// without --hold-max was ignored, and a --hold-max alone set the minimum
// to 0). A min that ends above the max is an error naming the parameter
// to change.
func (p Params) applyHold(wl *Workload) error {
	lo, hi := wl.HoldMin, wl.HoldMax
	if p.HoldMin > 0 {
		lo = p.HoldMin
	}
	if p.HoldMax > 0 {
		hi = p.HoldMax
	}
	if lo > hi {
		switch {
		case p.HoldMin > 0 && p.HoldMax > 0:
			return fmt.Errorf("hold-min: %v is above hold-max %v", lo, hi)
		case p.HoldMin > 0:
			return fmt.Errorf("hold-min: %v is above the scenario's longest critical section (%v): give hold-max too", lo, hi)
		default:
			return fmt.Errorf("hold-max: %v is below the scenario's shortest critical section (%v): give hold-min too", hi, lo)
		}
	}
	wl.HoldMin, wl.HoldMax = lo, hi
	return nil
}

// Fits says whether the lock can run in the scenario: "" when it can,
// else why not. A scenario file's world and scripted faults are written
// for the topologies of the locks it lists (independent nodes for Redlock,
// one node or a primary with replicas for the others), so a lock fits
// when its topology is among them; a single-node lock also runs on a
// replicated world's primary. A scenario without a file (default) fits
// every lock; so does a file that lists none.
func (s Scenario) Fits(info locks.Info) string {
	if s.File == nil || slices.Contains(s.File.Locks, info.ID) {
		return ""
	}
	if why, ok := s.File.NotFor[info.ID]; ok {
		return fmt.Sprintf("%s is not run in %s: %s", info.ID, s.ID, why)
	}
	if why := s.fitsTopology(info); why != "" {
		return why
	}
	if !info.Renews && s.File.onlyPausesRenewals() {
		return fmt.Sprintf("%s never renews its lease, and every fault of %s pauses a renewal (it would never fire)", info.ID, s.ID)
	}
	// The world must build for it (a lock without a TTL cannot run a
	// scenario that counts in TTLs).
	if _, err := s.Build(info, 1, Params{}); err != nil {
		if info.TTL == 0 {
			return fmt.Sprintf("%s has no TTL, and %s counts in TTLs", info.ID, s.ID)
		}
		return fmt.Sprintf("%s cannot run %s: %v", info.ID, s.ID, err)
	}
	return ""
}

func (s Scenario) fitsTopology(info locks.Info) string {
	if len(s.File.Locks) == 0 && info.Topology != locks.Cluster {
		return ""
	}
	var tops []string
	for _, id := range s.File.Locks {
		other, err := locks.Lookup(id)
		if err != nil {
			continue
		}
		if other.Topology == info.Topology || (info.Topology == locks.Single && other.Topology == locks.Replicated) {
			return ""
		}
		if t := topologyWords[other.Topology]; !slices.Contains(tops, t) {
			tops = append(tops, t)
		}
	}
	slices.Sort(tops)
	if len(tops) == 0 {
		// A cluster lock runs only where a file names one (its faults and
		// nodes are written for a cluster's shards).
		return fmt.Sprintf("%s needs %s; %s names no lock of one in locks:", info.ID, topologyWords[info.Topology], s.ID)
	}
	return fmt.Sprintf("%s needs %s; %s is written for %s", info.ID, topologyWords[info.Topology], s.ID, strings.Join(tops, " and "))
}

var topologyWords = map[locks.Topology]string{locks.Single: "one node", locks.Independent: "independent nodes", locks.Replicated: "a primary with replicas", locks.Consensus: "a coordination service", locks.Groups: "primary/replica groups", locks.Cluster: "a Redis Cluster"}

// lookupCoordination finds the coordination service a consensus lock's
// world runs beside its storage: the one the program registered
// (sim.RegisterCoordination; locks/catalogue registers internal/zk's). A
// test replaces it to build a world in a program that registered none.
var lookupCoordination = sim.LookupCoordination

// noCoordination is why a consensus lock cannot run: the program
// registered no coordination service.
func noCoordination(lock string) string {
	return fmt.Sprintf("lock %s needs a coordination service (topology consensus) and this program registers none: import github.com/locksim/locksim/locks/catalogue (it registers internal/zk's simulated ZooKeeper with its zk designs)", lock)
}

// coordination is the coordination service of a consensus lock's world
// (nil for other locks): its members run as services 1..len(Members),
// after the storage; the world keeps one idle Redis node, which
// sim.Config requires. An error names the file and the lock.
func (f *File) coordination(info locks.Info) (*sim.Coordination, error) {
	if info.Topology != locks.Consensus {
		return nil, nil
	}
	c, ok := lookupCoordination()
	if !ok {
		return nil, &FileError{File: f.name, Msg: noCoordination(info.ID)}
	}
	return &c, nil
}
