package scenarios

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/resource"
	"github.com/locksim/locksim/sim"
)

// The world builder: a scenario file, a lock (its parameters applied), a
// seed and Params in, one sim.Config out; topology, nodes, clients, faults,
// the TTL and every default are inputs here, and nowhere else.

// Defaults of a scenario file's optional fields.
const (
	FileDefaultClients  = 5
	FileDefaultDuration = 30 * time.Second
	FileDefaultLiveness = 10 * time.Second
)

// Process groups a fault's targets, from and to may name; they expand to
// the world's clients or Redis nodes once the world's size is known.
const (
	GroupClients = "all-clients"
	GroupNodes   = "all-nodes"
)

// build makes the world config of the file for a lock and seed. p's
// non-zero fields override the file (the CLI's --clients, --nodes,
// --duration, ...; a sweep's replication lag, down-after, hold time).
func (f *File) build(base locks.Info, seed uint64, p Params) (sim.Config, error) {
	return f.buildParts(base, seed, p, nil)
}

// buildWorld is build without the fault schedule: neither the scripted
// faults nor the swarm (no draw is made for it).
func (f *File) buildWorld(base locks.Info, seed uint64, p Params) (sim.Config, error) {
	g := *f
	g.Faults, g.Swarm = nil, nil
	return g.buildParts(base, seed, p, nil)
}

// Parts is what a scenario file builds for a lock and seed, before it
// becomes one simulated world: the world's config (whose Program runs
// Workload with Lock), the lock as the file parameterised it, and the
// workload. The real-Redis arm runs the same parts against real servers.
type Parts struct {
	Config   sim.Config
	Lock     locks.Info
	Workload Workload
	// Scale is the factor every duration was multiplied by for
	// Params.TTL (1 without it); OrigTTL the lock's own TTL before it
	// (NominalTTL for a lock without one).
	Scale   float64
	OrigTTL time.Duration
}

// Parts builds the file's parts for base, seed and p (as Build does).
func (f *File) Parts(base locks.Info, seed uint64, p Params) (Parts, error) {
	var out Parts
	_, err := f.buildParts(base, seed, p, &out)
	return out, err
}

// buildParts is build; when out is set it also receives the parts. The
// lock is resolved once (its parameters and TTL: newWorldBuild), then each
// stage fills the world's config from that one value: topology, clients,
// phases and network, faults, then the workload, storage and scaling.
func (f *File) buildParts(base locks.Info, seed uint64, p Params, out *Parts) (sim.Config, error) {
	b, err := f.newWorldBuild(base, seed, p)
	if err != nil {
		return sim.Config{}, err
	}
	for _, stage := range []func() error{b.topology, b.nodes, b.clients, b.phases, b.swarm, b.fileFaults} {
		if err := stage(); err != nil {
			return sim.Config{}, err
		}
	}
	parts, err := b.finish()
	if err != nil {
		return sim.Config{}, err
	}
	if out != nil {
		*out = parts
	}
	return parts.Config, nil
}

// worldBuild is one build of a file's world for one lock, seed and
// parameters: the lock resolved once, and what the stages have decided.
type worldBuild struct {
	f    *File
	info locks.Info // the lock with the file's parameters (lockInfo)
	// coord is a consensus lock's coordination service (coordination);
	// nil for other locks.
	coord *sim.Coordination
	ttl   time.Duration
	seed  uint64
	p     Params
	cfg   sim.Config

	replicated        bool
	cluster           bool // a Redis Cluster: groups are its shards
	clusters          int  // a cluster world's independent clusters (Info.Clusters, at least 1)
	groups, groupSize int
	// copied: the file's one group is copied groups times for a lock that
	// needs groups (perGroup).
	copied      bool
	nodeNames   []string
	clientNames []string
	// faultNodes are what faults call nodes: the Redis nodes, or a
	// consensus lock's coordination service members.
	faultNodes []string
	known      map[string]bool // fault targets that exist
	groupNames []string
	procGroups map[string][]string // "clients", "nodes"
}

