package catalogue

import (
	"context"
	"strings"
	"time"

	"github.com/locksim/locksim/locks"
)

// Redisson's RedissonFairLock scripts (Redisson 3.16: tryLockInnerAsync
// in its EVAL_LONG form, the one tryLock(waitTime, leaseTime) sends;
// unlockInnerAsync; acquireFailedAsync), sent by EVAL with the script's
// text; it renews with RLock's RedissonRenewScript. KEYS: the lock's hash,
// the queue list redisson_lock_queue:{key}, the timeout zset
// redisson_lock_timeout:{key} (and for unlock the channel prefix
// redisson_lock__channel:{key}). ARGV of the lock script: lease ms, the
// holder (uuid:threadId), the thread wait time ms, the client's current
// time ms (System.currentTimeMillis: Env.Clock here).
const (
	RedissonFairLockScript = "while true do " +
		"local firstThreadId2 = redis.call('lindex', KEYS[2], 0);" +
		"if firstThreadId2 == false then " +
		"break;" +
		"end;" +
		"local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));" +
		"if timeout <= tonumber(ARGV[4]) then " +
		"redis.call('zrem', KEYS[3], firstThreadId2);" +
		"redis.call('lpop', KEYS[2]);" +
		"else " +
		"break;" +
		"end;" +
		"end;" +
		"if (redis.call('exists', KEYS[1]) == 0) " +
		"and ((redis.call('exists', KEYS[2]) == 0) " +
		"or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then " +
		"redis.call('lpop', KEYS[2]);" +
		"redis.call('zrem', KEYS[3], ARGV[2]);" +
		"local keys = redis.call('zrange', KEYS[3], 0, -1);" +
		"for i = 1, #keys, 1 do " +
		"redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);" +
		"end;" +
		"redis.call('hset', KEYS[1], ARGV[2], 1);" +
		"redis.call('pexpire', KEYS[1], ARGV[1]);" +
		"return nil;" +
		"end;" +
		"if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then " +
		"redis.call('hincrby', KEYS[1], ARGV[2],1);" +
		"redis.call('pexpire', KEYS[1], ARGV[1]);" +
		"return nil;" +
		"end;" +
		"local timeout = redis.call('zscore', KEYS[3], ARGV[2]);" +
		"if timeout ~= false then " +
		"return timeout - tonumber(ARGV[3]) - tonumber(ARGV[4]);" +
		"end;" +
		"local lastThreadId = redis.call('lindex', KEYS[2], -1);" +
		"local ttl;" +
		"if lastThreadId ~= false and lastThreadId ~= ARGV[2] then " +
		"ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);" +
		"else " +
		"ttl = redis.call('pttl', KEYS[1]);" +
		"end;" +
		"local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);" +
		"if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then " +
		"redis.call('rpush', KEYS[2], ARGV[2]);" +
		"end;" +
		"return ttl;"
	RedissonFairUnlockScript = "while true do " +
		"local firstThreadId2 = redis.call('lindex', KEYS[2], 0);" +
		"if firstThreadId2 == false then " +
		"break;" +
		"end; " +
		"local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));" +
		"if timeout <= tonumber(ARGV[4]) then " +
		"redis.call('zrem', KEYS[3], firstThreadId2); " +
		"redis.call('lpop', KEYS[2]); " +
		"else " +
		"break;" +
		"end; " +
		"end;" +
		"if (redis.call('exists', KEYS[1]) == 0) then " +
		"local nextThreadId = redis.call('lindex', KEYS[2], 0); " +
		"if nextThreadId ~= false then " +
		"redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]); " +
		"end; " +
		"return 1; " +
		"end;" +
		"if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then " +
		"return nil;" +
		"end; " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
		"if (counter > 0) then " +
		"redis.call('pexpire', KEYS[1], ARGV[2]); " +
		"return 0; " +
		"end; " +
		"redis.call('del', KEYS[1]); " +
		"local nextThreadId = redis.call('lindex', KEYS[2], 0); " +
		"if nextThreadId ~= false then " +
		"redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]); " +
		"end; " +
		"return 1; "
	RedissonFairAcquireFailedScript = "local queue = redis.call('lrange', KEYS[1], 0, -1);" +
		"local i = 1;" +
		"while i <= #queue and queue[i] ~= ARGV[1] do " +
		"i = i + 1;" +
		"end;" +
		"i = i + 1;" +
		"while i <= #queue do " +
		"redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i]);" +
		"i = i + 1;" +
		"end;" +
		"redis.call('zrem', KEYS[2], ARGV[1]);" +
		"redis.call('lrem', KEYS[1], 0, ARGV[1]);"
)

