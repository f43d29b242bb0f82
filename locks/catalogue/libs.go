package catalogue

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:        "redislock",
		Design:    "github.com/bsm/redislock v0.10.0, unmodified: one node, Lua obtain and release",
		Source:    "library (single node)",
		Weakness:  "no validity signal: the holder cannot tell when its lease ran out; one node is a single point of failure",
		Topology:  locks.Single,
		Params:    redislockParams,
		Configure: redislockConfigure,
	})
}

type redislockLock struct {
	env    locks.Env
	c      *redislock.Client
	ttl    time.Duration
	points *libPoints
}

// redislock's table: its lease (its retry backoff and obtain deadline
// scale with it).
var redislockParams, redislockConfigure = leaseOnly(redislockTTL, NewRedislock)

// redislockTTL is the catalogue's redislock lease.
const redislockTTL = 3 * time.Second

// NewRedislock is the catalogue's redislock with another lease (the
// real-Redis arm's shorter one; its retry backoff and obtain deadline
// scale alike). The catalogue's is NewRedislock(env, 3 s).
func NewRedislock(env locks.Env, ttl time.Duration) (locks.Lock, error) {
	return &redislockLock{env: env, c: redislock.New(env.Primary), ttl: ttl, points: hookLibPoints(env, env.Primary)}, nil
}

func (l *redislockLock) Acquire(ctx context.Context) (locks.Lease, error) {
	token := randomValue(l.env.Rand)
	start := time.Now()
	// A caller deadline keeps redislock from adding its own; the retry
	// strategy is a fixed linear backoff (no global random source).
	deadline, backoff := 3*time.Second, 100*time.Millisecond
	if l.ttl != redislockTTL {
		scale := float64(l.ttl) / float64(redislockTTL)
		deadline, backoff = time.Duration(float64(deadline)*scale), time.Duration(float64(backoff)*scale)
	}
	cctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	l.points.arm()
	lk, err := l.c.Obtain(cctx, l.env.Key, l.ttl, &redislock.Options{
		Token:         token,
		RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(backoff), 10),
	})
	l.points.disarm()
	if err != nil {
		if errors.Is(err, redislock.ErrNotObtained) {
			return locks.Lease{}, locks.ErrNotAcquired
		}
		return locks.Lease{}, err
	}
	l.env.At(locks.PointAfterCheck)
	// redislock gives no validity signal: the honest belief is start+TTL.
	return locks.Lease{Value: token, Start: start, ValidUntil: start.Add(l.ttl), OnGoClock: true, Handle: lk}, nil
}

func (l *redislockLock) Release(ctx context.Context, lease locks.Lease) error {
	lk := lease.Handle.(*redislock.Lock)
	if err := lk.Release(ctx); err != nil {
		if errors.Is(err, redislock.ErrLockNotHeld) {
			return locks.ErrNotOwner
		}
		return err
	}
	return nil
}

type boolCmd = redis.BoolCmd
