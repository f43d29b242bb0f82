package sim

import (
	"fmt"
	"io"
	"time"

	"github.com/locksim/locksim/clock"
	"github.com/locksim/locksim/faults"
)

// Persistence is a node's durability on crash.
type Persistence string

const (
	PersistNone     Persistence = "none"     // restart empty
	PersistEverysec Persistence = "everysec" // lose up to the last second of writes
	PersistAlways   Persistence = "always"   // lose nothing
	// PersistNo is appendonly yes with appendfsync no: Redis never
	// fsyncs, the kernel writes its dirty pages back on its own (modelled
	// as every 30 s, Linux's dirty_expire_centisecs); WAITAOF's local
	// fsync never comes (sim/waitaof.go).
	PersistNo Persistence = "no"
)

// aof reports whether the mode is an append-only file (appendonly yes):
// INFO's aof_enabled, and what WAITAOF numlocal needs.
func (p Persistence) aof() bool {
	return p == PersistEverysec || p == PersistAlways || p == PersistNo
}

// NodeConfig describes one Redis node.
type NodeConfig struct {
	Name        string
	Persistence Persistence
	ClockOffset time.Duration // the node clock's offset from true time at t=0
	DriftPPM    int64         // the node clock's drift rate
}

// Topology is how the nodes relate. Independent nodes (Redlock) have
// Replicated false. Replicated: node 0 starts as primary, the rest are its
// async replicas, and a Sentinel promotes one when the primary is down.
type Topology struct {
	Replicated bool
	// ReplLag is added to the network latency of every replication message.
	ReplLag time.Duration
	// DownAfter is how long Sentinel must fail to reach the primary before
	// it fails over (Sentinel's down-after-milliseconds).
	DownAfter time.Duration
	// Groups splits a replicated world's nodes into that many independent
	// primary/replica groups of equal size, in node order (0 or 1: one
	// group). The first node of each group starts as its primary; one
	// Sentinel deployment monitors them all, each group on its own; a
	// failover fault names the groups it fails over ("g0", "g1", ...; none:
	// every group). Redlock over Sentinel groups (Redisson's RedLock over
	// N masters that each fail over) runs on it.
	Groups int
	// Shards, when set, makes the world a Redis Cluster (cluster.go) of
	// that many shards: the nodes split in node order into shards of equal
	// size, the first node of each its primary, the 16,384 slots split
	// among them as redis-cli --cluster create does. Replicated: the rest
	// of each shard are its replicas (Groups, 0 or Shards, counts as Shards); otherwise each
	// shard is one node. Clients reach it through Proc.Cluster.
	Shards int
	// Clusters, with Shards, makes that many independent Redis Clusters
	// of Shards shards each (clusters.go; 0 or 1: one): the nodes split
	// in node order into clusters of equal size, each split into shards as
	// one cluster's nodes are. Their shards are the groups, in node order
	// (cluster 0's shards first). Clients reach them through Proc.Clusters.
	Clusters int
	// ClusterFailover makes a replicated cluster fail over by its own
	// failure detection and election (cluster_failover.go), DownAfter
	// being the node timeout, in place of the Sentinel stand-in; a
	// primary cut off from a majority of primaries then stops accepting
	// writes after the node timeout.
	ClusterFailover bool
}

// NetConfig is the network's normal behaviour: one-way latency is
// LatencyMin plus an exponential with mean LatencyJitter.
type NetConfig struct {
	LatencyMin    time.Duration
	LatencyJitter time.Duration
	// MaxHold bounds how long a message may be held by a partition before it
	// is dropped (a TCP connection giving up).
	MaxHold time.Duration
}

// RedisConfig holds the go-redis options every simulated client gets.
type RedisConfig struct {
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	MaxRetries   int // go-redis MaxRetries; -1 disables retries
	RetryBackoff time.Duration
}

