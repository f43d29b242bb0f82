package catalogue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:       "getset-expiry",
		Design:   "value = the client's own clock + 10 s in epoch ms; SETNX, else GET and, if that expiry has passed on the client's clock, GETSET a new one and win iff the old value is the one read; PEXPIRE 24 h on success; spin 20 retries x 50 ms; unlock is a plain DEL",
		Source:   "“Practice: a Redis lock” (Tencent Cloud) (RedisDistributionLock.lock/unlock, RedisLockAdvice spin with @RedisLockAnnoation defaults)",
		Weakness: "expiry is judged on the clients' clocks, so a client whose clock is ahead takes a lock still held; GETSET overwrites the winner's value even when it loses; a GETSET that lands just after the holder's DEL recreates the key with no TTL and no holder, so everyone waits until its stamped expiry passes (10 s, plus however far the writer's clock was ahead); the unconditional DEL of a holder whose lock expired deletes another client's lock (and the seed's aspect also DELs when its spin gives up: UnlockOnGiveUp)",
		Topology: locks.Single,
		Params: []locks.Param{
			durParam("ttl", 10*time.Second, true, "the seed's expireTime: the validity written as the value, judged on the clients' clocks"),
			durParam("key_ttl", 24*time.Hour, true, "the key's own expiry, set after a win (PEXPIRE 24 h)"),
			intParam("retry_times", "retries", 20, 0, maxTries, "the spin's retryTimes: lock runs at most retry_times+2 times"),
			durParam("wait_time", 50*time.Millisecond, false, "the spin's waitTime: the sleep between two lock calls"),
			intParam("get_retries", "tries", 3, 0, maxTries, "getKeyWithRetry's tries on errors")},
		Configure: func(v locks.Values) (locks.Configured, error) {
			l := GetSetExpiry{ExpireTime: v.Duration("ttl"), KeyTTL: v.Duration("key_ttl"),
				RetryTimes: v.Int("retry_times"), WaitTime: v.Duration("wait_time"), GetRetries: v.Int("get_retries")}
			return locks.Configured{TTL: l.ExpireTime, New: func(env locks.Env) (locks.Lock, error) { x := l; x.Env = env; return &x, nil }}, nil
		},
	})
}

// GetSetExpiry is “Practice: a Redis lock” (Tencent Cloud)'s RedisDistributionLock driven by its
// RedisLockAdvice aspect with @RedisLockAnnoation's defaults (isSpin true,
// expireTime 10000 ms, waitTime 50 ms, retryTimes 20). The lock's value is
// the time it expires, read from the client's own clock: lockExpireTime =
// Instant.now().toEpochMilli() + expireTime. One lock(key, expireTime) call:
//
//	SETNX key lockExpireTime            (setIfAbsent)
//	  1 → PEXPIRE key 86400000; held    (expire(key, 24*3600, SECONDS): RedisTemplate sends PEXPIRE)
//	  0 → GET key                       (getKeyWithRetry: up to 3 tries on errors)
//	      nil → not acquired
//	      old > now → not acquired      (now: the clock read at the start of lock)
//	      old <= now → GETSET key lockExpireTime (getAndSet)
//	          returned == old → PEXPIRE key 86400000; held
//	          otherwise → not acquired (its GETSET already overwrote the value)
//
// The aspect spins: while lock fails, "if (lockRetryTime++ > retryTimes)
// throw" and sleep waitTime, so lock runs at most 22 times, 50 ms apart,
// and Acquire then returns ErrNotAcquired. A command error ends Acquire with
// that error (the seed throws). A nil GETSET reply or a non-number value
// throws NumberFormatException in the seed: here it is ErrNotAcquired.
// Release is unlock: a plain DEL key, with no expiry or owner check. The
// holder believes it holds until lockExpireTime on its own clock.
//
// The seed's aspect runs unlock in a finally block that wraps the spin as
// well as the critical section, so it also sends DEL key when lock throws
// or the spin gives up — deleting the lock of the client it was waiting
// for, without any fault (with five clients and 1 s holds it happens within
// seconds). UnlockOnGiveUp models that; it is off in the catalogue entry so
// that the entry isolates the lock's own weaknesses (the catalogue's
// no-faults check expects mutual exclusion), and a test shows it on.
//
// Weaknesses: correctness rests on synchronized client clocks (a client
// whose clock is ahead sees a live lock as expired and takes it over); a
// losing GETSET still overwrites the winner's expiry; a GETSET that lands
// just after the holder's DEL (it read the holder's value, found it
// expired on its clock, and the DEL overtook it) recreates the key with
// no TTL, since PEXPIRE follows only a win, and with no holder, since a
// nil reply throws, so nobody deletes it: every client waits until the
// stamped expiry passes on its clock, 10 s, or 40 s from a writer whose
// clock ran 30 s ahead (run.TestStrandedExpiry); the unconditional DEL
// of a holder whose lock expired deletes another client's lock.
type GetSetExpiry struct {
	Env            locks.Env
	ExpireTime     time.Duration // the lock's validity, written as the value
	KeyTTL         time.Duration // the key's own expiry, set after a win
	RetryTimes     int           // the aspect's retryTimes: lock runs RetryTimes+2 times
	WaitTime       time.Duration // sleep between lock calls
	GetRetries     int           // getKeyWithRetry's retryTimes
	UnlockOnGiveUp bool          // the aspect's finally: DEL also when the spin fails
}

