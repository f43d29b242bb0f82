package catalogue

import (
	"context"
	"time"

	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:       "spin-retry",
		Design:   "“Practice: a Redis lock” (Tencent Cloud)'s spin helper around set-nx-cad: SET key value NX PX 10000 with a random value, retried every 50 ms until it succeeds or 20 retries are spent (22 tries); Lua compare-and-delete release, also sent when the spin gives up (the aspect's finally)",
		Source:   "“Practice: a Redis lock” (Tencent Cloud) (RedisLockAdvice spin: expireTime 10000 ms, waitTime 50 ms, retryTimes 20) on set-nx-cad (“The SETNX command”, “A Lua script against releasing an expired lock”, “Redis and ZooKeeper locks” (CSDN) v3)",
		Weakness: "set-nx-cad's: a holder paused (or slowed) past the 10 s TTL keeps acting while another client holds the key, and one node is a single point of failure; the spin adds no safety, it only turns a busy lock into 22 SETs 50 ms apart and gives up after about 1.05 s (a waiter behind a longer section fails: a liveness figure)",
		Topology: locks.Single,
		Params: []locks.Param{ttlParam(10 * time.Second),
			intParam("retry_times", "retries", 20, 0, maxTries, "the spin's retryTimes: at most retry_times+2 SETs"),
			durParam("wait_time", 50*time.Millisecond, false, "the spin's waitTime: the sleep between two SETs")},
		Configure: func(v locks.Values) (locks.Configured, error) {
			ttl, retries, wait := v.Duration("ttl"), v.Int("retry_times"), v.Duration("wait_time")
			return locks.Configured{TTL: ttl, New: func(env locks.Env) (locks.Lock, error) {
				return &SpinRetry{SetNXCAD: SetNXCAD{Env: env, TTL: ttl, Tries: 1},
					RetryTimes: retries, WaitTime: wait, UnlockOnGiveUp: true}, nil
			}}, nil
		},
	})
}

// SpinRetry is “Practice: a Redis lock” (Tencent Cloud)'s RedisLockAdvice spin (isSpin true) around a
// set-nx-cad lock call, with @RedisLockAnnoation's defaults (expireTime
// 10000 ms, waitTime 50 ms, retryTimes 20):
//
//	while (!lock(key, expireTime)) {
//	    if (lockRetryTime++ > retryTimes) throw ...;   // gives up
//	    ThreadUtil.holdXms(waitTime);
//	}
//	... finally { unlock(key) }
//
// One lock call is one SET key value NX PX 10000 (SetNXCAD with one try);
// the spin runs it at most RetryTimes+2 = 22 times, WaitTime apart on the
// client's clock, then returns ErrNotAcquired. A command error ends the spin
// with that error (the seed throws out of lock). The seed's aspect runs
// unlock in a finally block that also covers a failed spin; with
// set-nx-cad's compare-and-delete (UnlockOnGiveUp) that release deletes
// nothing of another client's (the value differs), so unlike
// getset-expiry's plain DEL it is harmless: after an error it removes our
// own key if the timed-out SET did take it. Release is compare-and-delete.
// The holder believes it holds until start+TTL on its own clock, as
// set-nx-cad's holder does.
//
// Weakness: set-nx-cad's (a pause after the check, a delayed write, a
// clock jump or restart of the node hands the key to another client while
// the holder still believes); the spin makes waiting a busy loop and gives
// up after about 1.05 s.
type SpinRetry struct {
	SetNXCAD
	RetryTimes     int           // retryTimes: lock runs at most RetryTimes+2 times
	WaitTime       time.Duration // waitTime: the sleep between lock calls
	UnlockOnGiveUp bool          // the aspect's finally: compare-and-delete when the spin fails
}

// Acquire implements Lock: the aspect's spin around one SET NX PX.
func (l *SpinRetry) Acquire(ctx context.Context) (locks.Lease, error) {
	value := randomValue(l.Env.Rand)
	for retry := 0; ; retry++ {
		start := l.Env.Clock.Now()
		ok, err := l.Env.Primary.SetNX(ctx, l.Env.Key, value, l.TTL).Result()
		l.Env.At(locks.PointAcquiring)
		if err != nil {
			l.giveUp(ctx, value)
			return locks.Lease{}, err
		}
		if ok {
			l.Env.At(locks.PointAfterCheck)
			return locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.TTL)}, nil
		}
		if retry > l.RetryTimes { // lockRetryTime++ > retryTimes
			l.giveUp(ctx, value)
			return locks.Lease{}, locks.ErrNotAcquired
		}
		l.Env.Clock.Sleep(l.WaitTime)
	}
}

// giveUp is the aspect's finally block after a failed spin.
func (l *SpinRetry) giveUp(ctx context.Context, value string) {
	if l.UnlockOnGiveUp {
		_ = l.SetNXCAD.Release(ctx, locks.Lease{Value: value})
	}
}