// Config is everything a run needs. The zero values of optional fields take
// the defaults of DefaultConfig.
type Config struct {
	Seed     uint64
	Duration time.Duration // safety phase, with faults
	Liveness time.Duration // liveness phase, after the heal
	Nodes    []NodeConfig
	Topology Topology
	Clients  int
	// ClientDriftPPMs and ClientOffsets give per-client clock settings
	// (index = client id; missing entries are 0).
	ClientDriftPPMs []int64
	ClientOffsets   []time.Duration
	Net             NetConfig
	Redis           RedisConfig
	Faults          []faults.Fault
	// Services are simulated processes other than Redis (the protected
	// resource), reachable by every client through Proc.Service.
	Services []ServiceConfig
	Program  Program

	// Trace, if set, receives the trace as JSON Lines.
	Trace io.Writer
	// MaxEvents bounds the scheduler's steps (0: 50 million).
	MaxEvents int64
	// Progress, if set, is called from the scheduler every ProgressEvery
	// steps with the world's true time and the steps so far (a long run's
	// progress line; it must not touch the world).
	Progress func(at time.Duration, events int64)
	// MaxHistory bounds the events kept in memory for checkers (0: 1 million).
	// Beyond it the trace file and hash still see every event.
	MaxHistory int
	// HistoryCommands keeps every node command ("cmd" events) in the
	// in-memory history too; by default they reach only the trace and its
	// hash, and the history holds what checkers read (client operations,
	// faults, failovers, crashes).
	HistoryCommands bool
	// HistoryBuf, if set, is memory the history may reuse: the run appends
	// its history to HistoryBuf[:0]. Whoever sets it gives up what it held
	// (a worker hands each run the previous run's history, run.Reuse), so
	// a long sweep does not grow a new history, copy by copy, every run.
	HistoryBuf []Event
	// EagerAcks makes every replica acknowledgement an event, as the
	// engine did before it kept acks nobody waits for out of the queue
	// (Node.sendAck): a test runs both and compares the traces.
	EagerAcks bool
	// WatchKeys are the lock's keys: on a primary, every write that deletes
	// such a key or changes its TTL while it holds a value another client
	// set is recorded as a "key-touch" event (the ground truth of
	// ownership: whose key a release or renewal really touched).
	WatchKeys []string
	// EndWhenLive ends the liveness phase once every client has acquired
	// after the heal (live_end.go; Result.LiveAt). Only for a design that
	// promises no fairness, judged with no unavailability bound and
	// whose progress is an acquisition: run.Spec.EndWhenLive decides.
	EndWhenLive bool
}

// ServiceConfig names a service process and builds its state machine.
type ServiceConfig struct {
	Name string
	New  func() Service
}

// Limits for Validate.
const (
	MaxNodes    = 64
	MaxClients  = 10_000
	MaxDuration = 24 * time.Hour
	// MinDuration is the shortest safety phase: faults are placed in its
	// first 80%, and a shorter phase leaves them no room.
	MinDuration = time.Millisecond
)

// ClientDriftPPM is client i's drift.
func (c Config) ClientDriftPPM(i int) int64 {
	if i < len(c.ClientDriftPPMs) {
		return c.ClientDriftPPMs[i]
	}
	return 0
}

// ClientClockOffset is client i's clock offset.
func (c Config) ClientClockOffset(i int) time.Duration {
	if i < len(c.ClientOffsets) {
		return c.ClientOffsets[i]
	}
	return 0
}

