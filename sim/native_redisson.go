package sim

import (
	"strconv"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// Native Redisson scripts (locks/redisson*.go: RLock, RFairLock,
// RReadWriteLock). They are longer than the other native scripts and
// touch hashes, lists, sorted sets, self-built timeout keys and pub/sub,
// so they are written differently: the Go version replays the script's
// control flow and Lua's value conversions (tonumber, arithmetic on
// float64, numbers turned into strings as gopher-lua does), and sends
// every redis.call through miniredis's own command table (server.Dispatch
// on a private peer), exactly the path the interpreter's redis.call takes.
// What each command does to the keyspace, to TTLs, to key versions and to
// pub/sub subscribers (PUBLISH delivers as miniredis delivers) is
// therefore miniredis's own; only the Lua VM (~90 µs and ~700 allocations
// per EVAL) is gone.
//
// A script's redis.call raises an error on an error reply, and the
// interpreter then answers with a script error after whatever the script
// already wrote. The Go versions never reach that point: each one first
// checks, reading only, every condition under which a call of the script
// could fail (key types, integer counters, numeric arguments, queue
// entries without a timeout) and reports false, changing nothing, when
// one might; miniredis's interpreter then runs the script. A call that
// still fails afterwards is a bug in this file and panics (the
// differential test in native_test.go runs both paths on random states).

// --- RLock (locks.RedissonLockScript, RedissonUnlockScript, RedissonRenewScript)

func nativeRedissonLock(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) < 1 || len(argv) < 2 {
		return false
	}
	k, lease, id := keys[0], argv[0], argv[1]
	if _, ok := argInt(lease); !ok || !keyIs(m, k, "hash") || !hashCounterOK(m, k, id) {
		return false
	}
	if c.int("EXISTS", k) == 0 || c.int("HEXISTS", k, id) == 1 {
		c.int("HINCRBY", k, id, "1")
		c.int("PEXPIRE", k, lease)
		p.WriteNull()
		return true
	}
	p.WriteInt(int(c.int("PTTL", k)))
	return true
}

func nativeRedissonUnlock(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	k, ch, msg, lease, id, ok := unlockArgs(m, keys, argv)
	if !ok {
		return false
	}
	if c.int("HEXISTS", k, id) == 0 {
		p.WriteNull()
		return true
	}
	if c.int("HINCRBY", k, id, "-1") > 0 {
		c.int("PEXPIRE", k, lease)
		p.WriteInt(0)
		return true
	}
	c.int("DEL", k)
	c.int("PUBLISH", ch, msg)
	p.WriteInt(1)
	return true
}

func nativeRedissonRenew(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) < 1 || len(argv) < 2 {
		return false
	}
	k, lease, id := keys[0], argv[0], argv[1]
	if _, ok := argInt(lease); !ok || !keyIs(m, k, "hash") {
		return false
	}
	if c.int("HEXISTS", k, id) == 1 {
		c.int("PEXPIRE", k, lease)
		p.WriteInt(1)
		return true
	}
	p.WriteInt(0)
	return true
}

// --- RFairLock (locks.RedissonFairLockScript, RedissonFairUnlockScript,
// RedissonFairAcquireFailedScript)

// fairChecks are the checks both fair scripts that open with the queue
// loop share: KEYS[1..3] distinct and of the right types.
func fairChecks(m *miniredis.Miniredis, k, q, t string) bool {
	return distinct(k, q, t) && keyIs(m, k, "hash") && keyIs(m, q, "list") && keyIs(m, t, "zset")
}

// fairDropStale is the scripts' opening loop.
func fairDropStale(c *scriptCalls, q, t string, now float64) {
	for {
		head, ok := c.bulk("LINDEX", q, "0")
		if !ok {
			return
		}
		s, _ := c.bulk("ZSCORE", t, head)
		timeout, _ := luaToNumber(s)
		if timeout > now {
			return
		}
		c.int("ZREM", t, head)
		c.bulk("LPOP", q)
	}
}

func nativeRedissonFairLock(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) < 3 || len(argv) < 4 {
		return false
	}
	k, q, t := keys[0], keys[1], keys[2]
	lease, id := argv[0], argv[1]
	_, okLease := argInt(lease)
	wait, okWait := argInt(argv[2])
	now, okNow := argInt(argv[3])
	if !okLease || !okWait || !okNow || !fairChecks(m, k, q, t) || !hashCounterOK(m, k, id) || !fairQueueOK(m, q, t, now, true) {
		return false
	}
	fairDropStale(c, q, t, now)
	if c.int("EXISTS", k) == 0 && (c.int("EXISTS", q) == 0 || bulkIs(c, id, "LINDEX", q, "0")) {
		c.bulk("LPOP", q)
		c.int("ZREM", t, id)
		members := append([]string(nil), c.strings("ZRANGE", t, "0", "-1")...)
		for _, w := range members {
			c.bulk("ZINCRBY", t, luaNum(-wait), w)
		}
		c.int("HSET", k, id, "1")
		c.int("PEXPIRE", k, lease)
		p.WriteNull()
		return true
	}
	if c.int("HEXISTS", k, id) == 1 {
		c.int("HINCRBY", k, id, "1")
		c.int("PEXPIRE", k, lease)
		p.WriteNull()
		return true
	}
	if s, ok := c.bulk("ZSCORE", t, id); ok {
		timeout, _ := strconv.ParseFloat(s, 64) // an integer (fairQueueOK)
		p.WriteInt(int(timeout - wait - now))
		return true
	}
	var ttl float64
	if last, ok := c.bulk("LINDEX", q, "-1"); ok && last != id {
		s, _ := c.bulk("ZSCORE", t, last)
		v, _ := luaToNumber(s)
		ttl = v - now
	} else {
		ttl = float64(c.int("PTTL", k))
	}
	if c.int("ZADD", t, luaNum(ttl+wait+now), id) == 1 {
		c.int("RPUSH", q, id)
	}
	p.WriteInt(int(ttl))
	return true
}

