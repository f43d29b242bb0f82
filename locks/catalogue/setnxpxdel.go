package catalogue

import (
	"context"
	"time"

	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:       "set-nx-del",
		Design:   "SET key value EX 10 NX in one command; release by a plain DEL key with no owner check",
		Source:   "“Redis and ZooKeeper locks” (CSDN) v2 (set key value ex nx time, 10 s), “Practice: a Redis lock” (Tencent Cloud)'s unlock (delete(key))",
		Weakness: "a holder whose key expired while it still works deletes the next holder's key with its plain DEL, letting a third client in while the second still holds it",
		Topology: locks.Single,
		Params:   []locks.Param{ttlParam(10 * time.Second)},
		Configure: func(v locks.Values) (locks.Configured, error) {
			ttl := v.Duration("ttl")
			return locks.Configured{TTL: ttl, New: func(env locks.Env) (locks.Lock, error) { return &SetNXPXDel{Env: env, TTL: ttl}, nil }}, nil
		},
	})
}

// SetNXPXDel is “Redis and ZooKeeper locks” (CSDN) v2's atomic form, "set key value ex nx time" with
// "比如10秒", released as “Practice: a Redis lock” (Tencent Cloud)'s unlock does, redisTemplate.delete(key):
// SET key value EX 10 NX to acquire (go-redis sends EX for whole seconds;
// it tries once: neither seed retries here), DEL key to release. The holder
// believes it holds until Start+TTL on its own clock.
//
// Weakness (“Redis and ZooKeeper locks” (CSDN): "请求1(需要15秒): 创建key1,10秒的时候key1过期, 请求2(需要8秒)进来,
// 重新创建key2,执行了5秒后,请求1删除key2, 请求3 … 进来了"): the DEL does not
// check the owner, so a holder whose key expired deletes the next holder's.
type SetNXPXDel struct {
	Env locks.Env
	TTL time.Duration
}

// Acquire implements Lock: one SET key value EX ttl NX.
func (l *SetNXPXDel) Acquire(ctx context.Context) (locks.Lease, error) {
	value := l.Env.Client // the seed's value is not unique (version three adds the UUID)
	start := l.Env.Clock.Now()
	ok, err := l.Env.Primary.SetNX(ctx, l.Env.Key, value, l.TTL).Result()
	l.Env.At(locks.PointAcquiring)
	if err != nil {
		return locks.Lease{}, err
	}
	if !ok {
		return locks.Lease{}, locks.ErrNotAcquired
	}
	l.Env.At(locks.PointAfterCheck)
	return locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.TTL)}, nil
}

// Release implements Lock: a plain DEL key (0 deleted: ErrNotOwner).
func (l *SetNXPXDel) Release(ctx context.Context, _ locks.Lease) error {
	return plainDel(ctx, l.Env)
}
