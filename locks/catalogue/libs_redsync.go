//go:build !locksim_noredsync

// redsync v4.18.0 (and gocron, which links it) are left out under
// -tags locksim_noredsync: a module that pins an older redsync
// (knownbugs/go/) builds the catalogue without them, since their adapters
// call v4.18.0 APIs the old versions lack. libs_noredsync.go registers
// their ids as unavailable then.

package catalogue

import (
	"context"
	"errors"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"

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
