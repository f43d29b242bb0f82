package catalogue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// Redisson's RReadWriteLock scripts (Redisson 3.16: RedissonReadLock and
// RedissonWriteLock tryLockInnerAsync, unlockInnerAsync and, for the read
// lock, renewExpirationAsync; the write lock renews with RLock's
// RedissonRenewScript), sent by EVAL with the script's text. The lock is
// one hash: field "mode" (read | write) and one field per holder
// (uuid:threadId for a reader, uuid:threadId:write for the writer) with
// its reentrancy count. Each read acquisition also sets a timeout key
// {lock}:uuid:threadId:rwlock_timeout:N (N: that reader's count) with the
// lease, so the hash can be re-timed to the longest reader left when one
// leaves.
const (
	RedissonReadLockScript = "local mode = redis.call('hget', KEYS[1], 'mode'); " +
		"if (mode == false) then " +
		"redis.call('hset', KEYS[1], 'mode', 'read'); " +
		"redis.call('hset', KEYS[1], ARGV[2], 1); " +
		"redis.call('set', KEYS[2] .. ':1', 1); " +
		"redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then " +
		"local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"local key = KEYS[2] .. ':' .. ind;" +
		"redis.call('set', key, 1); " +
		"redis.call('pexpire', key, ARGV[1]); " +
		"local remainTime = redis.call('pttl', KEYS[1]); " +
		"redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); " +
		"return nil; " +
		"end;" +
		"return redis.call('pttl', KEYS[1]);"
	RedissonReadUnlockScript = "local mode = redis.call('hget', KEYS[1], 'mode'); " +
		"if (mode == false) then " +
		"redis.call('publish', KEYS[2], ARGV[1]); " +
		"return 1; " +
		"end; " +
		"local lockExists = redis.call('hexists', KEYS[1], ARGV[2]); " +
		"if (lockExists == 0) then " +
		"return nil;" +
		"end; " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); " +
		"if (counter == 0) then " +
		"redis.call('hdel', KEYS[1], ARGV[2]); " +
		"end;" +
		"redis.call('del', KEYS[3] .. ':' .. (counter+1)); " +
		"if (redis.call('hlen', KEYS[1]) > 1) then " +
		"local maxRemainTime = -3; " +
		"local keys = redis.call('hkeys', KEYS[1]); " +
		"for n, key in ipairs(keys) do " +
		"counter = tonumber(redis.call('hget', KEYS[1], key)); " +
		"if type(counter) == 'number' then " +
		"for i=counter, 1, -1 do " +
		"local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i); " +
		"maxRemainTime = math.max(remainTime, maxRemainTime);" +
		"end; " +
		"end; " +
		"end; " +
		"if maxRemainTime > 0 then " +
		"redis.call('pexpire', KEYS[1], maxRemainTime); " +
		"return 0; " +
		"end;" +
		"if mode == 'write' then " +
		"return 0;" +
		"end; " +
		"end; " +
		"redis.call('del', KEYS[1]); " +
		"redis.call('publish', KEYS[2], ARGV[1]); " +
		"return 1; "
	RedissonReadRenewScript = "local counter = redis.call('hget', KEYS[1], ARGV[2]); " +
		"if (counter ~= false) then " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"if (redis.call('hlen', KEYS[1]) > 1) then " +
		"local keys = redis.call('hkeys', KEYS[1]); " +
		"for n, key in ipairs(keys) do " +
		"counter = tonumber(redis.call('hget', KEYS[1], key)); " +
		"if type(counter) == 'number' then " +
		"for i=counter, 1, -1 do " +
		"redis.call('pexpire', KEYS[2] .. ':' .. key .. ':rwlock_timeout:' .. i, ARGV[1]); " +
		"end; " +
		"end; " +
		"end; " +
		"end; " +
		"return 1; " +
		"end; " +
		"return 0;"
	RedissonWriteLockScript = "local mode = redis.call('hget', KEYS[1], 'mode'); " +
		"if (mode == false) then " +
		"redis.call('hset', KEYS[1], 'mode', 'write'); " +
		"redis.call('hset', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"if (mode == 'write') then " +
		"if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"local currentExpire = redis.call('pttl', KEYS[1]); " +
		"redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); " +
		"return nil; " +
		"end; " +
		"end;" +
		"return redis.call('pttl', KEYS[1]);"
	RedissonWriteUnlockScript = "local mode = redis.call('hget', KEYS[1], 'mode'); " +
		"if (mode == false) then " +
		"redis.call('publish', KEYS[2], ARGV[1]); " +
		"return 1; " +
		"end;" +
		"if (mode == 'write') then " +
		"local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); " +
		"if (lockExists == 0) then " +
		"return nil;" +
		"else " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
		"if (counter > 0) then " +
		"redis.call('pexpire', KEYS[1], ARGV[2]); " +
		"return 0; " +
		"else " +
		"redis.call('hdel', KEYS[1], ARGV[3]); " +
		"if (redis.call('hlen', KEYS[1]) == 1) then " +
		"redis.call('del', KEYS[1]); " +
		"redis.call('publish', KEYS[2], ARGV[1]); " +
		"else " +
		"redis.call('hset', KEYS[1], 'mode', 'read'); " +
		"end; " +
		"return 1; " +
		"end; " +
		"end; " +
		"end; " +
		"return nil;"
)

