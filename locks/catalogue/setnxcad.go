package catalogue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// CompareAndDelete is the release script of “The SETNX command”, “A Lua script against releasing an expired lock” and “Redis and ZooKeeper locks” (CSDN): delete
// the key only if it still holds our value.
const CompareAndDelete = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

var cadScript = redis.NewScript(CompareAndDelete)

func init() {
	Register(locks.Info{
		ID:       "set-nx-cad",
		Design:   "SET key value NX PX ttl with a random value; release by Lua compare-and-delete",
		Source:   "“The SETNX command”, “A Lua script against releasing an expired lock”, “Redis and ZooKeeper locks” (CSDN) v3",
		Weakness: "a holder paused past the TTL keeps acting while another client holds the key; one node is a single point of failure",
		Topology: locks.Single,
		// “A Lua script against releasing an expired lock”: a 3 s lock, retried after 1 s
		Params:    cadParams(3*time.Second, true),
		Configure: configureCAD(true, func(c SetNXCAD) locks.Lock { return &c }),
	})
}

// SetNXCAD is SET NX PX with a random value and a Lua compare-and-delete
// release (“The SETNX command”, “A Lua script against releasing an expired lock”, “Redis and ZooKeeper locks” (CSDN) v3; “A Lua script against releasing an expired lock”'s parameters: a 3 s lock,
// retried after 1 s). Its weakness: the holder believes it holds until
// start+TTL on its own clock; a pause, a fast node clock or a failover can
// hand the key to another client before then.
type SetNXCAD struct {
	Env        locks.Env
	TTL        time.Duration
	Tries      int
	RetryDelay time.Duration
	// WaitReplicas > 0 makes each successful SET wait (WAIT numreplicas
	// timeout) until that many replicas acknowledged it, within
	// WaitTimeout, as Redisson's failover guard does (checkLockSyncedSlaves:
	// WAIT after acquiring, 1 s timeout). Fewer acknowledgements: the key is
	// released again and the try counts as failed. It helps against a
	// failover only if an acknowledging replica is promoted.
	WaitReplicas int
	WaitTimeout  time.Duration
}

// Acquire implements Lock.
func (l *SetNXCAD) Acquire(ctx context.Context) (locks.Lease, error) {
	value := randomValue(l.Env.Rand)
	var lastErr error
	for try := 0; try < max(1, l.Tries); try++ {
		if try > 0 {
			l.Env.Clock.Sleep(l.RetryDelay)
		}
		start := l.Env.Clock.Now()
		ok, err := l.Env.Primary.SetNX(ctx, l.Env.Key, value, l.TTL).Result()
		l.Env.At(locks.PointAcquiring)
		if err != nil {
			lastErr = err
			continue
		}
		if ok && l.WaitReplicas > 0 {
			if err := l.waitReplicas(ctx, value); err != nil {
				lastErr = err
				continue
			}
		}
		if ok {
			l.Env.At(locks.PointAfterCheck)
			return locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.TTL)}, nil
		}
		lastErr = nil
	}
	if lastErr != nil {
		return locks.Lease{}, lastErr
	}
	return locks.Lease{}, locks.ErrNotAcquired
}

// waitReplicas runs WAIT after a successful SET; when fewer than
// WaitReplicas replicas acknowledged, it gives the key back (compare-and-
// delete) and returns why.
func (l *SetNXCAD) waitReplicas(ctx context.Context, value string) error {
	n, err := l.Env.Primary.Wait(ctx, l.WaitReplicas, l.WaitTimeout).Result()
	if err == nil && n >= int64(l.WaitReplicas) {
		return nil
	}
	_ = l.Release(ctx, locks.Lease{Value: value})
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: WAIT: %d of %d replicas acknowledged within %v", locks.ErrNotAcquired, n, l.WaitReplicas, l.WaitTimeout)
}

// Release implements Lock.
func (l *SetNXCAD) Release(ctx context.Context, lease locks.Lease) error {
	n, err := cadScript.Run(ctx, l.Env.Primary, []string{l.Env.Key}, lease.Value).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return locks.ErrNotOwner
	}
	return nil
}
