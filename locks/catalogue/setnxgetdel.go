package catalogue

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:       "set-nx-getdel",
		Design:   "SET key uuid EX 3 NX, retried every 1 s until it succeeds; release by GET key, compare in the client, then DEL key (two commands)",
		Source:   "“A Lua script against releasing an expired lock” (the release it warns against, 三.4)",
		Weakness: "GET and DEL are two commands: the key can expire and be taken by another client between them, and the DEL then deletes the new holder's lock",
		Topology: locks.Single,
		Params:   []locks.Param{ttlParam(3 * time.Second), retryDelayParam(time.Second)},
		Configure: func(v locks.Values) (locks.Configured, error) {
			ttl, delay := v.Duration("ttl"), v.Duration("retry_delay")
			return locks.Configured{TTL: ttl, New: func(env locks.Env) (locks.Lock, error) {
				return &SetNXGetDel{Env: env, TTL: ttl, RetryDelay: delay}, nil
			}}, nil
		},
	})
}

// SetNXGetDel is “A Lua script against releasing an expired lock”'s lock with the release the seed warns about. It
// acquires as “A Lua script against releasing an expired lock”'s testLockLua does, setIfAbsent(lockKey, UUID, 3,
// SECONDS) — SET key value EX 3 NX — and when that fails sleeps 1 s
// (Thread.sleep(1000)) and tries again, without bound (the seed recurses
// until it gets the lock; Tries > 0 bounds it). A command error ends Acquire
// with that error (the seed does not catch it). The release is the
// non-atomic check the seed describes in 三.4 ("A客户端在释放锁时,UUID成功匹配了锁的
// value,下一步即是删除锁,但这时锁过期了,然后B客户端抢到了锁 … A客户端就会将B客户端的锁释放掉"):
// GET key, compare with the value in the client, then DEL key. The holder
// believes it holds until Start+TTL on its own clock.
//
// Weakness: between the GET and the DEL the key can expire and another
// client can take it; the DEL then deletes that client's lock.
type SetNXGetDel struct {
	Env        locks.Env
	TTL        time.Duration
	Tries      int // 0: retry until acquired (the seed)
	RetryDelay time.Duration
}

// Acquire implements Lock.
func (l *SetNXGetDel) Acquire(ctx context.Context) (locks.Lease, error) {
	value := randomValue(l.Env.Rand)
	for try := 0; l.Tries <= 0 || try < l.Tries; try++ {
		if try > 0 {
			l.Env.Clock.Sleep(l.RetryDelay)
		}
		start := l.Env.Clock.Now()
		ok, err := l.Env.Primary.SetNX(ctx, l.Env.Key, value, l.TTL).Result()
		l.Env.At(locks.PointAcquiring)
		if err != nil {
			return locks.Lease{}, err
		}
		if ok {
			l.Env.At(locks.PointAfterCheck)
			return locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.TTL)}, nil
		}
	}
	return locks.Lease{}, locks.ErrNotAcquired
}

// Release implements Lock: GET, compare, DEL.
func (l *SetNXGetDel) Release(ctx context.Context, lease locks.Lease) error {
	v, err := l.Env.Primary.Get(ctx, l.Env.Key).Result()
	if errors.Is(err, redis.Nil) {
		return locks.ErrNotOwner
	}
	if err != nil {
		return err
	}
	if v != lease.Value {
		return locks.ErrNotOwner
	}
	// Not atomic with the GET: the key may have expired and been taken since.
	return plainDel(ctx, l.Env)
}
