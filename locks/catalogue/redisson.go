package catalogue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// Redisson's RLock scripts (Redisson 3.16, RedissonLock.tryLockInnerAsync,
// RedissonLock.unlockInnerAsync, RedissonBaseLock.renewExpirationAsync),
// sent as Redisson sends them by default: EVAL with the script's text.
// KEYS[1] is the lock's hash, KEYS[2] its pub/sub channel; ARGV are the
// lease in ms, the holder's field (uuid:threadId) and, for unlock, the
// unlock message (0).
const (
	RedissonLockScript = "if (redis.call('exists', KEYS[1]) == 0) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"return redis.call('pttl', KEYS[1]);"
	RedissonUnlockScript = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then " +
		"return nil;" +
		"end; " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
		"if (counter > 0) then " +
		"redis.call('pexpire', KEYS[1], ARGV[2]); " +
		"return 0; " +
		"else " +
		"redis.call('del', KEYS[1]); " +
		"redis.call('publish', KEYS[2], ARGV[1]); " +
		"return 1; " +
		"end; " +
		"return nil;"
	RedissonRenewScript = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return 1; " +
		"end; " +
		"return 0;"
)

// RedissonWatchdogTimeout is Redisson's lockWatchdogTimeout default: the
// lease of a lock taken without a leaseTime, renewed every third of it.
const RedissonWatchdogTimeout = 30 * time.Second

func init() {
	Register(locks.Info{
		ID:        "redisson-lock",
		Design:    "Redisson RLock: a hash per lock, field uuid:threadId = reentrancy count; acquire by Lua (HINCRBY + PEXPIRE if free or ours, else PTTL), tryLock(500 ms, no leaseTime) retrying at the PTTL it returns, a watchdog that renews 30 s every 10 s by Lua (HEXISTS then PEXPIRE), release by Lua (HINCRBY -1, PEXPIRE while above 0, else DEL and PUBLISH)",
		Source:    "“The SETNX command” (tryLock(500, ..., MILLISECONDS)), “Redis and ZooKeeper locks” (CSDN) v5 (lock() with Redisson's watchdog); Redisson 3.16 RedissonLock tryLockInnerAsync / unlockInnerAsync, RedissonBaseLock renewExpirationAsync, lockWatchdogTimeout 30 s",
		Weakness:  "as watchdog: a pause longer than the 30 s lease stops the watchdog with the holder, the key expires and another client takes it while the paused holder is in its critical section; one node (or an async replica) is a single point of failure; no fencing token; the holder field (uuid:threadId) is the same for every hold of a thread and this unlock is not idempotent: go-redis sends an unlock again when its reply times out, and the first copy, held up in the network, can land after the thread locked again and delete that hold (later Redisson versions answer a repeated unlock from an unlock latch keyed by a request id); a release that does not take (the node down, a crash losing it) leaves the hold counted, and the holder re-enters it at its next lock and may keep it for good (a fairness figure: run.TestPhantomHold)",
		Topology:  locks.Single,
		TTL:       RedissonWatchdogTimeout,
		Reentrant: true,
		Renews:    true,
		New: func(env locks.Env) (locks.Lock, error) {
			return NewRedissonLock(env, 500*time.Millisecond, 0), nil
		},
	})
}

