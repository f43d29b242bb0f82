package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/fpconv"
	"github.com/alicebob/miniredis/v2/server"
	lua "github.com/yuin/gopher-lua"
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

// scriptCalls runs one native script's redis.call()s.
type scriptCalls struct {
	srv  *server.Server
	buf  bytes.Buffer
	bw   *bufio.Writer
	peer *server.Peer
	args []string
	arr  []string
	name string
}

var callsPool = sync.Pool{New: func() any {
	c := &scriptCalls{}
	c.bw = bufio.NewWriterSize(&c.buf, 512)
	c.peer = server.NewPeer(c.bw)
	return c
}}

// viaCalls adapts a script written against scriptCalls to nativeScript.run.
func viaCalls(name string, f func(c *scriptCalls, m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool) func(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	return func(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
		c := callsPool.Get().(*scriptCalls)
		c.srv, c.name = m.Server(), name
		ok := f(c, m, p, keys, argv)
		c.srv = nil
		callsPool.Put(c)
		return ok
	}
}

// reply is one parsed RESP2 reply of a call.
type reply struct {
	kind byte // ':' integer, '$' bulk, '+' status, '*' array, 0 nil
	n    int64
	s    string
	arr  []string // '*': valid until the next call
}

// call dispatches one command and parses its reply; an error reply panics
// (see the file's comment: the checks before the first call rule it out).
func (c *scriptCalls) call(args ...string) reply {
	c.buf.Reset()
	c.srv.Dispatch(c.peer, args)
	c.bw.Flush()
	b := c.buf.Bytes()
	r, rest, ok := c.parse(b)
	if !ok || len(rest) != 0 {
		panic(fmt.Sprintf("native script %s: %q replied %q", c.name, args, b))
	}
	return r
}

func (c *scriptCalls) parse(b []byte) (reply, []byte, bool) {
	line, rest, ok := bytes.Cut(b, []byte("\r\n"))
	if !ok || len(line) == 0 {
		return reply{}, nil, false
	}
	switch line[0] {
	case ':':
		n, err := strconv.ParseInt(string(line[1:]), 10, 64)
		return reply{kind: ':', n: n}, rest, err == nil
	case '+':
		return reply{kind: '+', s: string(line[1:])}, rest, true
	case '$':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return reply{}, nil, false
		}
		if n < 0 {
			return reply{}, rest, true
		}
		if len(rest) < n+2 {
			return reply{}, nil, false
		}
		return reply{kind: '$', s: string(rest[:n])}, rest[n+2:], true
	case '*':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil || n < 0 {
			return reply{}, nil, false
		}
		c.arr = c.arr[:0]
		for i := 0; i < n; i++ {
			var e reply
			e, rest, ok = c.parse(rest)
			if !ok || e.kind != '$' {
				return reply{}, nil, false
			}
			c.arr = append(c.arr, e.s)
		}
		return reply{kind: '*', arr: c.arr}, rest, true
	}
	return reply{}, nil, false // '-': an error reply
}

func (c *scriptCalls) int(args ...string) int64 {
	r := c.call(args...)
	if r.kind != ':' {
		panic(fmt.Sprintf("native script %s: %q replied %v, not an integer", c.name, args, r))
	}
	return r.n
}

// bulk is a bulk reply: ok false for nil (Lua's false).
func (c *scriptCalls) bulk(args ...string) (string, bool) {
	r := c.call(args...)
	switch r.kind {
	case '$':
		return r.s, true
	case 0:
		return "", false
	}
	panic(fmt.Sprintf("native script %s: %q replied %v, not a bulk string", c.name, args, r))
}

func (c *scriptCalls) strings(args ...string) []string {
	r := c.call(args...)
	if r.kind != '*' {
		panic(fmt.Sprintf("native script %s: %q replied %v, not an array", c.name, args, r))
	}
	return r.arr
}

// --- Lua's conversions ------------------------------------------------------

// luaNum is a Lua number turned into a string (concatenation, a number
// argument of redis.call): gopher-lua's LNumber.String.
func luaNum(f float64) string { return lua.LNumber(f).String() }

