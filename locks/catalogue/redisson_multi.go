package catalogue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:       "redisson-multilock",
		Design:   "Redisson RedissonRedLock over 3 Sentinel groups (a primary with async replicas each): tryLock(500 ms, 30 s) takes Redisson's RLock (hash + Lua) on each group's primary in turn, each try's own waiting bounded by 500/3 ms with a 1 s lease (2 × waitTime), a majority of 2 suffices, a failed round releases what it took and starts over while the wait lasts, then PEXPIRE 30 s on every lock it took; unlock on every group, failures ignored",
		Source:   "“The SETNX command” §3.2 (RedissonRedLock(lock1, lock2, lock3).tryLock(500, 30000, MILLISECONDS); \"3 sentinel clusters, at least 3/2+1 = 2 must answer\"); Redisson 3.11 RedissonMultiLock.tryLock, RedissonRedLock failedLocksLimit / calcLockWaitTime / unlock",
		Weakness: "each group fails over with async replication, so a failover can lose the key on a group that is part of a bare majority (the holder took 2 of 3 because the third group was down): another client then takes that group and the third; no validity check (the holder believes its 30 s lease whatever the round took), no fencing token; a group that does not answer (packets held, a paused node) holds its try for the command timeout, more than the 500 ms wait: with the first group silent nobody can lock (multilock-silent-group); with the last one silent the round reaches its majority after the 1 s sub-leases ran out, and its closing PEXPIRE 30 s extends keys other clients took meanwhile (multilock-silent-last-group: ownership violations, and overlaps)",
		Topology: locks.Groups,
		TTL:      30 * time.Second,
		New: func(env locks.Env) (locks.Lock, error) {
			if len(env.Groups) == 0 {
				return nil, errors.New("redisson-multilock: the world has no primary/replica groups (Env.Groups is empty)")
			}
			return NewRedissonRedLock(env, 500*time.Millisecond, 30*time.Second), nil
		},
	})
}

// RedissonRedLock is Redisson's RedissonRedLock (RedissonMultiLock with a
// majority) over one RLock per primary/replica group, each from its own
// RedissonClient (its own UUID), as “The SETNX command” builds it. Acquire is
// tryLock(WaitTime, LeaseTime) as RedissonMultiLock.tryLock runs it:
//
//   - each lock is tried in group order with RLock.tryLock(min(WaitTime/N,
//     wait left), 2 × WaitTime): its Lua script (RedissonLockScript) with a
//     short lease, retried at the PTTL it returns within that bound;
//   - a try that fails with a response timeout is unlocked on its group
//     (the script may have run); any other failure counts as not taken;
//   - up to N − (N/2+1) failures are allowed: a failure that leaves exactly
//     a majority possible with the locks taken ends the loop at once (its
//     "break", before the wait is checked: the round has its majority);
//     one failure more releases every lock taken and starts the round
//     over from the first group, while the wait lasts; after each try, the
//     wait running out releases them and fails;
//   - when the round ends, PEXPIRE LeaseTime on every lock taken (a plain
//     PEXPIRE, whoever holds the key by then); a PEXPIRE that fails makes
//     Acquire fail with its error (Redisson's syncUninterruptibly throws),
//     the locks left taken.
//
// There is no validity check: the holder believes it holds until
// start + LeaseTime on its own clock. Release unlocks every group
// (RedissonRedLock.unlock: unlockInner, failures ignored): nil if some
// group's unlock removed this client's hold, ErrNotOwner if none did.
// PointAcquiring is marked after each group's try; PointAfterCheck after
// the PEXPIREs. No watchdog (a leaseTime is given).
type RedissonRedLock struct {
	Env       locks.Env
	WaitTime  time.Duration
	LeaseTime time.Duration
	locks     []*RedissonLock
}