// bulkIs is redis.call(...) == want for a bulk (or nil) reply.
func bulkIs(c *scriptCalls, want string, args ...string) bool {
	v, ok := c.bulk(args...)
	return ok && v == want
}

func nativeRedissonFairUnlock(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) < 4 || len(argv) < 4 {
		return false
	}
	k, q, t, prefix := keys[0], keys[1], keys[2], keys[3]
	msg, lease, id := argv[0], argv[1], argv[2]
	_, okLease := argInt(lease)
	now, okNow := argInt(argv[3])
	if !okLease || !okNow || !fairChecks(m, k, q, t) || !hashCounterOK(m, k, id) || !fairQueueOK(m, q, t, now, false) {
		return false
	}
	fairDropStale(c, q, t, now)
	notify := func() {
		if next, ok := c.bulk("LINDEX", q, "0"); ok {
			c.int("PUBLISH", prefix+":"+next, msg)
		}
	}
	if c.int("EXISTS", k) == 0 {
		notify()
		p.WriteInt(1)
		return true
	}
	if c.int("HEXISTS", k, id) == 0 {
		p.WriteNull()
		return true
	}
	if c.int("HINCRBY", k, id, "-1") > 0 {
		c.int("PEXPIRE", k, lease)
		p.WriteInt(0)
		return true
	}
	c.int("DEL", k)
	notify()
	p.WriteInt(1)
	return true
}

func nativeRedissonFairFailed(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) < 2 || len(argv) < 2 {
		return false
	}
	q, t, id := keys[0], keys[1], argv[0]
	wait, ok := argInt(argv[1])
	if !ok || !distinct(q, t) || !keyIs(m, q, "list") || !keyIs(m, t, "zset") {
		return false
	}
	if _, ok := zsetScores(m, t); !ok {
		return false // ZINCRBY of a score the native path does not vouch for
	}
	queue := append([]string(nil), c.strings("LRANGE", q, "0", "-1")...)
	i := 0
	for i < len(queue) && queue[i] != id {
		i++
	}
	for i++; i < len(queue); i++ {
		c.bulk("ZINCRBY", t, luaNum(-wait), queue[i])
	}
	c.int("ZREM", t, id)
	c.int("LREM", q, "0", id)
	p.WriteNull()
	return true
}

// --- RReadWriteLock (locks.RedissonReadLockScript, RedissonReadUnlockScript,
// RedissonReadRenewScript, RedissonWriteLockScript, RedissonWriteUnlockScript)

func nativeRedissonReadLock(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) < 2 || len(argv) < 3 {
		return false
	}
	k, prefix, lease, id, writer := keys[0], keys[1], argv[0], argv[1], argv[2]
	leaseN, ok := argInt(lease)
	if !ok || !keyIs(m, k, "hash") || !hashCounterOK(m, k, id) {
		return false
	}
	mode, ok := c.bulk("HGET", k, "mode")
	if !ok {
		c.int("HSET", k, "mode", "read")
		c.int("HSET", k, id, "1")
		c.call("SET", prefix+":1", "1")
		c.int("PEXPIRE", prefix+":1", lease)
		c.int("PEXPIRE", k, lease)
		p.WriteNull()
		return true
	}
	if mode == "read" || (mode == "write" && c.int("HEXISTS", k, writer) == 1) {
		ind := c.int("HINCRBY", k, id, "1")
		key := prefix + ":" + luaNum(float64(ind))
		c.call("SET", key, "1")
		c.int("PEXPIRE", key, lease)
		remain := float64(c.int("PTTL", k))
		c.int("PEXPIRE", k, luaNum(max(remain, leaseN)))
		p.WriteNull()
		return true
	}
	p.WriteInt(int(c.int("PTTL", k)))
	return true
}

// rwTimeouts calls f with each reader timeout key the read scripts walk:
// for every field of hash k whose value is a number n, the keys
// prefix:field:rwlock_timeout:i for i = n down to 1.
func rwTimeouts(c *scriptCalls, k, prefix string, f func(key string)) {
	fields := append([]string(nil), c.strings("HKEYS", k)...)
	for _, field := range fields {
		v, _ := c.bulk("HGET", k, field)
		n, isNum, _ := luaCounter(v)
		if !isNum {
			continue
		}
		for i := n; i >= 1; i-- {
			f(prefix + ":" + field + ":rwlock_timeout:" + luaNum(i))
		}
	}
}