// WithDefaults fills zero fields with defaults.
func (c Config) WithDefaults() Config {
	if c.Net.LatencyMin == 0 && c.Net.LatencyJitter == 0 {
		c.Net.LatencyMin = 200 * time.Microsecond
		c.Net.LatencyJitter = 300 * time.Microsecond
	}
	if c.Net.MaxHold == 0 {
		c.Net.MaxHold = 15 * time.Minute
	}
	if c.Redis.DialTimeout == 0 {
		c.Redis.DialTimeout = 1 * time.Second
	}
	if c.Redis.ReadTimeout == 0 {
		c.Redis.ReadTimeout = 500 * time.Millisecond
	}
	if c.Redis.WriteTimeout == 0 {
		c.Redis.WriteTimeout = c.Redis.ReadTimeout
	}
	if c.Redis.RetryBackoff == 0 {
		c.Redis.RetryBackoff = 8 * time.Millisecond
	}
	if c.Topology.Replicated && c.Topology.DownAfter == 0 {
		c.Topology.DownAfter = 5 * time.Second
	}
	if c.MaxEvents == 0 {
		c.MaxEvents = 50_000_000
	}
	if c.MaxHistory == 0 {
		c.MaxHistory = 1_000_000
	}
	for i := range c.Nodes {
		if c.Nodes[i].Persistence == "" {
			c.Nodes[i].Persistence = PersistNone
		}
		if c.Nodes[i].Name == "" {
			c.Nodes[i].Name = fmt.Sprintf("n%d", i)
		}
	}
	return c
}