// RedissonLock is Redisson's RLock (RedissonLock, Redisson 3.16) as one
// client (one RedissonClient, whose id is a UUID drawn from Env.Rand) with
// one thread (threadId 1): its holder field is "uuid:1", so Acquire on the
// same instance while holding is a reentrant acquisition, as a Java thread
// calling tryLock again. Acquire is tryLock(WaitTime, LeaseTime):
//
//	EVAL RedissonLockScript 1 key leaseMs uuid:1
//	  nil → held (free: count 1; ours: count+1; either way PEXPIRE leaseMs)
//	  n   → the key's PTTL: held by another
//
// then, as tryLock's loop does, while WaitTime is not spent: subscribe to
// the lock's channel, try again, and wait for an unlock message for
// min(PTTL, the wait time left) before the next try; no try is made once
// the wait time is spent. LeaseTime 0 is Redisson's leaseTime -1: the lease
// is the watchdog timeout (30 s) and, after the first acquisition, a
// goroutine started with Env.Go sleeps 10 s (a third of it), calls
// Env.At(PointRenewing), sends
//
//	EVAL RedissonRenewScript 1 key 30000 uuid:1
//
// and reports the new validity through Env.Renewed, until Release brings
// the count to 0, the renewal returns 0 (the key is not ours) or fails
// (Redisson stops renewing then too). Release is unlock:
//
//	EVAL RedissonUnlockScript 2 key redisson_lock__channel:{key} 0 leaseMs uuid:1
//	  nil → not ours (IllegalMonitorStateException): ErrNotOwner
//	  0   → count decremented, still held, PEXPIRE leaseMs
//	  1   → deleted, unlock message published
//
// Pub/sub is not simulated: miniredis delivers channel messages from
// goroutines of its own, outside the simulator's scheduler, so a waiter
// here never hears the unlock message and wakes only when its wait (the
// PTTL the script returned, or the wait time left) runs out, which is
// Redisson's own fallback when no message comes. The PUBLISH is still
// sent (to no subscriber). With the catalogue's 500 ms wait and a 30 s
// lease a waiter therefore makes two tries, sleeps out the rest of its
// 500 ms and fails; the workload's next round tries again.
//
// The holder believes it holds until start+lease on its own clock (start:
// before the successful EVAL), extended by each renewal.
//
// Weakness: the watchdog's (a process pause longer than the lease starves
// it: the key expires under a holder that still believes) and set-nx-cad's
// (one node; a node restart without persistence, a forward clock jump
// hand the key to another client); no fencing token. And a stale unlock:
// every hold of the thread has the same field, so an unlock that go-redis
// sent twice (its first reply timed out: go-redis retries a command after
// a read timeout) can run twice, the second copy after the thread locked
// again, and delete that hold while the thread still believes it holds
// (run.TestStaleSelfRelease, redisson-lock seed 22: one 1 s delay spike).
type RedissonLock struct {
	Env locks.Env
	// WaitTime is tryLock's waitTime; LeaseTime its leaseTime (0: none,
	// the watchdog keeps WatchdogTimeout alive).
	WaitTime        time.Duration
	LeaseTime       time.Duration
	WatchdogTimeout time.Duration

	id    string // uuid:threadId
	depth int    // reentrancy count this client believes it holds
	stop  chan struct{}
	// variant, when set, is another Redisson lock's scripts on the same
	// tryLock loop and watchdog (RedissonReadLock, RedissonWriteLock,
	// RedissonFairLock); nil: RLock's.
	variant redissonVariant
	// cluster, when set, is where the scripts go (Redisson in cluster
	// mode: the key's slot's primary, redisson_cluster.go); nil: Env.Primary.
	cluster *redis.ClusterClient
}

// cmd is where this lock's commands go: the ClusterClient in cluster mode,
// else the single node or the primary.
func (l *RedissonLock) cmd() redis.Cmdable {
	if l.cluster != nil {
		return l.cluster
	}
	return l.Env.Primary
}

// redissonVariant is a Redisson lock class that overrides RedissonLock's
// scripts: tryLockInnerAsync (try), renewExpirationAsync (renew),
// unlockInnerAsync (unlock) and acquireFailedAsync (failed), plus how the
// simulated tryLock waits.
type redissonVariant interface {
	// try runs the acquire script once: held, or the wait the script
	// returned (the holder's PTTL, or a queued thread's estimate).
	try(ctx context.Context, l *RedissonLock) (bool, time.Duration, error)
	// renew runs the renewal script: 1 renewed, 0 not ours.
	renew(ctx context.Context, l *RedissonLock, lease time.Duration) (int64, error)
	// unlock runs the unlock script and returns Release's error.
	unlock(ctx context.Context, l *RedissonLock) error
	// failed runs when tryLock gives up (acquireFailedAsync).
	failed(ctx context.Context, l *RedissonLock)
	// poll bounds one wait of tryLock's loop (0: none; see the type).
	poll() time.Duration
	// read marks the leases of a shared (read) lock.
	read() bool
}

// NewRedissonLock is tryLock(wait, lease) on env's key; lease 0 means no
// leaseTime (the watchdog).
func NewRedissonLock(env locks.Env, wait, lease time.Duration) *RedissonLock {
	return &RedissonLock{Env: env, WaitTime: wait, LeaseTime: lease, WatchdogTimeout: RedissonWatchdogTimeout,
		id: uuidValue(env) + ":1"}
}

// uuidValue draws a UUID-shaped value (RedissonClient's id) from env.Rand.
func uuidValue(env locks.Env) string {
	v := randomValue(env.Rand) + randomValue(env.Rand)
	return v[0:8] + "-" + v[8:12] + "-" + v[12:16] + "-" + v[16:20] + "-" + v[20:32]
}

// HolderID is the hash field this instance writes (uuid:threadId).
func (l *RedissonLock) HolderID() string { return l.id }

// Channel is the lock's pub/sub channel (RedissonLock.getChannelName).
func (l *RedissonLock) Channel() string { return "redisson_lock__channel:{" + l.Env.Key + "}" }

