package catalogue

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:       "setnx-del",
		Design:   "SETNX key value, DEL key when done; no expiry at all",
		Source:   "“Redis and ZooKeeper locks” (CSDN) v1",
		Weakness: "a holder that crashes (or is cut off) before its DEL never releases: the key stays forever and every other client is locked out (deadlock)",
		Topology: locks.Single,
		TTL:      0, // no expiry
		New: func(env locks.Env) (locks.Lock, error) {
			return &SetNXDel{Env: env}, nil
		},
	})
}

// SetNXDel is “Redis and ZooKeeper locks” (CSDN)'s first version: "用Redis的 setnx key value 命令,存在则返回0,
// 不存在则添加key,返回1;相当于加锁 … 方法执行完 finally {del key}". It sends
// SETNX key value to take the lock (once: the seed does not retry) and DEL key
// to release it. The key has no expiry, so the holder believes it holds the
// lock until it releases (Lease.ValidUntil is zero).
//
// Weakness (“Redis and ZooKeeper locks” (CSDN): "如果方法中服务宕机,没有 del key, key永远存在,导致死锁"): a
// holder that dies before its DEL leaves the key forever and no one else can
// ever acquire the lock.
type SetNXDel struct {
	Env locks.Env
}

// setNX sends the literal SETNX command (go-redis's SetNX sends SET … NX) and
// reports whether the key was set.
func setNX(ctx context.Context, c *redis.Client, key, value string) (bool, error) {
	cmd := redis.NewBoolCmd(ctx, "setnx", key, value)
	_ = c.Process(ctx, cmd)
	return cmd.Result()
}

// Acquire implements Lock: one SETNX.
func (l *SetNXDel) Acquire(ctx context.Context) (locks.Lease, error) {
	// The seed's value is unspecified and not unique (version three adds the
	// UUID); the client's name is enough to read traces.
	value := l.Env.Client
	start := l.Env.Clock.Now()
	ok, err := setNX(ctx, l.Env.Primary, l.Env.Key, value)
	l.Env.At(locks.PointAcquiring)
	if err != nil {
		return locks.Lease{}, err
	}
	if !ok {
		return locks.Lease{}, locks.ErrNotAcquired
	}
	l.Env.At(locks.PointAfterCheck)
	return locks.Lease{Value: value, Start: start}, nil
}

// Release implements Lock: DEL key. A reply of 0 means the key was already
// gone, so the client did not hold the lock any more.
func (l *SetNXDel) Release(ctx context.Context, _ locks.Lease) error {
	return plainDel(ctx, l.Env)
}

// plainDel deletes the key without any owner check; a reply of 0 (no key)
// is ErrNotOwner. A reply of 1 may have deleted another client's lock: the
// design cannot tell.
func plainDel(ctx context.Context, env locks.Env) error {
	n, err := env.Primary.Del(ctx, env.Key).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return locks.ErrNotOwner
	}
	return nil
}