func init() {
	Register(locks.Info{
		ID: "redisson-rw",
		Design: "Redisson RReadWriteLock: one hash per lock, field mode = read | write and a field per holder with its reentrancy count (uuid:threadId for readers, uuid:threadId:write for the writer); " +
			"a reader joins while mode is read (HINCRBY, a timeout key {lock}:uuid:threadId:rwlock_timeout:N with the lease, PEXPIRE the hash to the longer of its PTTL and the lease), the writer only when the hash is absent (or it holds it: reentrant, PEXPIRE PTTL + lease); " +
			"tryLock(500 ms, no leaseTime) as redisson-lock, a 30 s watchdog per mode (a reader's renewal re-times the hash and every reader's timeout keys), release by Lua (the last reader, or the writer, deletes the hash; a reader leaving re-times it to the longest timeout key left)",
		Source: "“The SETNX command” (beside getLock: \"还可以getFairLock(), getReadWriteLock()\", this is getReadWriteLock()), “Redis and ZooKeeper locks” (CSDN) v5 (the Redisson client); Redisson 3.16 RedissonReadLock / RedissonWriteLock tryLockInnerAsync, unlockInnerAsync, RedissonReadLock renewExpirationAsync, lockWatchdogTimeout 30 s",
		Weakness: "as redisson-lock for a writer: a pause longer than the 30 s lease stops its watchdog, the hash expires and a reader or writer gets in while the paused writer still writes; one node (or an async replica) is a single point of failure; no fencing token. " +
			"A reader's renewal re-times every reader's timeout key, so a live reader keeps a paused reader's field alive (the hash then outlives that reader's belief: a liveness cost, not a safety one)",
		Topology:  locks.Single,
		TTL:       RedissonWatchdogTimeout,
		Reentrant: true,
		Renews:    true,
		ReadWrite: true,
		New: func(env locks.Env) (locks.Lock, error) {
			return NewRedissonReadWriteLock(env, 500*time.Millisecond, 0), nil
		},
	})
}

// RedissonReadWriteLock is Redisson's RReadWriteLock (Redisson 3.16) as one
// client (one RedissonClient, UUID drawn from Env.Rand) with one thread
// (threadId 1): Read and Write are its readLock() and writeLock(), each a
// RedissonLock with its own scripts, reentrancy count and watchdog, on
// the same tryLock(WaitTime, LeaseTime) loop as redisson-lock (pub/sub is
// not simulated: a waiter sleeps out min(PTTL, wait left), see
// RedissonLock). Acquire is the write lock, AcquireRead the read lock;
// Release undoes the lock the lease came from (Lease.Read).
//
// Read lock (KEYS: the hash, the reader's timeout prefix
// {key}:uuid:1:rwlock_timeout; ARGV: lease ms, uuid:1, uuid:1:write):
//
//	EVAL RedissonReadLockScript 2 key {key}:uuid:1:rwlock_timeout leaseMs uuid:1 uuid:1:write
//	  nil → held (mode was absent or read, or this thread holds the write lock)
//	  n   → PTTL of a hash held in write mode by another
//	EVAL RedissonReadRenewScript 2 key {key} 30000 uuid:1            (watchdog)
//	EVAL RedissonReadUnlockScript 4 key redisson_rwlock:{key} {key}:uuid:1:rwlock_timeout {key} 0 uuid:1
//	  1 → hash deleted (or already gone: Redisson's unlock succeeds then),
//	  0 → other holders left, nil → not ours (ErrNotOwner)
//
// Write lock (ARGV holder uuid:1:write):
//
//	EVAL RedissonWriteLockScript 1 key leaseMs uuid:1:write
//	EVAL RedissonRenewScript 1 key 30000 uuid:1:write               (watchdog)
//	EVAL RedissonWriteUnlockScript 2 key redisson_rwlock:{key} 1 leaseMs uuid:1:write
//
// A lease's Value is the holder field (uuid:1 or uuid:1:write): the
// checker's nested holds follow it, and a read hold is shared.
type RedissonReadWriteLock struct {
	Read, Write *RedissonLock
}

