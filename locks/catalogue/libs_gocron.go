//go:build !locksim_noredsync

package catalogue

import (
	"context"
	"errors"
	"fmt"
	"time"

	gocronlock "github.com/go-co-op/gocron-redis-lock/v2"
	"github.com/go-co-op/gocron/v2"

	"github.com/locksim/locksim/locks"
)

const gocronTTL = 8 * time.Second // redsync's default expiry, which gocron keeps

func init() {
	Register(locks.Info{
		ID:        "gocron",
		Design:    "github.com/go-co-op/gocron-redis-lock/v2 v2.1.0, unmodified: gocron's distributed Locker as its README configures it (redsync on one node, one try, 8 s expiry, no auto-extend)",
		Source:    "library (single node)",
		Weakness:  "no validity signal (gocron.Lock hides redsync's Until); every failure, timeouts included, is the same ErrFailedToObtainLock; the opt-in auto-extend stops silently on its first failure while the job keeps running; one node is a single point of failure",
		Topology:  locks.Single,
		Params:    gocronParams,
		Configure: gocronConfigure,
	})
}

type gocronLock struct {
	env    locks.Env
	locker gocron.Locker
	value  string // the value redsync drew for the last Lock call
	expiry time.Duration
	points *libPoints
}

// gocron's table: its expiry (its retry delays scale with it).
var gocronParams, gocronConfigure = leaseOnly(gocronTTL, NewGocron)

// NewGocron is the catalogue's gocron lock with another expiry (the
// real-Redis arm's shorter lease; its retry delays scale alike). The
// catalogue's is NewGocron(env, 8 s).
func NewGocron(env locks.Env, expiry time.Duration) (locks.Lock, error) {
	scale := float64(expiry) / float64(gocronTTL)
	l := &gocronLock{env: env, expiry: expiry}
	// Deterministic hooks (FACTS.md): redsync draws values from crypto/rand
	// and retry delays from math/rand unless told otherwise; gocron passes
	// redsync options through.
	locker, err := gocronlock.NewRedisLockerAlways(env.Primary,
		gocronlock.WithExpiry(expiry),
		gocronlock.WithTries(1),
		gocronlock.WithGenValueFunc(func() (string, error) {
			l.value = randomValue(env.Rand)
			return l.value, nil
		}),
		gocronlock.WithRetryDelayFunc(func(int) time.Duration {
			d := 50*time.Millisecond + time.Duration(env.Rand.Int64N(int64(200*time.Millisecond)))
			if scale != 1 {
				d = time.Duration(float64(d) * scale)
			}
			return d
		}),
	)
	// NewRedisLockerAlways returns a usable locker together with the result
	// of its PING; a failed PING only means the node is unreachable now.
	_ = err
	l.locker = locker
	// After NewRedisLockerAlways: its PING is not an acquisition.
	l.points = hookLibPoints(env, env.Primary)
	return l, nil
}

func (l *gocronLock) Acquire(ctx context.Context) (locks.Lease, error) {
	l.value = ""
	start := time.Now()
	l.points.arm()
	lk, err := l.locker.Lock(ctx, l.env.Key)
	l.points.disarm()
	if err != nil {
		if errors.Is(err, gocronlock.ErrFailedToObtainLock) {
			// gocron folds "taken" and "timed out" into one error; either
			// way the caller does not believe it holds the lock.
			return locks.Lease{}, fmt.Errorf("%w: %v", locks.ErrNotAcquired, err)
		}
		return locks.Lease{}, err
	}
	l.env.At(locks.PointAfterCheck)
	// gocron gives no validity signal: the honest belief is start+TTL.
	return locks.Lease{Value: l.value, Start: start, ValidUntil: start.Add(l.expiry), OnGoClock: true, Handle: lk}, nil
}

func (l *gocronLock) Release(ctx context.Context, lease locks.Lease) error {
	lk := lease.Handle.(gocron.Lock)
	// gocron folds "no longer ours" and "no reply" into one error, so a
	// failed release stays an unknown outcome rather than ErrNotOwner.
	return lk.Unlock(ctx)
}
