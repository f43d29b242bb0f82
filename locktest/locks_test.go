package locktest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// Locks of a user's own, broken in ways that only show at the lease
// boundary or under big faults; each takes its lease from env.TTL.

// watchdogLock is SET NX PX with a compare-and-delete release and a
// watchdog that renews the key every TTL/3 with a compare-and-PEXPIRE.
// With ignoreFailed, the watchdog believes a renewal that failed (the key
// was gone or another client's) and keeps renewing: the holder's belief
// outlives its key.
type watchdogLock struct {
	env          locks.Env
	ignoreFailed bool
	// stops holds each held lease's watchdog stop channel, by value: a
	// Release stops its watchdog (else it renews a key restored by a
	// restart forever: a deadlock).
	stops map[string]chan struct{}
}

var renew = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`)

func newWatchdogLock(ignoreFailed bool) func(env locks.Env) (locks.Lock, error) {
	return func(env locks.Env) (locks.Lock, error) {
		return &watchdogLock{env: env, ignoreFailed: ignoreFailed, stops: map[string]chan struct{}{}}, nil
	}
}

func (l *watchdogLock) Acquire(ctx context.Context) (locks.Lease, error) {
	value := fmt.Sprintf("%s-%016x", l.env.Client, l.env.Rand.Uint64())
	start := l.env.Clock.Now()
	ok, err := l.env.Primary.SetNX(ctx, l.env.Key, value, l.env.TTL).Result()
	if err != nil {
		return locks.Lease{}, err
	}
	if !ok {
		l.env.Clock.Sleep(l.env.TTL / 10)
		return locks.Lease{}, locks.ErrNotAcquired
	}
	l.env.At(locks.PointAfterCheck)
	stop := make(chan struct{})
	l.stops[value] = stop
	l.env.Go(func() {
		for {
			l.env.Clock.Sleep(l.env.TTL / 3)
			select {
			case <-stop:
				return
			default:
			}
			l.env.At(locks.PointRenewing)
			sent := l.env.Clock.Now()
			n, err := renew.Run(ctx, l.env.Primary, []string{l.env.Key}, value, l.env.TTL.Milliseconds()).Int64()
			select {
			case <-stop:
				return
			default:
			}
			if (err != nil || n == 0) && !l.ignoreFailed {
				return
			}
			l.env.Renewed(sent.Add(l.env.TTL))
		}
	})
	return locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.env.TTL)}, nil
}

func (l *watchdogLock) Release(ctx context.Context, lease locks.Lease) error {
	if stop, ok := l.stops[lease.Value]; ok {
		close(stop)
		delete(l.stops, lease.Value)
	}
	return releaseAll(ctx, []redis.UniversalClient{l.env.Primary}, l.env.Key, lease.Value)
}

// releaseAll compare-and-deletes value's key on every node.
func releaseAll(ctx context.Context, nodes []redis.UniversalClient, key, value string) error {
	var first error
	deleted := false
	for _, n := range nodes {
		k, err := cad.Run(ctx, n, []string{key}, value).Int64()
		if err != nil && first == nil {
			first = err
		}
		deleted = deleted || k == 1
	}
	if first != nil {
		return first
	}
	if !deleted {
		return locks.ErrNotOwner
	}
	return nil
}

// redlockLock is Redlock over env.Nodes: SET NX PX on every node in turn,
// held if a majority took it, valid for TTL − elapsed − drift (1% + 2 ms)
// from the start of the acquisition. With forgetElapsed it makes the
// classic mistake: validity counted from the end of the acquisition, so a
// slow acquisition (a delayed or lost reply) believes in keys that have
// already run out.
type redlockLock struct {
	env           locks.Env
	forgetElapsed bool
}

func newRedlockLock(forgetElapsed bool) func(env locks.Env) (locks.Lock, error) {
	return func(env locks.Env) (locks.Lock, error) {
		return &redlockLock{env: env, forgetElapsed: forgetElapsed}, nil
	}
}

func (l *redlockLock) Acquire(ctx context.Context) (locks.Lease, error) {
	value := fmt.Sprintf("%s-%016x", l.env.Client, l.env.Rand.Uint64())
	start := l.env.Clock.Now()
	n := 0
	for _, node := range l.env.Nodes {
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		ok, err := node.SetNX(c, l.env.Key, value, l.env.TTL).Result()
		cancel()
		if err == nil && ok {
			n++
		}
		l.env.At(locks.PointAcquiring)
	}
	end := l.env.Clock.Now()
	drift := l.env.TTL/100 + 2*time.Millisecond
	from := start
	if l.forgetElapsed {
		from = end
	}
	validUntil := from.Add(l.env.TTL - drift)
	if n <= len(l.env.Nodes)/2 || !end.Before(validUntil) {
		releaseAll(ctx, l.env.Nodes, l.env.Key, value)
		l.env.Clock.Sleep(time.Duration(l.env.Rand.Int64N(int64(l.env.TTL / 10))))
		return locks.Lease{}, locks.ErrNotAcquired
	}
	l.env.At(locks.PointAfterCheck)
	return locks.Lease{Value: value, Start: start, ValidUntil: validUntil}, nil
}

func (l *redlockLock) Release(ctx context.Context, lease locks.Lease) error {
	return releaseAll(ctx, l.env.Nodes, l.env.Key, lease.Value)
}

// getDelLock is SET NX PX released by GET, compare, then DEL: two
// commands, so the key can run out and be taken by another client between
// them, and the DEL removes the new holder's key.
type getDelLock struct{ env locks.Env }

func newGetDelLock(env locks.Env) (locks.Lock, error) { return &getDelLock{env: env}, nil }

func (l *getDelLock) Acquire(ctx context.Context) (locks.Lease, error) {
	value := fmt.Sprintf("%s-%016x", l.env.Client, l.env.Rand.Uint64())
	start := l.env.Clock.Now()
	ok, err := l.env.Primary.SetNX(ctx, l.env.Key, value, l.env.TTL).Result()
	if err != nil {
		return locks.Lease{}, err
	}
	if !ok {
		l.env.Clock.Sleep(10 * time.Millisecond) // spin, as many locks do
		return locks.Lease{}, locks.ErrNotAcquired
	}
	return locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.env.TTL)}, nil
}

func (l *getDelLock) Release(ctx context.Context, lease locks.Lease) error {
	v, err := l.env.Primary.Get(ctx, l.env.Key).Result()
	if err == redis.Nil || (err == nil && v != lease.Value) {
		return locks.ErrNotOwner
	}
	if err != nil {
		return err
	}
	return l.env.Primary.Del(ctx, l.env.Key).Err()
}
