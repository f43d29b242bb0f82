package catalogue

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:        "redsync",
		Design:    "github.com/go-redsync/redsync/v4 v4.18.0, unmodified: Redlock over N nodes with a goroutine per node",
		Source:    "library (Redlock)",
		Weakness:  "as Redlock (a failed round's delayed release can delete the next round's keys: its retries share one value); validity is read from time.Now (monotonic), so process pauses after the check still break it",
		Topology:  locks.Independent,
		Params:    redsyncParams,
		Configure: redsyncConfigure,
	})
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

// redsyncExpiry is the catalogue's redsync lease.
const redsyncExpiry = 8 * time.Second

type redsyncLock struct {
	env    locks.Env
	rs     *redsync.Redsync
	expiry time.Duration
	points *libPoints
}

// redsync's table: its expiry (its retry delays scale with it).
var redsyncParams, redsyncConfigure = leaseOnly(redsyncExpiry, NewRedsync)

// NewRedsync is the catalogue's redsync with another expiry (the real-Redis
// arm plays scenarios with a shorter lease); its retry delays scale with
// the expiry. The catalogue's is NewRedsync(env, 8 s).
func NewRedsync(env locks.Env, expiry time.Duration) (locks.Lock, error) {
	pools := make([]rsredis.Pool, len(env.Nodes))
	for i, c := range env.Nodes {
		pools[i] = grownPool{rsgoredis.NewPool(c)}
	}
	return &redsyncLock{env: env, rs: redsync.New(pools...), expiry: expiry, points: hookLibPoints(env, env.Nodes...)}, nil
}

func (l *redsyncLock) Acquire(ctx context.Context) (locks.Lease, error) {
	r := l.env.Rand
	expiry, scale := l.expiry, 1.0
	if expiry != redsyncExpiry {
		scale = float64(expiry) / float64(redsyncExpiry)
	}
	m := l.rs.NewMutex(l.env.Key,
		redsync.WithExpiry(expiry),
		redsync.WithTries(4),
		// Deterministic hooks (FACTS.md): values and retry delays come from
		// the client's own stream instead of crypto/rand and math/rand.
		redsync.WithGenValueFunc(func() (string, error) { return randomValue(r), nil }),
		redsync.WithRetryDelayFunc(func(int) time.Duration {
			d := 50*time.Millisecond + time.Duration(r.Int64N(int64(200*time.Millisecond)))
			if scale != 1 {
				d = time.Duration(float64(d) * scale)
			}
			return d
		}),
	)
	start := time.Now()
	l.points.arm()
	err := m.LockContext(ctx)
	l.points.disarm()
	if err != nil {
		var taken *redsync.ErrTaken
		if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
			return locks.Lease{}, locks.ErrNotAcquired
		}
		return locks.Lease{}, err
	}
	l.env.At(locks.PointAfterCheck)
	return locks.Lease{Value: m.Value(), Start: start, ValidUntil: m.Until(), OnGoClock: true, Handle: m}, nil
}

func (l *redsyncLock) Release(ctx context.Context, lease locks.Lease) error {
	m := lease.Handle.(*redsync.Mutex)
	ok, err := m.UnlockContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return locks.ErrNotOwner
	}
	return nil
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
