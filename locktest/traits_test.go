package locktest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

// countingLock is SET NX PX with a compare-and-delete release, reentrant
// (a hold count per instance) and with a read mode that takes the same
// exclusive key (a read-write lock whose readers never overlap: correct,
// if not concurrent). It counts nested acquisitions and read ones.
type countingLock struct {
	env           locks.Env
	depth         int
	held          locks.Lease
	nested, reads *atomic.Int64
}

func (l *countingLock) Acquire(ctx context.Context) (locks.Lease, error) {
	if l.depth > 0 {
		l.depth++
		l.nested.Add(1)
		return l.held, nil
	}
	value := fmt.Sprintf("%s-%016x", l.env.Client, l.env.Rand.Uint64())
	start := l.env.Clock.Now()
	ok, err := l.env.Primary.SetNX(ctx, l.env.Key, value, l.env.TTL).Result()
	if err != nil {
		return locks.Lease{}, err
	}
	if !ok {
		l.env.Clock.Sleep(50 * time.Millisecond)
		return locks.Lease{}, locks.ErrNotAcquired
	}
	l.depth, l.held = 1, locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.env.TTL)}
	return l.held, nil
}

func (l *countingLock) AcquireRead(ctx context.Context) (locks.Lease, error) {
	lease, err := l.Acquire(ctx)
	if err == nil {
		l.reads.Add(1)
		lease.Read = true
		l.held.Read = true
	}
	return lease, err
}

func (l *countingLock) Release(ctx context.Context, lease locks.Lease) error {
	if l.depth > 1 {
		l.depth--
		return nil
	}
	l.depth = 0
	return releaseAll(ctx, []redis.UniversalClient{l.env.Primary}, l.env.Key, lease.Value)
}

// Options.Reentrant nests acquisitions in the workload and
// Options.ReadWrite takes read sections; without them the workload does
// neither. Each run is safe.
func TestTraitsExercised(t *testing.T) {
	for _, c := range []struct {
		o                 locktest.Options
		nested, readsWant bool
	}{
		{locktest.Options{}, false, false},
		{locktest.Options{Reentrant: true}, true, false},
		{locktest.Options{ReadWrite: true}, false, true},
		{locktest.Options{Reentrant: true, ReadWrite: true, ReadFraction: 0.3}, true, true},
	} {
		var nested, reads atomic.Int64
		f := func(env locks.Env) (locks.Lock, error) {
			return &countingLock{env: env, nested: &nested, reads: &reads}, nil
		}
		out := locktest.Run(t, f, c.o, 1, nil)
		if out.Verdict() != checker.VerdictSafe {
			t.Errorf("%+v: verdict %s: %v", c.o, out.Verdict(), out.Check.Reasons)
		}
		if (nested.Load() > 0) != c.nested || (reads.Load() > 0) != c.readsWant {
			t.Errorf("Reentrant %v, ReadWrite %v: %d nested and %d read acquisitions", c.o.Reentrant, c.o.ReadWrite, nested.Load(), reads.Load())
		}
		t.Logf("Reentrant %v, ReadWrite %v (fraction %v): %d nested, %d read acquisitions", c.o.Reentrant, c.o.ReadWrite, out.Options.ReadFraction, nested.Load(), reads.Load())
	}
}

// Options.Fair says the lock promises fairness: the liveness check then
// holds it to it (checker.History.Fair).
func TestFairTrait(t *testing.T) {
	for _, fair := range []bool{false, true} {
		out := locktest.Run(t, newMyLock(true, false), locktest.Options{Fair: fair}, 1, nil)
		if out.Check.Liveness.FairnessRequired != fair {
			t.Errorf("Fair %v: fairness required %v", fair, out.Check.Liveness.FairnessRequired)
		}
	}
}