// NewRedissonReadWriteLock is getReadWriteLock(key) with tryLock(wait,
// lease) on both locks; lease 0 means no leaseTime (the watchdog).
func NewRedissonReadWriteLock(env locks.Env, wait, lease time.Duration) *RedissonReadWriteLock {
	id := uuidValue(env) + ":1"
	mk := func(v redissonVariant, holder string) *RedissonLock {
		return &RedissonLock{Env: env, WaitTime: wait, LeaseTime: lease, WatchdogTimeout: RedissonWatchdogTimeout, id: holder, variant: v}
	}
	return &RedissonReadWriteLock{Read: mk(redissonRead{}, id), Write: mk(redissonWrite{}, id+":write")}
}

// Acquire implements Lock: the write lock.
func (rw *RedissonReadWriteLock) Acquire(ctx context.Context) (locks.Lease, error) {
	return rw.Write.Acquire(ctx)
}

// AcquireRead implements ReadWriteLock: the read lock.
func (rw *RedissonReadWriteLock) AcquireRead(ctx context.Context) (locks.Lease, error) {
	return rw.Read.Acquire(ctx)
}

// Release implements Lock: unlock of the lock l came from.
func (rw *RedissonReadWriteLock) Release(ctx context.Context, l locks.Lease) error {
	if l.Read {
		return rw.Read.Release(ctx, l)
	}
	return rw.Write.Release(ctx, l)
}

// rwChannel is the read-write lock's channel (prefixName("redisson_rwlock")).
func rwChannel(key string) string { return "redisson_rwlock:{" + key + "}" }

// rwTimeoutPrefix is getReadWriteTimeoutNamePrefix: suffixName(key,
// uuid:threadId) + ":rwlock_timeout"; rwKeyPrefix is what unlock and renew
// split it back to ({key}).
func rwTimeoutPrefix(key, id string) string { return rwKeyPrefix(key) + ":" + id + ":rwlock_timeout" }

func rwKeyPrefix(key string) string {
	if strings.Contains(key, "{") {
		return key
	}
	return "{" + key + "}"
}

// redissonReply turns a tryLock script's reply into held / the PTTL.
func redissonReply(ttl int64, err error) (bool, time.Duration, error) {
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	return false, time.Duration(ttl) * time.Millisecond, nil
}

// redissonUnlockReply turns an unlock script's reply into Release's error.
func redissonUnlockReply(n int64, err error) error {
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

// redissonRead is RedissonReadLock's scripts.
type redissonRead struct{}

func (redissonRead) try(ctx context.Context, l *RedissonLock) (bool, time.Duration, error) {
	key := l.Env.Key
	return redissonReply(l.Env.Primary.Eval(ctx, RedissonReadLockScript, []string{key, rwTimeoutPrefix(key, l.id)},
		l.lease().Milliseconds(), l.id, l.id+":write").Int64())
}

func (redissonRead) renew(ctx context.Context, l *RedissonLock, lease time.Duration) (int64, error) {
	return l.Env.Primary.Eval(ctx, RedissonReadRenewScript, []string{l.Env.Key, rwKeyPrefix(l.Env.Key)}, lease.Milliseconds(), l.id).Int64()
}

func (redissonRead) unlock(ctx context.Context, l *RedissonLock) error {
	key := l.Env.Key
	return redissonUnlockReply(l.Env.Primary.Eval(ctx, RedissonReadUnlockScript,
		[]string{key, rwChannel(key), rwTimeoutPrefix(key, l.id), rwKeyPrefix(key)}, 0, l.id).Int64())
}

func (redissonRead) failed(context.Context, *RedissonLock) {}
func (redissonRead) poll() time.Duration                   { return 0 }
func (redissonRead) read() bool                            { return true }

// redissonWrite is RedissonWriteLock's scripts (its holder id ends in
// ":write"; it renews with RLock's renewal script).
type redissonWrite struct{}

func (redissonWrite) try(ctx context.Context, l *RedissonLock) (bool, time.Duration, error) {
	return redissonReply(l.Env.Primary.Eval(ctx, RedissonWriteLockScript, []string{l.Env.Key}, l.lease().Milliseconds(), l.id).Int64())
}

func (redissonWrite) renew(ctx context.Context, l *RedissonLock, lease time.Duration) (int64, error) {
	return l.Env.Primary.Eval(ctx, RedissonRenewScript, []string{l.Env.Key}, lease.Milliseconds(), l.id).Int64()
}

func (redissonWrite) unlock(ctx context.Context, l *RedissonLock) error {
	key := l.Env.Key
	// LockPubSub.READ_UNLOCK_MESSAGE (1): readers and writers may go.
	return redissonUnlockReply(l.Env.Primary.Eval(ctx, RedissonWriteUnlockScript, []string{key, rwChannel(key)}, 1, l.lease().Milliseconds(), l.id).Int64())
}

func (redissonWrite) failed(context.Context, *RedissonLock) {}
func (redissonWrite) poll() time.Duration                   { return 0 }
func (redissonWrite) read() bool                            { return false }