func (f *File) newWorldBuild(base locks.Info, seed uint64, p Params) (*worldBuild, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	info, err := f.lockInfo(base, f.Params[base.ID])
	if err != nil {
		return nil, err
	}
	coord, err := f.coordination(info)
	if err != nil {
		return nil, err
	}
	return &worldBuild{f: f, info: info, coord: coord, ttl: info.TTL, seed: seed, p: p, cfg: sim.Config{Seed: seed}}, nil
}

// span resolves a span of the file at path against the lock's TTL (def
// when the file leaves it unset).
func (b *worldBuild) span(path string, s Span, def time.Duration) (time.Duration, error) {
	if !s.Set {
		return def, nil
	}
	d, err := s.Resolve(b.ttl)
	if err != nil {
		return 0, b.f.errAt(path, "%v (lock %s)", err, b.info.ID)
	}
	return d, nil
}

// topology decides replication, groups and the node count.
func (b *worldBuild) topology() error {
	f, info, p := b.f, b.info, b.p
	nodes := p.Nodes
	if nodes == 0 {
		nodes = f.Topology.Nodes
	}
	b.replicated = info.Topology == locks.Replicated || info.Topology == locks.Groups
	if f.Topology.Replicated != nil {
		b.replicated = *f.Topology.Replicated
	}
	// Groups: the file's own, or copies of its one group for a lock that
	// needs groups (copied: node names in faults and per_node apply to
	// their counterpart in every group).
	b.groups = max(1, f.Topology.Groups)
	if info.Topology == locks.Groups {
		if !b.replicated {
			return f.errAt("topology.replicated", "lock %s needs primary/replica groups, and the file's world is not replicated", info.ID)
		}
		if f.Topology.Groups <= 1 {
			b.groups, b.copied = locks.DefaultGroups, true
		}
	}
	// A cluster lock: the file's one group (one node, or a primary with
	// its replicas) copied in each of the cluster's shards (sim/cluster.go).
	// A lock over several independent clusters (Info.Clusters) has their
	// shards, cluster 0's first; a file naming that many groups
	// (topology.groups) names each shard itself (g0: cluster 0's shard 0).
	b.cluster = info.Topology == locks.Cluster
	if b.cluster {
		b.clusters = max(1, info.Clusters)
		all := locks.DefaultShards * b.clusters
		switch g := f.Topology.Groups; {
		case b.clusters > 1 && g == all:
			b.groups = all
		case g > 1 && b.clusters > 1:
			return f.errAt("topology.groups", "lock %s runs on %d Redis Clusters of %d shards, each shard a copy of the file's one group, or %d groups named one by one (g0..g%d, cluster by cluster); the file gives %d groups", info.ID, b.clusters, locks.DefaultShards, all, all-1, g)
		case g > 1:
			return f.errAt("topology.groups", "lock %s runs on a Redis Cluster of %d shards, each a copy of the file's one group; the file gives %d groups", info.ID, locks.DefaultShards, g)
		default:
			b.groups, b.copied = all, true
		}
	}
	if b.groups > 1 && p.Nodes > 0 {
		// --nodes counts the whole world's nodes; the file counts a group's.
		if p.Nodes%b.groups != 0 || (p.Nodes/b.groups < 2 && !b.cluster) {
			return groupNodesError(p.Nodes, b.groups, info.ID)
		}
		nodes = p.Nodes / b.groups
	}
	if nodes == 0 {
		switch {
		case b.replicated:
			nodes = DefaultNodes(locks.Replicated)
		case info.Topology == locks.Independent:
			nodes = DefaultNodes(locks.Independent)
		default:
			nodes = DefaultNodes(locks.Single)
		}
	}
	if nodes < 1 || nodes*b.groups > sim.MaxNodes {
		return f.errAt("topology.nodes", "%d out of range 1..%d", nodes*b.groups, sim.MaxNodes)
	}
	if b.cluster && !b.replicated && nodes != 1 {
		return f.errAt("topology.nodes", "lock %s's cluster without replicas has one node a shard, the file gives %d (set topology.replicated for replicas)", info.ID, nodes)
	}
	if b.groups > 1 && nodes < 2 && !b.cluster {
		return f.errAt("topology.nodes", "each of the %d groups of lock %s's world needs at least 2 nodes, the file gives %d", b.groups, info.ID, nodes)
	}
	b.groupSize = nodes
	nodes *= b.groups
	if b.replicated && nodes < 2 {
		if f.Topology.Replicated != nil {
			return f.errAt("topology.replicated", "a replicated topology needs at least 2 nodes, the world has %d", nodes)
		}
		b.replicated = false // one node of a replicated design: no replicas (as the default scenario does)
	}
	for i := 0; i < nodes; i++ {
		b.nodeNames = append(b.nodeNames, fmt.Sprintf("n%d", i))
	}
	if b.replicated {
		if err := b.replication(); err != nil {
			return err
		}
	}
	if b.cluster {
		b.cfg.Topology.Shards = b.groups / b.clusters
		if b.clusters > 1 {
			b.cfg.Topology.Clusters = b.clusters
		}
	}
	if f.Topology.Failover == "cluster" {
		if !b.cluster || !b.replicated {
			return f.errAt("topology.failover", "cluster: lock %s's world is not a replicated Redis Cluster (its own failover needs shards with replicas)", info.ID)
		}
		if b.cfg.Topology.DownAfter <= 0 {
			return f.errAt("topology.failover", "cluster: needs topology.down_after (the node timeout)")
		}
		if b.clusters > 1 {
			return f.errAt("topology.failover", "cluster: lock %s runs on %d independent clusters, and the cluster's own failover is modelled for one (restrict the file with locks:)", info.ID, b.clusters)
		}
		b.cfg.Topology.ClusterFailover = true
	}
	return nil
}

