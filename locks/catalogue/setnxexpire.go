package catalogue

import (
	"context"
	"time"

	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:       "setnx-expire",
		Design:   "SETNX key value, then EXPIRE key 10 as a second command (not atomic); DEL key when done",
		Source:   "“Redis and ZooKeeper locks” (CSDN) v2",
		Weakness: "SETNX and EXPIRE are two commands: a holder that dies (or whose EXPIRE fails) between them leaves a key that never expires, and no one acquires again (deadlock); the plain DEL can also delete another client's lock after the holder's expired",
		Topology: locks.Single,
		Params:   []locks.Param{ttlParam(10 * time.Second)},
		Configure: func(v locks.Values) (locks.Configured, error) {
			ttl := v.Duration("ttl")
			return locks.Configured{TTL: ttl, New: func(env locks.Env) (locks.Lock, error) { return &SetNXExpire{Env: env, TTL: ttl}, nil }}, nil
		},
	})
}

// SetNXExpire is “Redis and ZooKeeper locks” (CSDN)'s second version before it merges the two commands
// into SET … EX … NX: "先setnx key value 命令创建锁 再用Redis中的expire key 10
// 设置过期时间,但是这俩加起来就不是原子操作". It sends SETNX key value, then, if
// that set the key, EXPIRE key 10 (TTL), and releases with DEL key ("方法执行完
// finally {del key}"). It tries once (the seed does not retry). The holder
// believes it holds until Start+TTL on its own clock.
//
// Weakness: the two commands are not atomic. A holder that dies after SETNX
// and before EXPIRE leaves a key with no expiry: no one ever acquires again.
// If EXPIRE fails with a network error, Acquire returns that error (the
// outcome is unknown: the key may have no expiry) and does not delete the key
// (the seed's finally-DEL wraps the critical section, not the lock call).
type SetNXExpire struct {
	Env locks.Env
	TTL time.Duration
}

// Acquire implements Lock: SETNX, then EXPIRE.
func (l *SetNXExpire) Acquire(ctx context.Context) (locks.Lease, error) {
	value := l.Env.Client // the seed's value is unspecified and not unique
	start := l.Env.Clock.Now()
	ok, err := setNX(ctx, l.Env.Primary, l.Env.Key, value)
	l.Env.At(locks.PointAcquiring) // between SETNX and EXPIRE: the gap of the weakness
	if err != nil {
		return locks.Lease{}, err
	}
	if !ok {
		return locks.Lease{}, locks.ErrNotAcquired
	}
	if err := l.Env.Primary.Expire(ctx, l.Env.Key, l.TTL).Err(); err != nil {
		return locks.Lease{}, err
	}
	l.Env.At(locks.PointAfterCheck)
	return locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.TTL)}, nil
}

// Release implements Lock: a plain DEL key.
func (l *SetNXExpire) Release(ctx context.Context, _ locks.Lease) error {
	return plainDel(ctx, l.Env)
}
