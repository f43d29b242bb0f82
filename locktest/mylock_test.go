package locktest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// myLock is how a user's own lock looks: plain go-redis code. It takes the
// lock with SET NX PX and a random value, and releases it with a plain DEL
// when ownerCheck is false (a classic mistake: it can delete the next
// holder's key) or with a compare-and-delete script when true. With
// fencing, it also draws a token from INCR on the same node.
type myLock struct {
	rdb        *redis.Client
	key        string
	ttl        time.Duration
	env        locks.Env
	ownerCheck bool
	fencing    bool
}

var cad = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`)

func newMyLock(ownerCheck, fencing bool) func(env locks.Env) (locks.Lock, error) {
	return func(env locks.Env) (locks.Lock, error) {
		return &myLock{rdb: env.Primary, key: env.Key, ttl: env.TTL, env: env, ownerCheck: ownerCheck, fencing: fencing}, nil
	}
}

func (l *myLock) Acquire(ctx context.Context) (locks.Lease, error) {
	value := fmt.Sprintf("%s-%016x", l.env.Client, l.env.Rand.Uint64())
	for try := 0; try < 3; try++ {
		if try > 0 {
			l.env.Clock.Sleep(200 * time.Millisecond)
		}
		start := l.env.Clock.Now()
		ok, err := l.rdb.SetNX(ctx, l.key, value, l.ttl).Result()
		if err != nil {
			return locks.Lease{}, err
		}
		if !ok {
			continue
		}
		lease := locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.ttl)}
		if l.fencing {
			tok, err := l.rdb.Incr(ctx, l.key+":token").Result()
			if err != nil {
				return locks.Lease{}, err
			}
			lease.FencingToken = tok
		}
		return lease, nil
	}
	return locks.Lease{}, locks.ErrNotAcquired
}

func (l *myLock) Release(ctx context.Context, lease locks.Lease) error {
	if !l.ownerCheck {
		return l.rdb.Del(ctx, l.key).Err()
	}
	n, err := cad.Run(ctx, l.rdb, []string{l.key}, lease.Value).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return locks.ErrNotOwner
	}
	return nil
}

var _ = errors.New