func nativeRedissonReadUnlock(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) < 4 || len(argv) < 2 {
		return false
	}
	k, ch, timeoutPrefix, keyPrefix, msg, id := keys[0], keys[1], keys[2], keys[3], argv[0], argv[1]
	if !keyIs(m, k, "hash") || !hashCounterOK(m, k, id) || !hashCountersOK(m, k) {
		return false
	}
	mode, ok := c.bulk("HGET", k, "mode")
	if !ok {
		c.int("PUBLISH", ch, msg)
		p.WriteInt(1)
		return true
	}
	if c.int("HEXISTS", k, id) == 0 {
		p.WriteNull()
		return true
	}
	counter := c.int("HINCRBY", k, id, "-1")
	if counter == 0 {
		c.int("HDEL", k, id)
	}
	c.int("DEL", timeoutPrefix+":"+luaNum(float64(counter)+1))
	if c.int("HLEN", k) > 1 {
		maxRemain := -3.0
		rwTimeouts(c, k, keyPrefix, func(key string) {
			maxRemain = max(float64(c.int("PTTL", key)), maxRemain)
		})
		if maxRemain > 0 {
			c.int("PEXPIRE", k, luaNum(maxRemain))
			p.WriteInt(0)
			return true
		}
		if mode == "write" {
			p.WriteInt(0)
			return true
		}
	}
	c.int("DEL", k)
	c.int("PUBLISH", ch, msg)
	p.WriteInt(1)
	return true
}

func nativeRedissonReadRenew(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) < 2 || len(argv) < 2 {
		return false
	}
	k, keyPrefix, lease, id := keys[0], keys[1], argv[0], argv[1]
	if _, ok := argInt(lease); !ok || !keyIs(m, k, "hash") || !hashCountersOK(m, k) {
		return false
	}
	if _, ok := c.bulk("HGET", k, id); !ok {
		p.WriteInt(0)
		return true
	}
	c.int("PEXPIRE", k, lease)
	if c.int("HLEN", k) > 1 {
		rwTimeouts(c, k, keyPrefix, func(key string) {
			c.int("PEXPIRE", key, lease)
		})
	}
	p.WriteInt(1)
	return true
}

func nativeRedissonWriteLock(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) < 1 || len(argv) < 2 {
		return false
	}
	k, lease, id := keys[0], argv[0], argv[1]
	leaseN, ok := argInt(lease)
	if !ok || !keyIs(m, k, "hash") || !hashCounterOK(m, k, id) {
		return false
	}
	mode, ok := c.bulk("HGET", k, "mode")
	if !ok {
		c.int("HSET", k, "mode", "write")
		c.int("HSET", k, id, "1")
		c.int("PEXPIRE", k, lease)
		p.WriteNull()
		return true
	}
	if mode == "write" && c.int("HEXISTS", k, id) == 1 {
		c.int("HINCRBY", k, id, "1")
		cur := float64(c.int("PTTL", k))
		c.int("PEXPIRE", k, luaNum(cur+leaseN))
		p.WriteNull()
		return true
	}
	p.WriteInt(int(c.int("PTTL", k)))
	return true
}

func nativeRedissonWriteUnlock(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	k, ch, msg, lease, id, ok := unlockArgs(m, keys, argv)
	if !ok {
		return false
	}
	mode, ok := c.bulk("HGET", k, "mode")
	if !ok {
		c.int("PUBLISH", ch, msg)
		p.WriteInt(1)
		return true
	}
	if mode != "write" || c.int("HEXISTS", k, id) == 0 {
		p.WriteNull()
		return true
	}
	if c.int("HINCRBY", k, id, "-1") > 0 {
		c.int("PEXPIRE", k, lease)
		p.WriteInt(0)
		return true
	}
	c.int("HDEL", k, id)
	if c.int("HLEN", k) == 1 {
		c.int("DEL", k)
		c.int("PUBLISH", ch, msg)
	} else {
		c.int("HSET", k, "mode", "read")
	}
	p.WriteInt(1)
	return true
}

// unlockArgs reads the arguments RLock's and the write lock's unlock
// scripts share (KEYS: the hash, the channel; ARGV: the message, the
// lease, the holder field); ok false when the Go version cannot reproduce
// the script for them (a short call, a lease that is not an integer, a
// key that is not a hash, a holder count that is not an integer).
func unlockArgs(m *miniredis.Miniredis, keys, argv []string) (k, ch, msg, lease, id string, ok bool) {
	if len(keys) < 2 || len(argv) < 3 {
		return "", "", "", "", "", false
	}
	k, ch, msg, lease, id = keys[0], keys[1], argv[0], argv[1], argv[2]
	if _, ok := argInt(lease); !ok || !keyIs(m, k, "hash") || !hashCounterOK(m, k, id) {
		return "", "", "", "", "", false
	}
	return k, ch, msg, lease, id, true
}
