// Package gozerokit puts one version of github.com/zeromicro/go-zero's
// core/stores/redis RedisLock (the v1.3.x API: Acquire, Release and
// SetExpire without a context, go-redis v8 underneath) behind locksim's
// lock contract, as a user runs it: NewRedisLock and SetExpire, Acquire,
// a goroutine that calls Acquire again every third of the expiry while the
// holder works (go-zero's way to refresh a lock it owns: at v1.3.2,
// redislock.go's lockCommand sets a new PX when the key still holds the
// lock's id), Release. Each module under knownbugs/go/ pins one version and
// runs its test through this package; the adapter is the same for every
// version, so a verdict that differs between two versions is the library's.
//
// It is locks/catalogue/libs_gozero.go's adapter (the catalogue's v1.10.3,
// which never refreshes) with a renewal loop shaped like
// knownbugs/go/redsynckit/kit.go's.
package gozerokit

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname

	redv8 "github.com/go-redis/redis/v8"
	"github.com/zeromicro/go-zero/core/logx"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/core/stringx"
	"github.com/zeromicro/go-zero/core/syncx"

	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

func init() {
	// go-zero logs acquire errors and slow calls through logx; they are not
	// part of the simulation.
	logx.Disable()
}

// clientManager is go-zero's cache of go-redis clients by address
// (core/stores/redis/redisclientmanager.go at v1.3.x: getClient builds a
// client from the address alone, with no way to pass a Dialer, and keeps it
// here). The adapter puts a client of its own under a fresh address before
// go-zero asks for it, so that go-zero's getClient finds it and every
// command reaches the simulated node. v1.3.x's manager has no delete, so
// each instance's client (and the world its dialer closes over) stays
// cached until the test binary exits: bounded by the runs of one measured
// test (LOCKSIM_KNOWNBUGS_RUNS searches of Checks runs). The declared type
// is go-zero's own (*syncx.ResourceManager at v1.3.1, v1.3.2 and v1.10.3):
// a pinned version that changed it would need this line changed.
//
//go:linkname clientManager github.com/zeromicro/go-zero/core/stores/redis.clientManager
var clientManager *syncx.ResourceManager

var (
	// addrs makes each instance's address unique: a client put under an
	// address serves that one world only.
	addrs atomic.Uint64
	// randMu serialises the draws from go-zero's process-wide stringx
	// source (seeded from the wall clock at init): NewRedisLock's id goes
	// into the commands, so it is drawn right after a Seed from the
	// client's own stream, as locks/catalogue/libs_gozero.go does.
	randMu sync.Mutex
)

// v8Client is a go-redis v8 client over env.Primary's connections: the
// simulator's Dialer, address and timeouts (sim/conn.go newRedisClient),
// and go-zero's own retry count (maxRetries 3 in redisclientmanager.go).
// No idle connections are kept warm and none is reaped (no goroutine
// outlives the world), and the pool has room for every goroutine a client
// runs at once (go-redis v8's wait for a pool turn takes a timer from a
// process-wide pool, which may belong to another synctest bubble).
func v8Client(env locks.Env) *redv8.Client {
	o := env.Primary.Options()
	return redv8.NewClient(&redv8.Options{
		Addr:               o.Addr,
		Dialer:             o.Dialer,
		MaxRetries:         3,
		MinRetryBackoff:    o.MinRetryBackoff,
		MaxRetryBackoff:    o.MaxRetryBackoff,
		DialTimeout:        o.DialTimeout,
		ReadTimeout:        o.ReadTimeout,
		WriteTimeout:       o.WriteTimeout,
		PoolSize:           8,
		PoolTimeout:        o.PoolTimeout,
		MinIdleConns:       0,
		IdleTimeout:        -1,
		IdleCheckFrequency: -1,
	})
}

// Factory is the pinned go-zero's RedisLock as a locktest factory. The
// expiry asked of SetExpire is env.TTL in whole seconds (at least 1), and
// the holder believes the lock for that long from each successful Acquire:
// what it asked for, not the tolerance either version adds to the key.
func Factory(env locks.Env) (locks.Lock, error) {
	addr := fmt.Sprintf("locksim-go-zero-%d", addrs.Add(1))
	client := v8Client(env)
	if _, err := clientManager.GetResource(addr, func() (io.Closer, error) { return client, nil }); err != nil {
		return nil, err
	}
	randMu.Lock() // New draws the breaker's name
	store := zredis.New(addr)
	randMu.Unlock()
	return &lock{env: env, store: store, seconds: max(int(env.TTL/time.Second), 1)}, nil
}

var _ locktest.Factory = Factory

type lock struct {
	env     locks.Env
	store   *zredis.Redis
	seconds int
}

// hold is one acquisition's state: its RedisLock and the renewal loop's
// stop.
type hold struct {
	rl      *zredis.RedisLock
	mu      sync.Mutex
	stopped bool
}

// newLock makes a RedisLock (one per acquisition) and returns the random id
// it writes: NewRedisLock draws exactly stringx.Randn(16) from the seeded
// source, so the same draw after the same seed is its id.
func (l *lock) newLock() (*zredis.RedisLock, string) {
	randMu.Lock()
	defer randMu.Unlock()
	seed := l.env.Rand.Int64()
	stringx.Seed(seed)
	id := stringx.Randn(16)
	stringx.Seed(seed)
	rl := zredis.NewRedisLock(l.store, l.env.Key)
	rl.SetExpire(l.seconds)
	return rl, id
}

func (l *lock) Acquire(context.Context) (locks.Lease, error) {
	rl, id := l.newLock()
	start := time.Now()
	ok, err := rl.Acquire()
	if err != nil {
		return locks.Lease{}, err
	}
	if !ok {
		return locks.Lease{}, locks.ErrNotAcquired
	}
	l.env.At(locks.PointAfterCheck)
	h := &hold{rl: rl}
	l.env.Go(func() { l.renew(h) })
	expiry := time.Duration(l.seconds) * time.Second
	return locks.Lease{Value: id, Start: start, ValidUntil: start.Add(expiry), OnGoClock: true, Handle: h}, nil
}

// renew calls Acquire every third of the expiry until Release, and reports
// each outcome: true as the belief Acquire gives (the call's start plus the
// expiry), false or an error as the end of the belief, after which it
// stops, as a user's loop does.
func (l *lock) renew(h *hold) {
	expiry := time.Duration(l.seconds) * time.Second
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
		ok, err := h.rl.Acquire()
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
		// Renewed takes the client's clock; start is Go's.
		l.env.Renewed(l.env.Clock.Now().Add(time.Until(start.Add(expiry))))
		h.mu.Unlock()
	}
}

func (h *hold) done() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopped
}

func (l *lock) Release(_ context.Context, lease locks.Lease) error {
	h := lease.Handle.(*hold)
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	ok, err := h.rl.Release()
	if err != nil {
		return err
	}
	if !ok {
		return locks.ErrNotOwner
	}
	return nil
}