// Validate reports the first invalid field, naming it and its allowed range.
func (c Config) Validate() error {
	if len(c.Nodes) < 1 || len(c.Nodes) > MaxNodes {
		return fmt.Errorf("nodes: %d out of range 1..%d", len(c.Nodes), MaxNodes)
	}
	if c.Clients < 1 || c.Clients > MaxClients {
		return fmt.Errorf("clients: %d out of range 1..%d", c.Clients, MaxClients)
	}
	if c.Duration < MinDuration || c.Duration > MaxDuration {
		return fmt.Errorf("duration: %v out of range [%v, %v]", c.Duration, MinDuration, MaxDuration)
	}
	if c.Liveness < 0 || c.Liveness > MaxDuration {
		return fmt.Errorf("liveness: %v out of range [0, %v]", c.Liveness, MaxDuration)
	}
	if c.Program == nil {
		return fmt.Errorf("program: no client program given")
	}
	if c.Topology.Replicated && len(c.Nodes) < 2 {
		return fmt.Errorf("topology: a replicated topology needs at least 2 nodes (a primary and a replica), got %d", len(c.Nodes))
	}
	if g := c.Topology.Groups; g != 0 {
		switch {
		case g < 0 || g > MaxNodes/2:
			return fmt.Errorf("topology.groups: %d out of range 0..%d", g, MaxNodes/2)
		case g > 1 && !c.Topology.Replicated:
			return fmt.Errorf("topology.groups: %d groups need a replicated topology", g)
		case g > 1 && (len(c.Nodes)%g != 0 || len(c.Nodes)/g < 2):
			return fmt.Errorf("topology.groups: %d nodes do not split into %d groups of at least 2 (a primary and a replica each)", len(c.Nodes), g)
		}
	}
	if err := c.checkShards(); err != nil {
		return err
	}
	names := map[string]bool{SentinelName: c.Topology.Replicated}
	for i, n := range c.Nodes {
		switch n.Persistence {
		case PersistNone, PersistEverysec, PersistAlways, PersistNo, "":
		default:
			return fmt.Errorf("nodes[%d].persistence: %q is not one of none, everysec, always, no", i, n.Persistence)
		}
		if err := clock.CheckDrift(n.DriftPPM); err != nil {
			return fmt.Errorf("nodes[%d].drift_ppm: %v", i, err)
		}
		if names[n.Name] {
			return fmt.Errorf("nodes[%d].name: %q used twice", i, n.Name)
		}
		names[n.Name] = true
	}
	for i, s := range c.Services {
		if s.Name == "" || s.New == nil {
			return fmt.Errorf("services[%d]: needs a name and a constructor", i)
		}
		if names[s.Name] {
			return fmt.Errorf("services[%d].name: %q used twice", i, s.Name)
		}
		names[s.Name] = true
	}
	// A coordination service's members beside the storage: a fault may
	// name "leader", resolved at its start (leader.go).
	names[faults.Leader] = len(c.Services) > 1
	if len(c.Services) > MaxNodes {
		return fmt.Errorf("services: %d out of range 0..%d", len(c.Services), MaxNodes)
	}
	for i := 0; i < c.Clients; i++ {
		if err := clock.CheckDrift(c.ClientDriftPPM(i)); err != nil {
			return fmt.Errorf("clients[%d].drift_ppm: %v", i, err)
		}
		names[fmt.Sprintf("c%d", i)] = true
	}
	if c.Net.LatencyMin < 0 || c.Net.LatencyJitter < 0 {
		return fmt.Errorf("net.latency: negative latency")
	}
	if c.Redis.ReadTimeout < 0 || c.Redis.DialTimeout < 0 {
		return fmt.Errorf("redis: negative timeout")
	}
	if c.Topology.ReplLag < 0 || c.Topology.DownAfter < 0 {
		return fmt.Errorf("topology: negative replication lag or down-after")
	}
	known := func(n string) bool { return names[n] }
	isClient := func(n string) bool {
		var i int
		_, err := fmt.Sscanf(n, "c%d", &i)
		return err == nil && fmt.Sprintf("c%d", i) == n && i < c.Clients
	}
	for i, f := range c.Faults {
		known := known
		if f.Kind == faults.Failover {
			// A failover's targets name groups, and only they do.
			for _, t := range f.Targets {
				if !c.isGroup(t) {
					return fmt.Errorf("faults[%d]: failover: target %q is not a group (g0..g%d)", i, t, c.groupCount()-1)
				}
			}
			on := f.On
			known = func(n string) bool { return c.isGroup(n) || n == on && isClient(n) }
		}
		if err := f.Validate(known); err != nil {
			return fmt.Errorf("faults[%d]: %v", i, err)
		}
		if f.Kind == faults.SlotMigration && (c.Topology.Shards < 2 || c.clusterCount() > 1) {
			return fmt.Errorf("faults[%d]: slot-migration moves a slot between the shards of one Redis Cluster: needs topology.shards ≥ 2 and one cluster (got %d shards, %d clusters)", i, c.Topology.Shards, c.clusterCount())
		}
		if f.Kind == faults.SlotMigration && c.Topology.Replicated {
			// cluster_migrate.go keeps a migration's MIGRATING and
			// IMPORTING state per slot, not on the nodes that hold it in
			// Redis, so a failover during a migration is not modelled.
			return fmt.Errorf("faults[%d]: slot-migration in a replicated cluster (topology.replicated) is not supported: a failover during a migration is not modelled; migrate slots in a cluster of one node per shard", i)
		}
		if f.On != "" && !isClient(f.On) {
			return fmt.Errorf("faults[%d]: %s: on %q is not a client (an armed fault waits for a client to reach its point)", i, f.Kind, f.On)
		}
		for _, t := range f.Targets {
			switch {
			case f.Kind == faults.ClientPause && !isClient(t):
				return fmt.Errorf("faults[%d]: client-pause: %q is not a client (a node pauses with node-pause)", i, t)
			case (f.Kind == faults.NodePause || f.Kind == faults.Crash) && (isClient(t) || t == SentinelName):
				return fmt.Errorf("faults[%d]: %s: %q is not a node or service (a client stops with client-pause)", i, f.Kind, t)
			}
		}
		if f.Kind == faults.Failover && !c.Topology.Replicated {
			return fmt.Errorf("faults[%d]: failover needs a replicated topology", i)
		}
	}
	return nil
}

// groupCount is the number of primary/replica groups (1 unless
// Topology.Groups says more).
func (c Config) groupCount() int {
	if c.Topology.Shards > 0 && c.Topology.Replicated {
		return c.Topology.Shards * c.clusterCount() // a cluster's shards are its groups
	}
	return max(1, c.Topology.Groups)
}

// isGroup reports whether name is one of the world's groups ("g0", ...).
func (c Config) isGroup(name string) bool {
	for g := 0; g < c.groupCount(); g++ {
		if groupName(g) == name {
			return true
		}
	}
	return false
}
