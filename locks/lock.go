// Package locks is the lock contract: what every lock design locksim judges
// implements (package catalogue holds the designs themselves), one
// contract that says what the lock *believes* (whether it holds, until when
// on its own clock, and its fencing token), so checkers can judge
// "two clients believe they hold it at once".
package locks

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/clock"
	"github.com/locksim/locksim/event"
)

// ErrNotAcquired means the lock is held by someone else (or a quorum could
// not be reached) after the lock's own retries. It is a clean failure: the
// caller does not hold the lock.
var ErrNotAcquired = errors.New("lock not acquired")

// ErrNotOwner means Release removed nothing: the key is gone or belongs to
// another holder (the lease had run out).
var ErrNotOwner = errors.New("lock no longer held by this client")

// Topology is what a lock needs from the world.
type Topology string

const (
	Single      Topology = "single"      // one node (or the primary of a replicated set)
	Independent Topology = "independent" // N independent nodes (Redlock)
	Replicated  Topology = "replicated"  // a primary with async replicas and Sentinel
	// Consensus is a replicated coordination service (package zk: 3 raft
	// members) instead of Redis; Env.Coord reaches its members.
	Consensus Topology = "consensus"
	// Groups is N independent primary/replica groups, each failed over by
	// Sentinel on its own (Redlock over N Sentinel groups); Env.Groups
	// reaches each group's primary.
	Groups Topology = "groups"
	// Cluster is a Redis Cluster of DefaultShards shards (sim/cluster.go):
	// Env.Cluster routes each command to its key's slot's primary.
	Cluster Topology = "cluster"
)

// DefaultShards is the number of shards a Cluster lock's world has
// (redis-cli --cluster create's smallest cluster: three masters).
const DefaultShards = 3

// DefaultGroups is the number of primary/replica groups a Groups lock's
// world has when nothing says otherwise (“The SETNX command”: three Sentinel groups).
const DefaultGroups = 3

// Env is what the world hands a lock instance: go-redis clients for the
// nodes, the lease, the client's own clock and random stream, its name and
// the key, the calls a lock makes to the world (At, Go, Renewed,
// RenewFailed), and a monotonic reading of its clock (Mono).
type Env struct {
	// Nodes are clients for independent nodes, in node order, typed as a
	// Redlock library takes them (each is a *redis.Client).
	Nodes []redis.UniversalClient
	// Primary is the client for a single node or for the primary of a
	// replicated topology (it follows failovers).
	Primary *redis.Client
	// Coord are clients for the members of the world's coordination
	// service (Topology Consensus), in member order; nil otherwise.
	Coord []*redis.Client
	// Groups are clients for the primary of each primary/replica group
	// (Topology Groups), in group order, each following its group's
	// failovers; nil otherwise.
	Groups []*redis.Client
	// Cluster is a go-redis ClusterClient for a Redis Cluster (Topology
	// Cluster): it sends each command to its key's slot's primary and
	// follows MOVED; nil otherwise.
	Cluster *redis.ClusterClient
	// Clusters are a ClusterClient for each independent Redis Cluster of
	// the world (Info.Clusters), in order; nil otherwise.
	Clusters []*redis.ClusterClient
	// Members, on the real arm only, reach the real coordination service
	// a design names in Info.Real: each member's address as this client
	// reaches it, and the dialer to use (it holds the process's I/O while
	// the process is paused). Nil in the simulator.
	Members *Members
	// Clock is the process's own clock: all time the lock reads or waits.
	Clock clock.Clock
	// Rand is the process's own random stream (values, retry jitter).
	Rand *rand.Rand
	// Client is the process's name; Key the lock's key.
	Client string
	Key    string
	// TTL is the lease the world runs the lock with: the catalogue's
	// Info.TTL, or locktest.Options.TTL for a user's lock. A lock that
	// takes its TTL from here keeps it equal to what the fault search and
	// the workload are sized by.
	TTL time.Duration
	// Hooks are the world's side of At, Go and Renewed. The world sets
	// them; lock code calls the methods, never the hooks.
	Hooks Hooks
}