// Fair lock parameters: RedissonFairWait is the catalogue's tryLock
// waitTime, which the scripts take as the thread wait time (Redisson's
// own default, for lock() without a waitTime, is 5 min: 60000*5 ms);
// RedissonFairPoll is how often a waiter tries again (see
// RedissonFairLock).
const (
	RedissonFairWait = 5 * time.Second
	RedissonFairPoll = 100 * time.Millisecond
)

func init() {
	Register(locks.Info{
		ID: "redisson-fair",
		Design: "Redisson RFairLock: RLock's hash (field uuid:threadId = reentrancy count) plus a FIFO queue list redisson_lock_queue:{lock} and a timeout zset redisson_lock_timeout:{lock}; " +
			"acquire by Lua (drop queue heads whose timeout passed on the caller's clock; take the lock only if it is free and the queue is empty or headed by the caller, then lower every waiter's timeout by the wait time; else join the queue's tail with a timeout = the previous waiter's (or the lock's PTTL) + wait time), " +
			"tryLock(5 s, no leaseTime) retrying every 100 ms (a stand-in for the unlock message to the queue head), leaving the queue when it gives up (acquireFailed), the 30 s watchdog, release by Lua (HINCRBY -1, DEL at 0 and PUBLISH to the next waiter's channel)",
		Source: "“The SETNX command” (beside getLock: \"还可以getFairLock(), getReadWriteLock()\", this is getFairLock()), “Redis and ZooKeeper locks” (CSDN) v5 (the Redisson client); Redisson 3.16 RedissonFairLock tryLockInnerAsync (EVAL_LONG), unlockInnerAsync, acquireFailedAsync; RedissonBaseLock renewExpirationAsync, lockWatchdogTimeout 30 s",
		Weakness: "as redisson-lock: a pause longer than the 30 s lease stops the watchdog, the key expires and the next waiter gets the lock while the paused holder still writes; one node (or an async replica) is a single point of failure; no fencing token. " +
			"Fairness is approximate: every grant lowers each waiter's queue timeout by the wait time and every waiter that gives up lowers those behind it, so under churn a waiter's timeout passes, the next script drops it from the queue as stale and it rejoins behind later requests (measured: about 15% of grants in no-faults overtake an earlier waiting request); the timeouts are on the clients' own clocks (System.currentTimeMillis). " +
			"A release that does not take (it fails while the node is down, or a crash loses it) leaves the hold counted: the holder's next lock re-enters it, its unlock replies 0 (still held) without an error and leaves a fresh 30 s lease, and a holder that locks again within that keeps the lock for good while the queue waits (run.TestPhantomHold)",
		Topology:  locks.Single,
		TTL:       RedissonWatchdogTimeout,
		Fair:      true,
		Reentrant: true,
		Renews:    true,
		New: func(env locks.Env) (locks.Lock, error) {
			return NewRedissonFairLock(env, RedissonFairWait, 0), nil
		},
	})
}