// Acquire implements Lock: the aspect's spin around lock.
func (l *GetSetExpiry) Acquire(ctx context.Context) (locks.Lease, error) {
	for retry := 0; ; retry++ {
		lease, ok, err := l.lock(ctx)
		if err != nil {
			return locks.Lease{}, l.giveUp(ctx, err)
		}
		if ok {
			return lease, nil
		}
		if retry > l.RetryTimes { // lockRetryTime++ > retryTimes
			return locks.Lease{}, l.giveUp(ctx, fmt.Errorf("%w: spin gave up after %d tries", locks.ErrNotAcquired, retry+1))
		}
		l.Env.Clock.Sleep(l.WaitTime)
	}
}

// giveUp runs the aspect's finally block (unlock: DEL key) when the spin
// fails if UnlockOnGiveUp, and returns err.
func (l *GetSetExpiry) giveUp(ctx context.Context, err error) error {
	if l.UnlockOnGiveUp {
		_ = l.Env.Primary.Del(ctx, l.Env.Key).Err()
	}
	return err
}

// lock is RedisDistributionLock.lock(key, expireTime): true when held, an
// error where the seed throws.
func (l *GetSetExpiry) lock(ctx context.Context) (locks.Lease, bool, error) {
	c, key := l.Env.Primary, l.Env.Key
	start := l.Env.Clock.Now()
	now := start.UnixMilli()
	lockExpireTime := now + l.ExpireTime.Milliseconds()
	value := strconv.FormatInt(lockExpireTime, 10)
	held := func() (locks.Lease, bool, error) {
		if err := c.PExpire(ctx, key, l.KeyTTL).Err(); err != nil {
			return locks.Lease{}, false, err
		}
		l.Env.At(locks.PointAfterCheck)
		return locks.Lease{Value: value, Start: start, ValidUntil: time.UnixMilli(lockExpireTime)}, true, nil
	}

	ok, err := setNX(ctx, c, key, value)
	l.Env.At(locks.PointAcquiring)
	if err != nil {
		return locks.Lease{}, false, err
	}
	if ok {
		return held()
	}
	stored, err := l.getKeyWithRetry(ctx)
	if errors.Is(err, redis.Nil) {
		return locks.Lease{}, false, nil // "lock have been release"
	}
	if err != nil {
		return locks.Lease{}, false, err
	}
	oldExpireTime, err := strconv.ParseInt(stored, 10, 64)
	if err != nil {
		return locks.Lease{}, false, fmt.Errorf("%w: stored value %q is not a number (NumberFormatException)", locks.ErrNotAcquired, stored)
	}
	if oldExpireTime > now {
		return locks.Lease{}, false, nil
	}
	prev, err := c.GetSet(ctx, key, value).Result()
	l.Env.At(locks.PointAcquiring)
	if errors.Is(err, redis.Nil) {
		return locks.Lease{}, false, fmt.Errorf("%w: GETSET found no key (NumberFormatException)", locks.ErrNotAcquired)
	}
	if err != nil {
		return locks.Lease{}, false, err
	}
	currentExpireTime, err := strconv.ParseInt(prev, 10, 64)
	if err != nil {
		return locks.Lease{}, false, fmt.Errorf("%w: GETSET returned %q, not a number (NumberFormatException)", locks.ErrNotAcquired, prev)
	}
	if currentExpireTime == oldExpireTime {
		return held()
	}
	return locks.Lease{}, false, nil
}

// getKeyWithRetry is GET key, tried up to GetRetries times while it fails.
func (l *GetSetExpiry) getKeyWithRetry(ctx context.Context) (string, error) {
	var err error
	for i := 0; i < max(1, l.GetRetries); i++ {
		var v string
		v, err = l.Env.Primary.Get(ctx, l.Env.Key).Result()
		if err == nil || errors.Is(err, redis.Nil) {
			return v, err
		}
	}
	return "", err
}

// Release implements Lock: unlock is a plain DEL key (the seed checks
// neither owner nor expiry and always returns true; a reply of 0 tells
// this client it no longer held the lock).
func (l *GetSetExpiry) Release(ctx context.Context, _ locks.Lease) error {
	return plainDel(ctx, l.Env)
}
