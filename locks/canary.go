package locks

import (
	"context"
	"time"
)

// Canaries: locks broken on purpose, each a correct design of the catalogue
// with one known bug put back in. They prove that the harness can fail:
// scenarios/canary_test.go runs each under random faults and demands that
// the checkers catch it. They are registered (Get finds them, scenarios
// build them) but marked Info.Canary: IDs and 'locksim list locks' leave
// them out; 'locksim list locks --canaries' shows them.
//
//	canary-no-owner-release    set-nx-cad whose release is a plain DEL
//	canary-redlock-half        Redlock with quorum N/2 instead of N/2+1
//	canary-redlock-no-elapsed  Redlock whose validity is TTL − drift, counted
//	                           from the end of the acquisition round
//	canary-equal-tokens        fencing whose storage accepts a repeated token
//	canary-renew-no-owner      watchdog whose renewal is a plain PEXPIRE
func init() {
	Register(Info{
		ID:       "canary-no-owner-release",
		Design:   "CANARY: set-nx-cad (SET NX PX, random value) whose release is a plain DEL with no owner check",
		Source:   "broken on purpose (set-nx-cad minus its compare-and-delete)",
		Weakness: "a holder whose key expired while it still works deletes the next holder's key: ownership violations, then overlaps",
		Topology: Single,
		TTL:      3 * time.Second,
		Canary:   true,
		New: func(env Env) (Lock, error) {
			return &canaryNoOwnerRelease{SetNXCAD{Env: env, TTL: 3 * time.Second, Tries: 3, RetryDelay: time.Second}}, nil
		},
	})
	Register(Info{
		ID:       "canary-redlock-half",
		Design:   "CANARY: Redlock (redis.io parameters) that counts N/2 nodes as a majority instead of N/2+1",
		Source:   "broken on purpose (redlock with an off-by-one quorum)",
		Weakness: "two clients that each reach half of the nodes (2 of 5) both hold the lock",
		Topology: Independent,
		TTL:      RedlockRedisIO.TTL,
		Canary:   true,
		New: func(env Env) (Lock, error) {
			return &canaryRedlock{Redlock: Redlock{Env: env, P: RedlockRedisIO}, quorum: func(n int) int { return max(1, n/2) }}, nil
		},
	})
	Register(Info{
		ID:       "canary-redlock-no-elapsed",
		Design:   "CANARY: Redlock (redis.io parameters) whose validity is TTL - drift from the end of the acquisition round, not reduced by the time the round took",
		Source:   "broken on purpose (redlock without the elapsed-time term)",
		Weakness: "a round slowed after the majority was reached (a pause, slow nodes) outlives the keys it set first: another client takes them while the holder still believes",
		Topology: Independent,
		TTL:      RedlockRedisIO.TTL,
		Canary:   true,
		New: func(env Env) (Lock, error) {
			return &canaryRedlock{Redlock: Redlock{Env: env, P: RedlockRedisIO}, noElapsed: true}, nil
		},
	})
	Register(Info{
		ID:                "canary-equal-tokens",
		Design:            "CANARY: fencing (SET NX PX + INCR token in one script) against a storage whose max-token check accepts an equal token from another owner",
		Source:            "broken on purpose (fencing with resource.Options.AcceptEqualTokens)",
		Weakness:          "after the token counter goes back (a restart from an everysec snapshot), two holders carry the same token and the storage lets both write: lost updates",
		Topology:          Single,
		TTL:               3 * time.Second,
		Fencing:           FenceMaxToken,
		AcceptEqualTokens: true,
		Canary:            true,
		New: func(env Env) (Lock, error) {
			return &Fenced{SetNXCAD: SetNXCAD{Env: env, TTL: 3 * time.Second, Tries: 3, RetryDelay: time.Second}}, nil
		},
	})
	Register(Info{
		ID:       "canary-renew-no-owner",
		Design:   "CANARY: watchdog (30 s lease, renewal every 10 s) whose renewal is a plain PEXPIRE key 30000, without checking the value",
		Source:   "broken on purpose (watchdog minus the owner check in its renewal)",
		Weakness: "a holder whose key was lost (expired, node restart) keeps renewing whoever holds the key now, and keeps believing it holds the lock",
		Topology: Single,
		TTL:      30 * time.Second,
		Canary:   true,
		New: func(env Env) (Lock, error) {
			return &canaryRenewNoOwner{Watchdog{SetNXCAD: SetNXCAD{Env: env, TTL: 30 * time.Second, Tries: 3, RetryDelay: time.Second},
				Interval: 10 * time.Second}}, nil
		},
	})
}

