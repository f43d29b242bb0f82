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

// The plumbing of the native Redisson scripts (native_redisson.go): their
// redis.call()s through miniredis's command table (scriptCalls), Lua's
// value conversions, and the read-only checks each script makes before it
// changes anything.

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