// luaToNumber is gopher-lua's tonumber(s) of a string, base 10: false for
// nil.
func luaToNumber(s string) (float64, bool) {
	str := strings.Trim(s, " \n\t")
	if strings.Contains(str, ".") {
		v, err := strconv.ParseFloat(str, 64)
		return v, err == nil
	}
	base := 10
	if strings.HasPrefix(strings.ToLower(str), "0x") {
		base, str = 16, str[2:]
	}
	v, err := strconv.ParseInt(str, base, 64)
	return float64(v), err == nil
}

// argInt accepts a numeric argument the native path handles: a decimal
// integer written the canonical way and small enough that Lua's float64
// arithmetic on it is exact. tonumber, Lua's string coercion and
// miniredis's integer parsing then all read the same value.
func argInt(s string) (float64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v > 1<<50 || v < -(1<<50) || strconv.FormatInt(v, 10) != s {
		return 0, false
	}
	return float64(v), true
}

// maxCounter bounds the counters the read-write scripts loop over (for
// i=counter,1,-1): larger ones are left to the interpreter.
const maxCounter = 1000

// luaCounter is tonumber(HGET field) as the read-write scripts use it:
// isNum false for a non-number ('read', 'write'), ok false when the
// native path does not handle the value.
func luaCounter(v string) (n float64, isNum, ok bool) {
	n, isNum = luaToNumber(v)
	if !isNum {
		return 0, false, true
	}
	return n, true, n == math.Trunc(n) && n <= maxCounter && n >= -(1<<50)
}

// --- read-only checks ---------------------------------------------------------

// keyIs reports whether k is missing or of type typ.
func keyIs(m *miniredis.Miniredis, k, typ string) bool {
	t := m.Type(k)
	return t == "" || t == typ
}

// hashCounterOK: if hash k has field f, its value is an integer HINCRBY
// accepts and the native path handles.
func hashCounterOK(m *miniredis.Miniredis, k, f string) bool {
	if m.Type(k) != "hash" {
		return true
	}
	fields, _ := m.HKeys(k)
	for _, g := range fields {
		if g == f {
			_, ok := argInt(m.HGet(k, f))
			return ok
		}
	}
	return true
}

// hashCountersOK: every value of hash k is a non-number or a counter the
// read-write scripts' loops handle.
func hashCountersOK(m *miniredis.Miniredis, k string) bool {
	if m.Type(k) != "hash" {
		return true
	}
	fields, _ := m.HKeys(k)
	for _, f := range fields {
		if _, _, ok := luaCounter(m.HGet(k, f)); !ok {
			return false
		}
	}
	return true
}

// zsetScores reads sorted set k's scores as the scripts see them through
// tonumber(ZSCORE): ok false unless every one is an integer the native
// path handles.
func zsetScores(m *miniredis.Miniredis, k string) (map[string]float64, bool) {
	if m.Type(k) != "zset" {
		return nil, true
	}
	ss, err := m.SortedSet(k)
	if err != nil {
		return nil, false
	}
	for _, s := range ss {
		v, ok := luaToNumber(fpconv.Dtoa(s))
		if !ok || v != math.Trunc(v) || v > 1<<50 || v < -(1<<50) {
			return nil, false
		}
	}
	return ss, true
}

// fairQueueOK replays, reading only, the fair scripts' opening loop (drop
// queue heads whose timeout is at or before now): ok false if a head it
// reaches has no timeout (tonumber(false) <= now: a Lua error). all
// additionally demands a timeout for every entry the loop leaves, which
// the lock script may read (its last entry's).
func fairQueueOK(m *miniredis.Miniredis, q, t string, now float64, all bool) bool {
	scores, ok := zsetScores(m, t)
	if !ok {
		return false
	}
	if m.Type(q) != "list" {
		return true
	}
	list, err := m.List(q)
	if err != nil {
		return false
	}
	removed := map[string]bool{}
	i := 0
	for ; i < len(list); i++ {
		s, ok := scores[list[i]]
		if !ok || removed[list[i]] {
			return false
		}
		if s > now {
			break
		}
		removed[list[i]] = true
	}
	if all {
		for ; i < len(list); i++ {
			if _, ok := scores[list[i]]; !ok || removed[list[i]] {
				return false
			}
		}
	}
	return true
}

func distinct(keys ...string) bool {
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[i] == keys[j] {
				return false
			}
		}
	}
	return true
}

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