// canaryNoOwnerRelease is set-nx-cad released by a plain DEL (the bug of
// set-nx-del, with set-nx-cad's random value and retries).
type canaryNoOwnerRelease struct{ SetNXCAD }

// Release implements Lock: DEL key, whoever holds it (0 deleted: ErrNotOwner).
func (l *canaryNoOwnerRelease) Release(ctx context.Context, _ Lease) error {
	return plainDel(ctx, l.Env)
}

// canaryRedlock is Redlock.Acquire and Release with one of two bugs: a
// quorum function other than N/2+1, or validity not reduced by the elapsed
// time of the round. Everything else (node order, timeouts, retries,
// release on failure, compare-and-delete) is Redlock's.
type canaryRedlock struct {
	Redlock
	quorum    func(n int) int // nil: N/2+1
	noElapsed bool
}

func (l *canaryRedlock) majority() int {
	if l.quorum != nil {
		return l.quorum(len(l.Env.Nodes))
	}
	return len(l.Env.Nodes)/2 + 1
}

// Acquire implements Lock: Redlock.Acquire with the canary's bug.
func (l *canaryRedlock) Acquire(ctx context.Context) (Lease, error) {
	value := randomValue(l.Env.Rand)
	quorum := l.majority()
	for try := 0; try < max(1, l.P.Tries); try++ {
		if try > 0 {
			d := l.P.RetryDelay
			if l.P.RetryJitter > 0 {
				d += time.Duration(l.Env.Rand.Int64N(int64(l.P.RetryJitter)))
			}
			l.Env.Clock.Sleep(d)
		}
		start := l.Env.Clock.Now()
		n := 0
		for _, c := range l.Env.Nodes {
			if l.setOne(ctx, c.SetNX, value) {
				n++
			}
			l.Env.At(PointAcquiring)
		}
		end := l.Env.Clock.Now()
		elapsed := end.Sub(start)
		drift := time.Duration(float64(l.P.TTL)*l.P.DriftFactor) + l.P.DriftFixed
		validity := l.P.TTL - elapsed - drift
		validUntil := start.Add(elapsed + validity)
		if l.noElapsed {
			// The bug: the lock is "valid for TTL - drift from now", as if
			// the keys had been set when the round ended.
			validity = l.P.TTL - drift
			validUntil = end.Add(validity)
		}
		if n >= quorum && validity > 0 {
			l.Env.At(PointAfterCheck)
			return Lease{Value: value, Start: start, ValidUntil: validUntil}, nil
		}
		l.releaseAll(ctx, value)
	}
	return Lease{}, ErrNotAcquired
}

// Release implements Lock: compare-and-delete on every node; fewer than the
// canary's quorum deleted: ErrNotOwner.
func (l *canaryRedlock) Release(ctx context.Context, lease Lease) error {
	if l.releaseAll(ctx, lease.Value) < l.majority() {
		return ErrNotOwner
	}
	return nil
}

// canaryRenewNoOwner is the watchdog whose renewal is a plain
// PEXPIRE key ttl: it extends the key whoever holds it, and reports the
// extension as its own (Env.Renewed).
type canaryRenewNoOwner struct{ Watchdog }

// Acquire implements Lock: set-nx-cad's acquire, then the broken watchdog.
// Release is Watchdog's (it stops the goroutine through lease.state).
func (l *canaryRenewNoOwner) Acquire(ctx context.Context) (Lease, error) {
	lease, err := l.SetNXCAD.Acquire(ctx)
	if err != nil {
		return lease, err
	}
	stop := make(chan struct{})
	lease.state = stop
	l.Env.Spawn(func() { l.watch(ctx, stop) })
	return lease, nil
}

// watch is Watchdog.watch with PEXPIRE in place of compare-and-PEXPIRE.
func (l *canaryRenewNoOwner) watch(ctx context.Context, stop <-chan struct{}) {
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for {
		l.Env.Clock.Sleep(l.Interval)
		if stopped() {
			return
		}
		l.Env.At(PointRenewing)
		if stopped() {
			return
		}
		sent := l.Env.Clock.Now()
		ok, err := l.Env.Primary.PExpire(ctx, l.Env.Key, l.TTL).Result()
		if err != nil || !ok || stopped() {
			return
		}
		l.Env.Renewed(sent.Add(l.TTL))
	}
}
