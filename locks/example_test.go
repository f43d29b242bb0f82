package locks_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksim/locksim/locks"
)

// fixedClock is a clock that stands still (the world hands a lock its
// client's clock in Env.Clock).
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time        { return c.t }
func (c fixedClock) Sleep(d time.Duration) {}

// tableLock is a toy design over a shared table instead of Redis: what the
// contract asks of any lock, in a few lines. A real design issues Redis
// commands through env.Primary or env.Nodes.
type tableLock struct {
	env   locks.Env
	table map[string]string // key -> holder's value
	n     int
}

func (l *tableLock) Acquire(ctx context.Context) (locks.Lease, error) {
	l.env.At(locks.PointAcquiring)
	start := l.env.Clock.Now()
	if _, taken := l.table[l.env.Key]; taken {
		return locks.Lease{}, locks.ErrNotAcquired
	}
	l.n++
	value := fmt.Sprintf("%s-%d", l.env.Client, l.n) // a new value for every hold
	l.table[l.env.Key] = value
	l.env.At(locks.PointAfterCheck)
	return locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.env.TTL)}, nil
}

func (l *tableLock) Release(ctx context.Context, lease locks.Lease) error {
	if l.table[l.env.Key] != lease.Value {
		return locks.ErrNotOwner // the key is gone or another holder's
	}
	delete(l.table, l.env.Key)
	return nil
}

// A lock is built once per client per run from an Env (its clients, clock,
// key, TTL and the hooks that let the world pause it at a point), and every
// acquisition reuses it: draw a new value per hold in Acquire, not in the
// factory. Release never follows a failed Acquire.
func Example() {
	table := map[string]string{}
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	var points []locks.PausePoint
	env := func(client string) locks.Env {
		return locks.Env{Client: client, Key: "lock", TTL: 3 * time.Second, Clock: fixedClock{now},
			Hooks: locks.Hooks{At: func(pt locks.PausePoint) { points = append(points, pt) }}}
	}
	var a, b locks.Lock = &tableLock{env: env("c0"), table: table}, &tableLock{env: env("c1"), table: table}
	ctx := context.Background()
	lease, err := a.Acquire(ctx)
	fmt.Println(lease.Value, lease.ValidUntil.Sub(lease.Start), err)
	_, err = b.Acquire(ctx)
	fmt.Println(errors.Is(err, locks.ErrNotAcquired))
	fmt.Println(a.Release(ctx, lease), a.Release(ctx, lease))
	fmt.Println(points)
	// Output:
	// c0-1 3s <nil>
	// true
	// <nil> lock no longer held by this client
	// [acquiring after-check acquiring]
}