// NewRedissonFairLock is Redisson's RFairLock (getFairLock(key), Redisson
// 3.16) as one client with one thread (holder uuid:1, the UUID drawn from
// Env.Rand), taken by tryLock(wait, lease) (lease 0: no leaseTime, the
// watchdog). It is a RedissonLock with the fair lock's scripts:
//
//	EVAL RedissonFairLockScript 3 key redisson_lock_queue:{key} redisson_lock_timeout:{key} leaseMs uuid:1 waitMs nowMs
//	  nil → held (free and first in the queue: count 1; ours: count+1)
//	  n   → not yet: queued (n: the wait the script estimates)
//	EVAL RedissonFairAcquireFailedScript 2 redisson_lock_queue:{key} redisson_lock_timeout:{key} uuid:1 waitMs
//	  (tryLock gave up: leave the queue, lower the timeouts behind)
//	EVAL RedissonRenewScript 1 key 30000 uuid:1                                     (watchdog)
//	EVAL RedissonFairUnlockScript 4 key redisson_lock_queue:{key} redisson_lock_timeout:{key} redisson_lock__channel:{key} 0 leaseMs uuid:1 nowMs
//	  1 → deleted (or already gone), 0 → count decremented, nil → not ours
//
// nowMs is the client's own clock (Env.Clock) in Unix ms, as Redisson's
// System.currentTimeMillis(): the queue's timeouts are on the clients'
// clocks. Redisson wakes only the queue's head, by publishing to its own
// channel (redisson_lock__channel:{key}:uuid:1) when the lock is
// released; miniredis cannot deliver that message deterministically here,
// so a waiter instead tries again every RedissonFairPoll (100 ms), or
// sooner when the script's estimate or its wait time runs out: a head
// learns of a release up to 100 ms late (the lock idles meanwhile), and
// the queue's order, which the script alone keeps, is Redisson's.
func NewRedissonFairLock(env locks.Env, wait, lease time.Duration) *RedissonLock {
	return &RedissonLock{Env: env, WaitTime: wait, LeaseTime: lease, WatchdogTimeout: RedissonWatchdogTimeout,
		id: uuidValue(env) + ":1", variant: redissonFair{wait: wait, every: RedissonFairPoll}}
}

// redissonFair is RedissonFairLock's scripts.
type redissonFair struct {
	wait, every time.Duration
}

// fairName is prefixName(prefix, key).
func fairName(prefix, key string) string {
	if strings.Contains(key, "{") {
		return prefix + ":" + key
	}
	return prefix + ":{" + key + "}"
}

func (f redissonFair) keys(key string) []string {
	return []string{key, fairName("redisson_lock_queue", key), fairName("redisson_lock_timeout", key)}
}

// waitMs is the scripts' thread wait time: tryLock's waitTime (Redisson
// uses threadWaitTime only when there is none).
func (f redissonFair) waitMs() int64 { return f.wait.Milliseconds() }

func (f redissonFair) try(ctx context.Context, l *RedissonLock) (bool, time.Duration, error) {
	return redissonReply(l.Env.Primary.Eval(ctx, RedissonFairLockScript, f.keys(l.Env.Key),
		l.lease().Milliseconds(), l.id, f.waitMs(), l.Env.Clock.Now().UnixMilli()).Int64())
}

func (redissonFair) renew(ctx context.Context, l *RedissonLock, lease time.Duration) (int64, error) {
	return l.Env.Primary.Eval(ctx, RedissonRenewScript, []string{l.Env.Key}, lease.Milliseconds(), l.id).Int64()
}

func (f redissonFair) unlock(ctx context.Context, l *RedissonLock) error {
	keys := append(f.keys(l.Env.Key), fairName("redisson_lock__channel", l.Env.Key))
	return redissonUnlockReply(l.Env.Primary.Eval(ctx, RedissonFairUnlockScript, keys,
		0, l.lease().Milliseconds(), l.id, l.Env.Clock.Now().UnixMilli()).Int64())
}

func (f redissonFair) failed(ctx context.Context, l *RedissonLock) {
	k := f.keys(l.Env.Key)
	// EVAL_VOID: its reply (nil) and errors change nothing for the caller.
	_ = l.Env.Primary.Eval(ctx, RedissonFairAcquireFailedScript, k[1:], l.id, f.waitMs()).Err()
}

func (f redissonFair) poll() time.Duration { return f.every }
func (redissonFair) read() bool            { return false }
