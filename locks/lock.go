// Package locks is the lock catalogue: every lock design locksim judges,
// each real go-redis code issuing exactly its source's commands, behind one
// contract that says what the lock *believes* (whether it holds, until when
// on its own clock, and its fencing token), so checkers can judge
// "two clients believe they hold it at once".
package locks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/clock"
)

// ErrNotAcquired means the lock is held by someone else (or a quorum could
// not be reached) after the lock's own retries. It is a clean failure: the
// caller does not hold the lock.
var ErrNotAcquired = errors.New("lock not acquired")

// Topology is what a lock needs from the world.
type Topology string

const (
	Single      Topology = "single"      // one node (or the primary of a replicated set)
	Independent Topology = "independent" // N independent nodes (Redlock)
	Replicated  Topology = "replicated"  // a primary with async replicas and Sentinel
)

// Env is what the world hands a lock instance: go-redis clients for the
// nodes, the client's own clock and random stream, its name and the key.
type Env struct {
	// Nodes are clients for independent nodes, in node order.
	Nodes []*redis.Client
	// Primary is the client for a single node or for the primary of a
	// replicated topology (it follows failovers).
	Primary *redis.Client
	// Clock is the process's own clock: all time the lock reads or waits.
	Clock clock.Clock
	// Rand is the process's own random stream (values, retry jitter).
	Rand *rand.Rand
	// Client is the process's name; Key the lock's key.
	Client string
	Key    string
}

// Lease is what a lock believes after a successful Acquire.
type Lease struct {
	// Value is the random value (or token) the lock wrote.
	Value string
	// ValidUntil is the local time until which the holder believes it holds
	// the lock. Zero means the lock gives no validity signal and the holder
	// believes it until it releases.
	ValidUntil time.Time
	// OnGoClock is true when ValidUntil was read from Go's time (libraries
	// that call time.Now: in the simulator that is true time), false when
	// from Env.Clock.
	OnGoClock bool
	// Token is the fencing token, 0 when the lock has none.
	Token int64
	// Start is the local time the acquisition began.
	Start time.Time

	state any // the implementation's own handle
}

// Lock is one client's instance of a lock design.
type Lock interface {
	// Acquire takes the lock, with the design's own retries. It returns
	// ErrNotAcquired when the lock is taken, another error when the outcome
	// is unknown (a timeout may have taken it).
	Acquire(ctx context.Context) (Lease, error)
	// Release gives the lock up.
	Release(ctx context.Context, l Lease) error
}

// Info describes a design in the catalogue.
type Info struct {
	ID       string
	Design   string
	Source   string
	Weakness string
	Topology Topology
	// TTL is the lease the design's source uses.
	TTL time.Duration
	New func(Env) (Lock, error)
}

var registry = map[string]Info{}

// Register adds a design to the catalogue.
func Register(i Info) {
	if _, dup := registry[i.ID]; dup {
		panic("locks: duplicate id " + i.ID)
	}
	registry[i.ID] = i
}

// Get returns the design with the given id.
func Get(id string) (Info, error) {
	i, ok := registry[id]
	if !ok {
		return Info{}, fmt.Errorf("unknown lock %q (known: %v)", id, IDs())
	}
	return i, nil
}

// IDs lists the catalogue's ids, sorted.
func IDs() []string {
	ids := make([]string, 0, len(registry))
	for id := range registry {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// randomValue draws a 20-byte hex value from r, as the seeds' UUIDs do.
func randomValue(r *rand.Rand) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 20)
	for i := range b {
		b[i] = hex[r.IntN(16)]
	}
	return string(b)
}
