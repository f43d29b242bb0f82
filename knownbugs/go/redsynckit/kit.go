// Package redsynckit puts one version of github.com/go-redsync/redsync/v4
// behind locksim's lock contract, as a user runs it: Lock, a goroutine that
// calls Extend every third of the expiry while the holder works, Unlock.
// Each module under knownbugs/go/ pins one version and hands its Mutex
// here; the adapter is the same for every version, so a verdict that
// differs between two versions is the library's.
//
// It is locks/catalogue/libs_redsync.go's redsync adapter (the catalogue's
// v4.18.0, which never extends) with a renewal loop shaped like
// locks/catalogue/watchdog.go's.
package redsynckit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

// Mutex is the part of a redsync *Mutex the adapter calls: every v4
// version has these three methods.
type Mutex interface {
	LockContext(ctx context.Context) error
	UnlockContext(ctx context.Context) (bool, error)
	ExtendContext(ctx context.Context) (bool, error)
}

// Lib is one redsync version, as its module wires it.
type Lib struct {
	// New makes the mutex for one hold over env's nodes, with the given
	// expiry, the value function (WithGenValueFunc) and the retry delay
	// function (WithRetryDelayFunc): both draw from the client's own
	// random stream, so every run is deterministic.
	New func(env locks.Env, expiry time.Duration, value func() (string, error), delay func(int) time.Duration) Mutex
	// Until reads the mutex's validity (Mutex.Until), on Go's clock; nil
	// for a version without Mutex.Until: the holder then believes what
	// the library told it, the lock's start (or the extension's) plus the
	// expiry.
	Until func(Mutex) time.Time
	// NotAcquired reports whether LockContext's error means the lock is
	// taken (redsync.ErrFailed, or *redsync.ErrTaken where it exists),
	// not an outcome unknown.
	NotAcquired func(error) bool
}

// Factory is lib as a locktest factory: the expiry is env.TTL.
func Factory(lib Lib) locktest.Factory {
	return func(env locks.Env) (locks.Lock, error) {
		return &lock{lib: lib, env: env}, nil
	}
}

type lock struct {
	lib Lib
	env locks.Env
}

// hold is one acquisition's state: its mutex and the renewal loop's stop.
type hold struct {
	m       Mutex
	mu      sync.Mutex
	stopped bool
}

func (l *lock) Acquire(ctx context.Context) (locks.Lease, error) {
	r, expiry := l.env.Rand, l.env.TTL
	var value string
	m := l.lib.New(l.env, expiry,
		func() (string, error) {
			value = fmt.Sprintf("%s-%016x", l.env.Client, r.Uint64())
			return value, nil
		},
		func(int) time.Duration {
			return 50*time.Millisecond + time.Duration(r.Int64N(int64(200*time.Millisecond)))
		})
	start := time.Now()
	if err := m.LockContext(ctx); err != nil {
		if l.lib.NotAcquired(err) {
			return locks.Lease{}, fmt.Errorf("%w: %v", locks.ErrNotAcquired, err)
		}
		return locks.Lease{}, err
	}
	l.env.At(locks.PointAfterCheck)
	until := start.Add(expiry)
	if l.lib.Until != nil {
		until = l.lib.Until(m)
	}
	h := &hold{m: m}
	l.env.Go(func() { l.renew(ctx, h) })
	return locks.Lease{Value: value, Start: start, ValidUntil: until, OnGoClock: true, Handle: h}, nil
}

// renew calls Extend every third of the expiry until Release, and reports
// each outcome: a success as the belief the library gives (Until, or the
// extension's start plus the expiry), a failure (false or an error) as
// the end of the belief, after which it stops, as a user's loop does.
func (l *lock) renew(ctx context.Context, h *hold) {
	expiry := l.env.TTL
	for {
		l.env.Clock.Sleep(expiry / 3)
		if h.done() {
			return
		}
		l.env.At(locks.PointRenewing)
		if h.done() {
			return
		}
		start := time.Now()
		ok, err := h.m.ExtendContext(ctx)
		h.mu.Lock()
		if h.stopped {
			h.mu.Unlock()
			return
		}
		if !ok || err != nil {
			l.env.RenewFailed()
			h.mu.Unlock()
			return
		}
		until := start.Add(expiry)
		if l.lib.Until != nil {
			until = l.lib.Until(h.m)
		}
		// Renewed takes the client's clock; the library read Go's.
		l.env.Renewed(l.env.Clock.Now().Add(time.Until(until)))
		h.mu.Unlock()
	}
}

func (h *hold) done() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopped
}

func (l *lock) Release(ctx context.Context, lease locks.Lease) error {
	h := lease.Handle.(*hold)
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	ok, err := h.m.UnlockContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return locks.ErrNotOwner
	}
	return nil
}