// lease is internalLockLeaseTime: the leaseTime, or the watchdog timeout.
func (l *RedissonLock) lease() time.Duration {
	if l.LeaseTime > 0 {
		return l.LeaseTime
	}
	return l.WatchdogTimeout
}

// tryAcquire runs the lock script once: acquired, or the PTTL of the key
// another holder has.
func (l *RedissonLock) tryAcquire(ctx context.Context) (bool, time.Duration, error) {
	if l.variant != nil {
		ok, wait, err := l.variant.try(ctx, l)
		l.Env.At(locks.PointAcquiring)
		return ok, wait, err
	}
	ttl, err := l.cmd().Eval(ctx, RedissonLockScript, []string{l.Env.Key}, l.lease().Milliseconds(), l.id).Int64()
	l.Env.At(locks.PointAcquiring)
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	return false, time.Duration(ttl) * time.Millisecond, nil
}

// Acquire implements Lock: tryLock(WaitTime, LeaseTime).
func (l *RedissonLock) Acquire(ctx context.Context) (locks.Lease, error) {
	left := l.WaitTime
	first := true
	for {
		start := l.Env.Clock.Now()
		ok, ttl, err := l.tryAcquire(ctx)
		if err != nil {
			return locks.Lease{}, err
		}
		if ok {
			return l.acquired(ctx, start), nil
		}
		if left -= l.Env.Clock.Now().Sub(start); left <= 0 {
			return locks.Lease{}, l.failed(ctx)
		}
		if first {
			// tryLock subscribes here (not simulated, see the type's
			// doc) and tries again at once.
			first = false
			continue
		}
		wait := left
		if ttl >= 0 && ttl < left {
			wait = ttl
		}
		if l.variant != nil && l.variant.poll() > 0 {
			wait = min(wait, l.variant.poll())
		}
		before := l.Env.Clock.Now()
		l.Env.Clock.Sleep(wait) // the latch: no unlock message arrives
		if left -= l.Env.Clock.Now().Sub(before); left <= 0 {
			return locks.Lease{}, l.failed(ctx)
		}
	}
}

// failed is acquireFailed: a variant's script (the fair lock leaves its
// queue), then ErrNotAcquired.
func (l *RedissonLock) failed(ctx context.Context) error {
	if l.variant != nil {
		l.variant.failed(ctx, l)
	}
	return locks.ErrNotAcquired
}

// acquired counts a successful acquisition and, for the first one without
// a leaseTime, starts the watchdog.
func (l *RedissonLock) acquired(ctx context.Context, start time.Time) locks.Lease {
	l.Env.At(locks.PointAfterCheck)
	l.depth++
	if l.depth == 1 && l.LeaseTime <= 0 {
		stop := make(chan struct{})
		l.stop = stop
		l.Env.Go(func() { l.watch(ctx, stop) })
	}
	return locks.Lease{Value: l.id, Start: start, ValidUntil: start.Add(l.lease()), Read: l.variant != nil && l.variant.read()}
}

// watch is the watchdog (renewExpiration): every lease/3 it renews the
// lease until stop is closed or a renewal fails.
func (l *RedissonLock) watch(ctx context.Context, stop <-chan struct{}) {
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	lease := l.WatchdogTimeout
	for {
		l.Env.Clock.Sleep(lease / 3)
		if stopped() {
			return
		}
		l.Env.At(locks.PointRenewing)
		if stopped() {
			return
		}
		sent := l.Env.Clock.Now()
		var n int64
		var err error
		if l.variant != nil {
			n, err = l.variant.renew(ctx, l, lease)
		} else {
			n, err = l.cmd().Eval(ctx, RedissonRenewScript, []string{l.Env.Key}, lease.Milliseconds(), l.id).Int64()
		}
		if err != nil || n == 0 || stopped() {
			return
		}
		l.Env.Renewed(sent.Add(lease))
	}
}

// Release implements Lock: unlock. The watchdog stops when the count this
// client believes it holds reaches 0 (cancelExpirationRenewal), whatever
// the unlock returns.
func (l *RedissonLock) Release(ctx context.Context, _ locks.Lease) error {
	if l.depth > 0 {
		l.depth--
		if l.depth == 0 && l.stop != nil {
			close(l.stop)
			l.stop = nil
		}
	}
	if l.variant != nil {
		return l.variant.unlock(ctx, l)
	}
	n, err := l.cmd().Eval(ctx, RedissonUnlockScript, []string{l.Env.Key, l.Channel()}, 0, l.lease().Milliseconds(), l.id).Int64()
	if errors.Is(err, redis.Nil) {
		return locks.ErrNotOwner
	}
	if err != nil {
		return err
	}
	if n != 0 && n != 1 {
		return fmt.Errorf("redisson unlock: unexpected reply %d", n)
	}
	return nil
}