// replication sets a replicated world's lag and Sentinel's down-after.
func (b *worldBuild) replication() error {
	f, p := b.f, b.p
	lag, err := b.span("topology.repl_lag", f.Topology.ReplLag, 0)
	if err != nil {
		return err
	}
	switch up := f.Topology.ReplLagUpTo; {
	case p.ReplLag > 0:
		lag = p.ReplLag
	case up.Set && up.NS > 0:
		lag = time.Duration(sim.NewStreams(b.seed).Get("params").Int64N(int64(up.NS)))
	}
	down, err := b.span("topology.down_after", f.Topology.DownAfter, 0)
	if err != nil {
		return err
	}
	if p.DownAfter > 0 {
		down = p.DownAfter
	}
	b.cfg.Topology = sim.Topology{Replicated: true, ReplLag: lag, DownAfter: down}
	if b.groups > 1 && !b.cluster {
		b.cfg.Topology.Groups = b.groups
	}
	return nil
}

// keyShard and otherShards: a fault's "nX@key" names nX of the shard that
// serves the lock key's slot in a Redis Cluster world, "nX@other" nX of
// every other shard.
const (
	keyShard    = "key"
	otherShards = "other"
)

// perGroup maps the file's node and group names to the world's: when
// the groups are copies, the file's nX (X below its group's size) is
// nX of every group and its one group g0 is every group; another node
// or group name is an error there. Otherwise names are the world's own.
func (b *worldBuild) perGroup(names []string) ([]string, error) {
	if !b.copied {
		return names, nil
	}
	var out []string
	for _, n := range names {
		if node, which, ok := strings.Cut(n, "@"); ok && nodeNameRE.MatchString(node) && (which == keyShard || which == otherShards) {
			// nX of the shard serving the lock key's slot, or of every
			// other shard (a cluster only).
			i, _ := strconv.Atoi(node[1:])
			switch {
			case !b.cluster:
				return nil, fmt.Errorf("%q: @%s names nodes by the lock key's shard, and lock %s's world is not a Redis Cluster", n, which, b.info.ID)
			case i >= b.groupSize:
				return nil, fmt.Errorf("no node %s: each shard of lock %s's cluster has %d nodes (n0..n%d)", n, b.info.ID, b.groupSize, b.groupSize-1)
			}
			ks := sim.SlotShard(sim.KeySlot(LockKey), b.groups)
			for s := 0; s < b.groups; s++ {
				if (s == ks) == (which == keyShard) {
					out = append(out, fmt.Sprintf("n%d", s*b.groupSize+i))
				}
			}
			continue
		}
		switch {
		case n == "g0":
			for g := 0; g < b.groups; g++ {
				out = append(out, fmt.Sprintf("g%d", g))
			}
			continue
		case strings.HasPrefix(n, "g"):
			return nil, fmt.Errorf("%q: the file's world has one primary/replica group, g0, copied %d times for lock %s (g0 names them all)", n, b.groups, b.info.ID)
		case !nodeNameRE.MatchString(n):
			out = append(out, n) // a client, the storage, sentinel
			continue
		}
		i, _ := strconv.Atoi(n[1:])
		if i >= b.groupSize {
			return nil, fmt.Errorf("no node %s: the file's world has %d nodes (n0..n%d), copied in each of the %d groups of lock %s (nX names nX of every group)", n, b.groupSize, b.groupSize-1, b.groups, b.info.ID)
		}
		for g := 0; g < b.groups; g++ {
			out = append(out, fmt.Sprintf("n%d", g*b.groupSize+i))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// nodes configures each node: persistence (the file's, or drawn) and the
// per-node settings.
func (b *worldBuild) nodes() error {
	f, info, cfg := b.f, b.info, &b.cfg
	var draw *rand.Rand // persistence: random
	if f.Topology.Persistence == randomPersistence {
		draw = sim.NewStreams(b.seed).Get("params")
	}
	for _, name := range b.nodeNames {
		nc := sim.NodeConfig{Name: name, Persistence: sim.Persistence(f.Topology.Persistence)}
		switch {
		case draw != nil:
			nc.Persistence = sim.Persistence(persistences[draw.IntN(len(persistences))])
		case nc.Persistence == "":
			nc.Persistence = sim.PersistNone
		}
		cfg.Nodes = append(cfg.Nodes, nc)
	}
	nodes := len(b.nodeNames)
	for _, name := range sortedKeys(f.Topology.PerNode) {
		ns := f.Topology.PerNode[name]
		path := "topology.per_node." + name
		i, _ := strconv.Atoi(name[1:])
		if i >= nodes {
			return f.errAt(path, "no node %s for lock %s: its world has %d nodes (n0..n%d)", name, info.ID, nodes, nodes-1)
		}
		off, err := b.span(path+".clock_offset", ns.ClockOffset, 0)
		if err != nil {
			return err
		}
		each, err := b.perGroup([]string{name})
		if err != nil {
			return f.errAt(path, "%v", err)
		}
		for _, each := range each {
			i, _ := strconv.Atoi(each[1:])
			if ns.Persistence != "" {
				cfg.Nodes[i].Persistence = sim.Persistence(ns.Persistence)
			}
			cfg.Nodes[i].ClockOffset, cfg.Nodes[i].DriftPPM = off, ns.DriftPPM
		}
	}
	return nil
}

// clients sets the client count and each client's clock.
func (b *worldBuild) clients() error {
	f, cfg := b.f, &b.cfg
	cfg.Clients = b.p.Clients
	if cfg.Clients == 0 {
		cfg.Clients = f.Clients.Count
	}
	if cfg.Clients == 0 {
		cfg.Clients = FileDefaultClients
	}
	if cfg.Clients < 1 || cfg.Clients > sim.MaxClients {
		return f.errAt("clients.count", "%d out of range 1..%d", cfg.Clients, sim.MaxClients)
	}
	for i := 0; i < cfg.Clients; i++ {
		b.clientNames = append(b.clientNames, fmt.Sprintf("c%d", i))
	}
	for _, name := range sortedKeys(f.Clients.PerClient) {
		cs := f.Clients.PerClient[name]
		path := "clients.per_client." + name
		i, _ := strconv.Atoi(name[1:])
		if i >= cfg.Clients {
			return f.errAt(path, "no client %s: the world has %d clients (c0..c%d)", name, cfg.Clients, cfg.Clients-1)
		}
		off, err := b.span(path+".clock_offset", cs.ClockOffset, 0)
		if err != nil {
			return err
		}
		for len(cfg.ClientOffsets) <= i {
			cfg.ClientOffsets = append(cfg.ClientOffsets, 0)
			cfg.ClientDriftPPMs = append(cfg.ClientDriftPPMs, 0)
		}
		cfg.ClientOffsets[i], cfg.ClientDriftPPMs[i] = off, cs.DriftPPM
	}
	return nil
}

// phases sets the safety and liveness phases and the network's latency.
func (b *worldBuild) phases() (err error) {
	f, info, p, cfg := b.f, b.info, b.p, &b.cfg
	if cfg.Duration, err = b.span("duration", f.Duration, FileDefaultDuration); err != nil {
		return err
	}
	if p.Duration > 0 {
		cfg.Duration = p.Duration
	}
	if cfg.Liveness, err = b.span("liveness", f.Liveness, FileDefaultLiveness); err != nil {
		return err
	}
	if p.Liveness > 0 {
		cfg.Liveness = p.Liveness
	}
	if cfg.Duration < sim.MinDuration || cfg.Duration > sim.MaxDuration {
		return f.errAt("duration", "%v out of range [%v, %v] for lock %s", cfg.Duration, sim.MinDuration, sim.MaxDuration, info.ID)
	}
	if cfg.Liveness > sim.MaxDuration {
		return f.errAt("liveness", "%v out of range [0, %v] for lock %s", cfg.Liveness, sim.MaxDuration, info.ID)
	}
	if cfg.Net.LatencyMin, err = b.span("net.latency_min", f.Net.LatencyMin, 0); err != nil {
		return err
	}
	if cfg.Net.LatencyJitter, err = b.span("net.latency_jitter", f.Net.LatencyJitter, 0); err != nil {
		return err
	}
	if cfg.Net.LatencyMin > maxLatency || cfg.Net.LatencyJitter > maxLatency {
		return f.errAt("net", "latency above %v for lock %s", maxLatency, info.ID)
	}
	b.faultTargets()
	return nil
}

// finish adds the workload and the protected resource, scales the world
// to the asked TTL, and validates it.
func (b *worldBuild) finish() (Parts, error) {
	f, info, p := b.f, b.info, b.p
	wl, err := f.workload(info, b.span)
	if err != nil {
		return Parts{}, err
	}
	if err := p.applyHold(&wl); err != nil {
		return Parts{}, fmt.Errorf("%v (lock %s)", err, info.ID)
	}
	wl.Careful = wl.Careful || p.Careful
	j := f.judging(info)
	mode := resource.ModeNone
	if info.Fencing != "" {
		mode = resource.Mode(info.Fencing)
	}
	var initial map[string]int64
	if wl.Resource != ResourceNone {
		initial = map[string]int64{PoolKey: j.Initial}
	}
	cfg := b.cfg
	cfg.Services = []sim.ServiceConfig{resource.Service(resource.Options{Mode: mode, Initial: initial})}
	if b.coord != nil {
		cfg.Services = append(cfg.Services, b.coord.Services(len(cfg.Services))...)
	}
	cfg.Program = Program(info, wl)
	cfg.WatchKeys = []string{wl.Key}
	cfg = cfg.WithDefaults()
	parts := Parts{Config: cfg, Lock: info, Workload: wl, Scale: 1, OrigTTL: info.TTL}
	if p.TTL > 0 {
		// The TTL is an input: the world, workload and lock are played
		// TTL / the lock's own TTL times as fast (scaleParts).
		if parts.OrigTTL <= 0 {
			parts.OrigTTL = NominalTTL
		}
		if parts, err = scaleParts(parts, float64(p.TTL)/float64(parts.OrigTTL)); err != nil {
			return Parts{}, err
		}
	}
	if err := parts.Config.Validate(); err != nil {
		return Parts{}, &FileError{File: f.name, Msg: fmt.Sprintf("lock %s: %v", info.ID, err)}
	}
	return parts, nil
}

// onlyPausesRenewals reports whether the file's faults are all client
// pauses targeted at a renewal (watchdog-starved.yaml): a lock that never
// renews would run them as pauses that never fire.
func (f *File) onlyPausesRenewals() bool {
	for _, fs := range f.Faults {
		if fs.Kind != string(faults.ClientPause) || fs.At != string(locks.PointRenewing) {
			return false
		}
	}
	return len(f.Faults) > 0
}

// StandIn is the catalogue lock whose faults a lock takes in a scenario
// file whose faults are restricted with locks: but never name it (a
// library, a user's lock): the lock of its topology the files are written
// for. Without it such a lock ran those scenarios with no faults at all.
var StandIn = map[locks.Topology]string{locks.Single: "set-nx-cad", locks.Independent: "redlock", locks.Replicated: "primary-replica", locks.Groups: "redisson-multilock", locks.Cluster: "cluster-set-nx-cad"}

// faultFilterID is the id the faults' locks: filters are matched against
// for info: its own when some fault names it, else its topology's stand-in.
func (f *File) faultFilterID(info locks.Info) string {
	for _, fs := range f.Faults {
		if slices.Contains(fs.Locks, info.ID) {
			return info.ID
		}
	}
	if id, ok := StandIn[info.Topology]; ok {
		return id
	}
	return info.ID
}

// aimSwarm applies the swarm block's targets, ttl_relative and arm to b
// for lock info (its TTL in this world ttl; mapNames expands the groups
// and maps node names to the world's, as for a scripted fault's targets).
// Without them b is left as it was: the draws are the same as before the
// fields existed.
func (f *File) aimSwarm(b *faults.Bounds, info locks.Info, ttl time.Duration, mapNames func([]string) ([]string, error)) error {
	s := f.Swarm
	if len(s.Targets) > 0 {
		mapped, err := mapNames(s.Targets)
		if err != nil {
			return f.errAt("swarm.targets", "%v", err)
		}
		var aimed []string // a group and a member of it name one process once
		for _, t := range mapped {
			if slices.Contains(aimed, t) {
				continue
			}
			aimed = append(aimed, t)
			if !slices.Contains(b.Clients, t) && !slices.Contains(b.Nodes, t) {
				return f.errAt("swarm.targets", "%q is not a client or node of lock %s's world (%s; %s, %s)", t, info.ID,
					worldNames(b.Nodes[:len(b.Nodes)-1], b.Clients, false), GroupClients, GroupNodes)
			}
		}
		b.Targets = aimed
		if err := b.Check(); err != nil {
			return f.errAt("swarm.targets", "%v (lock %s)", err, info.ID)
		}
	}
	if s.TTLRelative {
		if ttl <= 0 {
			return f.errAt("swarm.ttl_relative", "sizes relative to the lock's TTL, and lock %s has none", info.ID)
		}
		b.TTL = ttl
	}
	if s.Arm {
		b.ArmPoints = slices.Clone(faults.HarnessPoints)
		if info.Renews {
			b.ArmPoints = append(b.ArmPoints, string(locks.PointRenewing))
		}
	}
	return nil
}
