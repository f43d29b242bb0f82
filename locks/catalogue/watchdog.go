package catalogue

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// CompareAndPExpire is the watchdog's renewal: extend the key's expiry only
// if it still holds our value (“Redis and ZooKeeper locks” (CSDN) v4: "定时(10秒),去检查主线程的key是否还持有key,
// 如果持有就增加过期时间"; Redisson's renewal script checks ownership the same
// way before its pexpire).
const CompareAndPExpire = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"

var renewScript = redis.NewScript(CompareAndPExpire)

func init() {
	Register(locks.Info{
		ID:        "watchdog",
		Design:    "set-nx-cad with a 30 s lease (SET key uuid EX 30 NX, Lua compare-and-delete release) plus a watchdog goroutine that every 10 s (TTL/3) runs a Lua compare-and-PEXPIRE 30000",
		Source:    "“Redis and ZooKeeper locks” (CSDN) v4/v5 (watchdog thread every 10 s; Redisson lockWatchdogTimeout 30 s, renewal every 30/3 s)",
		Weakness:  "a pause longer than the lease (a GC pause, SIGSTOP) starves the watchdog: the key expires and another client takes it while the paused holder is still in its critical section; renewal carries no fencing token",
		Topology:  locks.Single,
		Renews:    true,
		Params:    watchdogParams(),
		Configure: configureWatchdog(false),
	})
}

// Watchdog is “Redis and ZooKeeper locks” (CSDN)'s versions four and five: "fork一个子线程(看门狗),定时(10秒),
// 去检查主线程的key是否还持有key,如果持有就增加过期时间", as Redisson does it
// (lock() without a lease time: lockWatchdogTimeout 30 s, renewed every
// internalLockLeaseTime/3 = 10 s). Acquire and Release are set-nx-cad's
// (SET key uuid EX 30 NX with set-nx-cad's 3 tries 1 s apart; Lua
// compare-and-delete). After a successful Acquire a goroutine started with
// Env.Go sleeps Interval on the client's clock, calls
// Env.At(PointRenewing), and runs
//
//	EVALSHA sha1(CompareAndPExpire) 1 key uuid 30000   (EVAL on NOSCRIPT: go-redis Script.Run)
//
// again and again until Release, or until a renewal fails (reply 0 or an
// error: Redisson cancels its renewal then too). The holder first believes
// it holds until Start+TTL; each successful renewal sent at local time s
// extends that to s+TTL, reported through Env.Renewed.
//
// Weakness: a process pause longer than the lease stops the watchdog with
// the holder; the key expires, another client acquires, and the paused
// holder resumes inside its critical section (its renewal then fails, and
// its release finds the key gone). Without a fencing token the resource
// cannot reject its late writes.
type Watchdog struct {
	SetNXCAD
	Interval time.Duration

	// noOwnerCheck is the canary's bug (canary.go): renew with a plain
	// PEXPIRE, whoever holds the key.
	noOwnerCheck bool
}

// renew extends the key by TTL; it reports whether the renewal took.
func (l *Watchdog) renew(ctx context.Context, value string) (bool, error) {
	if l.noOwnerCheck {
		return l.Env.Primary.PExpire(ctx, l.Env.Key, l.TTL).Result()
	}
	n, err := renewScript.Run(ctx, l.Env.Primary, []string{l.Env.Key}, value, l.TTL.Milliseconds()).Int64()
	return n != 0, err
}

// Acquire implements Lock: set-nx-cad's acquire, then start the watchdog.
func (l *Watchdog) Acquire(ctx context.Context) (locks.Lease, error) {
	lease, err := l.SetNXCAD.Acquire(ctx)
	if err != nil {
		return lease, err
	}
	stop := make(chan struct{})
	lease.Handle = stop
	value := lease.Value
	l.Env.Go(func() { l.watch(ctx, value, stop) })
	return lease, nil
}

// watch renews the lease every Interval until stop is closed or a renewal
// fails. When the run ends, Env.Clock.Sleep does not return (the simulator
// ends the goroutine there).
func (l *Watchdog) watch(ctx context.Context, value string, stop <-chan struct{}) {
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
		l.Env.At(locks.PointRenewing)
		if stopped() {
			return
		}
		sent := l.Env.Clock.Now()
		ok, err := l.renew(ctx, value)
		if err != nil || !ok || stopped() {
			return
		}
		l.Env.Renewed(sent.Add(l.TTL))
	}
}

// Release implements Lock: stop the watchdog, then compare-and-delete.
func (l *Watchdog) Release(ctx context.Context, lease locks.Lease) error {
	if stop, ok := lease.Handle.(chan struct{}); ok {
		close(stop)
	}
	return l.SetNXCAD.Release(ctx, lease)
}