// Members are a real coordination service's members as one client
// reaches them (Env.Members).
type Members struct {
	Addrs []string
	Dial  func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Hooks are how the world implements Env's calls (a nil hook: the call
// does nothing, or for Go starts a plain goroutine).
type Hooks struct {
	At      func(PausePoint)
	Go      func(func())
	Renewed func(validUntil time.Time)
	// RenewFailed is Env.RenewFailed's side (nil: it does nothing).
	RenewFailed func()
}

// At marks that the lock reached pause point pt: a fault schedule can
// pause the client there (the call then blocks for the pause). A lock
// marks PointAcquiring, PointAfterCheck and, if it renews, PointRenewing;
// the workload marks PointBeforeWrite. A point a lock never marks is a
// pause the search never tries (locktest warns about it).
func (e Env) At(pt PausePoint) {
	if e.Hooks.At != nil {
		e.Hooks.At(pt)
	}
}

// Go starts a background goroutine of this client (a watchdog). Lock code
// must use it instead of the go statement: in the simulator the new
// goroutine begins only once the caller blocks, so the two never race.
func (e Env) Go(f func()) {
	if e.Hooks.Go != nil {
		e.Hooks.Go(f)
		return
	}
	go f()
}

// Renewed reports that the holder's belief changed after Acquire returned
// (the Lease cannot change): a watchdog that renewed the lease calls it
// with the new validity deadline, on Clock. A zero validUntil means the
// holder now believes it holds until it releases (a session kept alive
// with no deadline of its own; as a Lease's zero ValidUntil). It may be
// called from a goroutine started with Go, only while the lease is held:
// never after Release was called for it. The workload records each call
// as a "renew" event of the acquisition (Until 0 for until-release), the
// checkers extend the hold by it, and a careful workload believes it: its
// section goes on past the lease's first deadline while renewals extend it.
func (e Env) Renewed(validUntil time.Time) {
	if e.Hooks.Renewed != nil {
		e.Hooks.Renewed(validUntil)
	}
}

// RenewFailed reports that the holder stopped believing it holds the
// lock, now: a renewal was refused (the key is gone or another's), or
// failed in a way after which the lock gives up the hold. A lock that
// keeps believing after a failed renewal must not call it (it calls
// Renewed, or nothing: the belief then ends at its last deadline). Same
// rules as Renewed: only while the lease is held, never after Release.
// The workload records it as a "renew-fail" event of the acquisition, the
// checkers end the hold there, and a careful workload writes nothing
// after it. A later Renewed (the lock re-took the key) believes again.
func (e Env) RenewFailed() {
	if e.Hooks.RenewFailed != nil {
		e.Hooks.RenewFailed()
	}
}

// Mono is the process's monotonic reading (clock.Mono of Clock): what Go
// code measures elapsed time with (time.Since on a time.Now reading).
// Only the difference of two readings means anything: it runs at the
// process clock's rate, drift included (as NTP slews CLOCK_MONOTONIC),
// and clock jumps never step it, where Clock.Now jumps with them. A lock
// that measures how long its acquisition took, or how much of its lease
// is left, measures it here:
//
//	start := env.Mono()
//	... acquire ...
//	validity := env.TTL - (env.Mono() - start)
//
// A Clock without a monotonic reading (one that is not
// clock.Monotonic) falls back to Now.
func (e Env) Mono() time.Duration { return clock.Mono(e.Clock) }

// UniversalClients converts clients to Env.Nodes' type.
func UniversalClients(cs []*redis.Client) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// PausePoint names a moment in a lock's life where a fault schedule can
// pause the client (a client pause targeted at a lock phase: faults.Fault.At).
type PausePoint string

const (
	// PointAcquiring is during acquisition: after the first request to a
	// node was sent, before the outcome is known (Redlock: between nodes).
	PointAcquiring PausePoint = "acquiring"
	// PointAfterCheck is after the lock decided it holds (after Redlock's
	// validity check), before Acquire returns.
	PointAfterCheck PausePoint = "after-check"
	// PointBeforeWrite is in the critical section, just before the write to
	// the protected resource (called by the workload, not the lock).
	PointBeforeWrite PausePoint = "before-write"
	// PointRenewing is in a renewal (watchdog), before its request is sent.
	PointRenewing PausePoint = "renewing"
)

// PausePoints lists every pause point.
var PausePoints = []PausePoint{PointAcquiring, PointAfterCheck, PointBeforeWrite, PointRenewing}

// Fencing is what the protected resource must check for a lock to be safe
// beyond its lease. It is event.Fencing (declared once, with the history's
// vocabulary); the constants are event's.
type Fencing = event.Fencing

const (
	FenceNone     = event.FenceNone     // the resource checks nothing
	FenceMaxToken = event.FenceMaxToken // reject a token lower than the highest seen (Kleppmann)
	// FenceMaxTokenStrict also rejects an equal token from another owner.
	FenceMaxTokenStrict = event.FenceMaxTokenStrict
	FenceOwnerCAS       = event.FenceOwnerCAS // compare-and-set on the holder's random token (antirez)
	FenceVersion        = event.FenceVersion  // optimistic version check, no lock at all (“Practice: a Redis lock” (Tencent Cloud))
	// FenceMaxTokenWrite is max-token on writes only: reads are not fenced (Kleppmann's storage).
	FenceMaxTokenWrite = event.FenceMaxTokenWrite
)

// Lease is what a lock believes after a successful Acquire.
type Lease struct {
	// Value is the string the lock wrote as its key's value (a random
	// value, a UUID, a library's owner token): who holds the key.
	Value string
	// ValidUntil is the local time until which the holder believes it holds
	// the lock. Zero means the lock gives no validity signal and the holder
	// believes it until it releases.
	ValidUntil time.Time
	// OnGoClock is true when ValidUntil was read from Go's time (libraries
	// that call time.Now: in the simulator that is true time), false when
	// from Env.Clock.
	OnGoClock bool
	// MonoUntil, when not 0, is the validity as a reading of Env.Mono:
	// the holder believes it holds until Env.Mono() reaches it, as Go
	// code that compares time.Since(start) with its lease does, so client
	// clock jumps do not bend it (drift does). It wins over ValidUntil
	// and OnGoClock.
	MonoUntil time.Duration
	// FencingToken is the number the protected resource checks
	// (Options.Fencing: max-token), strictly increasing per acquisition;
	// 0 when the lock has none. A string owner token goes in Value.
	FencingToken int64
	// Start is the local time the acquisition began.
	Start time.Time
	// NoMutex marks a design that excludes nothing (version-cas): the
	// holder makes no claim of exclusivity, and the resource's check is all.
	NoMutex bool
	// Read marks a shared hold: a read-write lock's read lock
	// (ReadWriteLock.AcquireRead), which other readers may hold at once.
	Read bool

	// Handle is the implementation's own state for this hold (a library's
	// mutex, a watchdog's stop channel); the harness never reads it.
	Handle any
}

// Lock is one client's instance of a lock design.
type Lock interface {
	// Acquire takes the lock, with the design's own retries. It returns
	// ErrNotAcquired when the lock is taken, another error when the outcome
	// is unknown (a timeout may have taken it).
	Acquire(ctx context.Context) (Lease, error)
	// Release gives the lock up. It returns nil when it removed this
	// lease's key, ErrNotOwner when it removed nothing because the key is
	// gone or belongs to another holder (the lease had run out), and
	// another error when the outcome is unknown. The checkers do not trust
	// the return value for ownership: the nodes record whose key every
	// write deleted or re-timed, so a release that deleted nothing is never
	// an ownership violation, even if it returns nil, and one that deleted
	// another holder's key is, whatever it returns.
	Release(ctx context.Context, l Lease) error
}

// ReadWriteLock is a lock with a shared mode (Info.ReadWrite, Redisson's
// RReadWriteLock): Acquire takes the write lock, which excludes everyone;
// AcquireRead the read lock, which excludes writers only; its lease has
// Read set. Release gives up either, by the lease it is given.
type ReadWriteLock interface {
	Lock
	AcquireRead(ctx context.Context) (Lease, error)
}

// Info describes a design in the catalogue.
type Info struct {
	ID       string
	Design   string
	Source   string
	Weakness string
	Topology Topology
	// Clusters is the number of independent Redis Clusters a Cluster
	// design runs over (Env.Clusters; 0: one, Env.Cluster).
	Clusters int
	// TTL is the lease the design's source uses.
	TTL time.Duration
	// Fencing is the resource check the design relies on ("" = none).
	Fencing Fencing
	// Renews: the design renews its lease while the holder works (a
	// watchdog), so it reaches PointRenewing; a scenario whose faults all
	// pause a renewal does not fit a design that never renews.
	Renews bool
	// Fair: the design promises fairness (grants in request order), so a
	// client that starves after the heal while others progress fails
	// liveness; for other designs it is a fairness figure.
	Fair bool
	// Reentrant: the holder may acquire again while it holds (a count per
	// holder, Redisson's RLock): Acquire on the same instance nests, and
	// each Release undoes one level. A workload with a reentrant section
	// (scenarios.Workload.Reentrant) nests only for these designs.
	Reentrant bool
	// ReadWrite: the design has a shared read mode (its Lock is a
	// ReadWriteLock): a workload with read sections
	// (scenarios.Workload.ReadFraction) takes the read lock for them.
	ReadWrite bool
	New       func(Env) (Lock, error)
	// Real names the real coordination service the design runs against on
	// the real arm ("zookeeper", "etcd"; "" for a design on Redis).
	Real string
	// RealOnly, when set, says why the simulator cannot run the design: it
	// runs on the real arm only (--backend real).
	RealOnly string
	// Params is the design's parameter table (params.go; nil: it takes
	// none), and Configure builds the design from values of them: With
	// calls it with values checked against the table, and takes the TTL
	// and New it returns.
	Params    []Param
	Configure func(Values) (Configured, error)
	// given and scale are the values and time scale With and Scaled
	// built this Info with.
	given map[string]Value
	scale float64
	// Unavailable, when set, says why this binary cannot run the design
	// (e.g. built without the go-zero tag); tests skip it, the CLI refuses
	// it with this message.
	Unavailable string
	// Canary marks a design broken on purpose (locks/catalogue/canary.go): it proves
	// the checkers can fail. Get finds it; IDs and 'locksim list locks'
	// leave it out (AllIDs and 'list locks --canaries' include it).
	Canary bool
}