// NewRedissonRedLock builds tryLock(wait, lease) over env.Groups.
func NewRedissonRedLock(env locks.Env, wait, lease time.Duration) *RedissonRedLock {
	l := &RedissonRedLock{Env: env, WaitTime: wait, LeaseTime: lease}
	for _, c := range env.Groups {
		sub := env
		sub.Primary, sub.Nodes, sub.Groups = c, nil, nil
		// The group's RLock marks only its tries; the multilock decides.
		sub.Hooks.At = func(pt locks.PausePoint) {
			if pt == locks.PointAcquiring {
				env.At(pt)
			}
		}
		sub.Hooks.Go, sub.Hooks.Renewed = nil, nil
		l.locks = append(l.locks, NewRedissonLock(sub, 0, 0))
	}
	return l
}

// failedLocksLimit is RedissonRedLock's: N − (N/2 + 1).
func (l *RedissonRedLock) failedLocksLimit() int { return len(l.locks) - (len(l.locks)/2 + 1) }

// Acquire implements Lock.
func (l *RedissonRedLock) Acquire(ctx context.Context) (locks.Lease, error) {
	start := l.Env.Clock.Now()
	newLease := 2 * l.WaitTime
	remain := l.WaitTime
	// calcLockWaitTime: Math.max(remainTime / locks.size(), 1), in whole ms.
	lockWait := max(time.Duration(remain.Milliseconds()/int64(len(l.locks)))*time.Millisecond, time.Millisecond)
	failed := l.failedLocksLimit()
	var taken []*RedissonLock
	t := l.Env.Clock.Now()
	// The wait bounds the loop (every try spends clock time); maxTries
	// bounds it too, should a world answer in no time at all.
	const maxTries = 10_000
	tries := 0
	for i := 0; i < len(l.locks); i++ {
		if tries++; tries > maxTries {
			l.unlockAll(ctx, taken)
			return locks.Lease{}, locks.ErrNotAcquired
		}
		sub := l.locks[i]
		sub.WaitTime, sub.LeaseTime = min(lockWait, remain), newLease
		_, err := sub.Acquire(ctx)
		ok := err == nil
		if err != nil && isTimeout(err) {
			_ = sub.Release(ctx, locks.Lease{}) // the script may have run
		}
		if ok {
			taken = append(taken, sub)
		} else {
			if len(l.locks)-len(taken) == l.failedLocksLimit() {
				break
			}
			if failed == 0 {
				l.unlockAll(ctx, taken)
				failed = l.failedLocksLimit()
				taken = nil
				i = -1 // reset the iterator
			} else {
				failed--
			}
		}
		now := l.Env.Clock.Now()
		remain -= now.Sub(t)
		t = now
		if remain <= 0 {
			l.unlockAll(ctx, taken)
			return locks.Lease{}, locks.ErrNotAcquired
		}
	}
	for _, sub := range taken {
		// RedissonExpirable.expireAsync: a plain PEXPIRE of the lock's hash.
		if err := sub.cmd().PExpire(ctx, sub.Env.Key, l.LeaseTime).Err(); err != nil {
			return locks.Lease{}, fmt.Errorf("redisson multilock: PEXPIRE on a lock taken: %w", err)
		}
	}
	l.Env.At(locks.PointAfterCheck)
	ids := make([]string, len(taken))
	for i, sub := range taken {
		ids[i] = sub.HolderID()
	}
	return locks.Lease{Value: strings.Join(ids, ","), Start: start, ValidUntil: start.Add(l.LeaseTime)}, nil
}

// unlockAll is unlockInner: unlock each lock, failures ignored.
func (l *RedissonRedLock) unlockAll(ctx context.Context, ls []*RedissonLock) bool {
	removed := false
	for _, sub := range ls {
		removed = sub.Release(ctx, locks.Lease{}) == nil || removed
	}
	return removed
}

// Release implements Lock: unlock on every group.
func (l *RedissonRedLock) Release(ctx context.Context, _ locks.Lease) error {
	if l.unlockAll(ctx, l.locks) {
		return nil
	}
	return locks.ErrNotOwner
}

// isTimeout reports a response timeout (Redisson's
// RedisResponseTimeoutException): the request may have been applied.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
