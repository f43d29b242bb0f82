package catalogue

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// fencedAcquire takes the lock and a fencing token in one step: SET NX PX,
// and on success INCR of a counter on the same primary (Redisson
// RFencedLock does both in one script).
const fencedAcquire = `if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) else return 0 end`

var fencedScript = redis.NewScript(fencedAcquire)

func init() {
	Register(locks.Info{
		ID:        "fencing",
		Design:    "SET NX PX + a strictly increasing token (INCR on the lock's primary, in one script); the storage rejects a token lower than the highest it has seen (Kleppmann's rule: an equal token is accepted), on reads and writes",
		Source:    "Kleppmann, \"How to do distributed locking\"; Redisson RFencedLock",
		Weakness:  "the lease can still be outlived (overlaps happen) but the storage fences stale writes; the counter lives on one Redis primary and can repeat after a failover or a restart from an old snapshot, and the storage lets a repeated token through (S14)",
		Topology:  locks.Single,
		Fencing:   locks.FenceMaxToken,
		Params:    cadParams(3*time.Second, false),
		Configure: configureCAD(false, newFenced),
	})
	Register(locks.Info{
		ID:        "fencing-strict",
		Design:    "fencing, against a stricter storage that also rejects an equal token from another owner (a repeated token), on reads and writes",
		Source:    "Kleppmann, \"How to do distributed locking\" (the token check), made strict against S14's repeated tokens",
		Weakness:  "a token that goes back or repeats costs refused operations (availability), not safety; the lease can still be outlived",
		Topology:  locks.Single,
		Fencing:   locks.FenceMaxTokenStrict,
		Params:    cadParams(3*time.Second, false),
		Configure: configureCAD(false, newFenced),
	})
	Register(locks.Info{
		ID:        "token-cas",
		Design:    "set-nx-cad, and the storage compare-and-sets on the holder's random value (a write succeeds only if the object's owner is still the one the holder read)",
		Source:    "antirez, \"Is Redlock safe?\"",
		Weakness:  "the lease can be outlived (overlaps happen); the resource must support compare-and-set on the owner",
		Topology:  locks.Single,
		Fencing:   locks.FenceOwnerCAS,
		Params:    cadParams(3*time.Second, true),
		Configure: configureCAD(true, func(c SetNXCAD) locks.Lock { return &c }),
	})
	Register(locks.Info{
		ID:       "version-cas",
		Design:   "no lock: read the object's version, write only if it is unchanged, retry on conflict",
		Source:   "“Practice: a Redis lock” (Tencent Cloud) (optimistic locking)",
		Weakness: "none for a single object the storage can version; contention costs retries, and it does not extend to effects outside the storage",
		Topology: locks.Single,
		Fencing:  locks.FenceVersion,
		New:      func(env locks.Env) (locks.Lock, error) { return noLock{}, nil },
	})
	Register(locks.Info{
		ID:        "primary-replica",
		Design:    "set-nx-cad against the primary of a primary + 2 async replicas, with Sentinel failover; optionally WAIT for replicas after acquiring",
		Source:    "“The SETNX command”, “Redis and ZooKeeper locks” (CSDN) (master-replica Redis with Sentinel)",
		Weakness:  "a failover promotes a replica the lock key has not reached yet: a second client acquires while the first still holds",
		Topology:  locks.Replicated,
		Params:    cadParams(3*time.Second, true),
		Configure: configureCAD(true, func(c SetNXCAD) locks.Lock { return &c }),
	})
}

// newFenced is fencing's and fencing-strict's lock (their storages differ).
func newFenced(c SetNXCAD) locks.Lock { return &Fenced{SetNXCAD: c} }

// Fenced is set-nx-cad that also draws a fencing token from a counter on
// the same primary, atomically with the SET (Kleppmann's fencing token,
// Redisson RFencedLock's layout: the counter key is "<key>:token").
type Fenced struct {
	SetNXCAD
}

// Acquire implements Lock.
func (l *Fenced) Acquire(ctx context.Context) (locks.Lease, error) {
	env := l.Env
	value := randomValue(env.Rand)
	var lastErr error
	for try := 0; try < max(1, l.Tries); try++ {
		if try > 0 {
			env.Clock.Sleep(l.RetryDelay)
		}
		start := env.Clock.Now()
		tok, err := fencedScript.Run(ctx, env.Primary, []string{env.Key, env.Key + ":token"}, value, l.TTL.Milliseconds()).Int64()
		env.At(locks.PointAcquiring)
		if err != nil {
			lastErr = err
			continue
		}
		if tok > 0 {
			env.At(locks.PointAfterCheck)
			return locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.TTL), FencingToken: tok}, nil
		}
		lastErr = nil
	}
	if lastErr != nil {
		return locks.Lease{}, lastErr
	}
	return locks.Lease{}, locks.ErrNotAcquired
}

// noLock is version-cas's lock: there is none. Its leases say so, and the
// workload runs the optimistic read-check-write loop instead.
type noLock struct{}

func (noLock) Acquire(context.Context) (locks.Lease, error) { return locks.Lease{NoMutex: true}, nil }
func (noLock) Release(context.Context, locks.Lease) error   { return nil }
