package sim

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// Native scripts: miniredis builds a fresh Lua VM for every EVAL/EVALSHA
// (~90 µs, 700 allocations). The scripts the catalogue's locks and the
// libraries they wrap send are few and tiny, so the engine runs them in Go,
// keyed by SHA1, and falls back to the interpreter for anything else or for
// any input whose behaviour the Go version does not reproduce exactly (wrong
// key types, non-integer TTLs, non-positive TTLs). The script cache keeps
// Redis's semantics per node incarnation: EVALSHA of a script this
// incarnation never loaded still gets NOSCRIPT from miniredis, also after a
// restart. native_test.go runs both paths on random inputs and compares
// replies and resulting state byte for byte.

// nativeScript is a Go implementation of one Lua script. run reports false,
// before changing anything, when it cannot reproduce the script exactly.
type nativeScript struct {
	name string
	run  func(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool
}

var nativeScripts = map[string]nativeScript{
	// locks.CompareAndDelete (“The SETNX command”, “A Lua script against releasing an expired lock”, “Redis and ZooKeeper locks” (CSDN)).
	"e9f69f2beb755be68b5e456ee2ce9aadfbc4ebf4": {"compare-and-delete", nativeCAD},
	// locks.Fenced's acquire: SET NX PX, then INCR of the token counter.
	"0457559857c83b9c0baaaf74c543f2da263dc08b": {"fenced-acquire", nativeFencedAcquire},
	// redsync v4.18.0 deleteScript, touchScript, touchWithSetNXScript.
	"e950836ed1e694540c503ef9972b8de518044d3b": {"redsync-delete", nativeRedsyncDelete},
	"d75bb8b5bd13532ddedd17762e772346e39b321e": {"redsync-touch", nativeRedsyncTouch},
	"b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79": {"redsync-touch-setnx", nativeRedsyncTouchSetNX},
	// bsm/redislock v0.10.0 obtain.lua, release.lua, refresh.lua.
	"eb0c00d98f6f33b4262419a509002884540f30be": {"redislock-obtain", nativeRedislockObtain},
	"9470c810040e272ee6c579d8d4331aaf6332a7b1": {"redislock-release", nativeRedislockRelease},
	"5a22d7e8431313862816d4416b5e46dd70fc340d": {"redislock-refresh", nativeRedislockRefresh},
	// Redisson 3.16 as locks/redisson*.go send it (native_redisson.go).
	"dad0f8d619e548e04f21fb48d50be5034df3adae": {"redisson-lock", viaCalls("redisson-lock", nativeRedissonLock)},
	"3ffe249c16dee540ac8ab32e39bd408626b9aff7": {"redisson-unlock", viaCalls("redisson-unlock", nativeRedissonUnlock)},
	"8e19a1ddbdee9138df9f32a480c57addab4353d1": {"redisson-renew", viaCalls("redisson-renew", nativeRedissonRenew)},
	"762bfafa6be221431a0b668685dd15c926483619": {"redisson-fair-lock", viaCalls("redisson-fair-lock", nativeRedissonFairLock)},
	"35d32367b21753c39b55dc64d1906fee627cc9a8": {"redisson-fair-unlock", viaCalls("redisson-fair-unlock", nativeRedissonFairUnlock)},
	"d1ddef65ad80886b5d36e023c99930044ddd653a": {"redisson-fair-failed", viaCalls("redisson-fair-failed", nativeRedissonFairFailed)},
	"95553a6ff11176c18e71344e89d116b06fd6f753": {"redisson-read-lock", viaCalls("redisson-read-lock", nativeRedissonReadLock)},
	"f5469be4bfe5232d519471092634b3ee84e5ee6f": {"redisson-read-unlock", viaCalls("redisson-read-unlock", nativeRedissonReadUnlock)},
	"6563941ff57e01b8cf61e86907b80686438a2f74": {"redisson-read-renew", viaCalls("redisson-read-renew", nativeRedissonReadRenew)},
	"6306ba3bf1f563b284bed52d305fce615c6664d9": {"redisson-write-lock", viaCalls("redisson-write-lock", nativeRedissonWriteLock)},
	"baa634f6184acc1b8f145e810a0e0e00967a3cbe": {"redisson-write-unlock", viaCalls("redisson-write-unlock", nativeRedissonWriteUnlock)},
}

func sha1hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// maxSHAs bounds the world's cache of script SHA1s (a lock that builds a
// new script text per call would otherwise grow it without end).
const maxSHAs = 64

// scriptSHA is sha1hex(body), cached per world: Redisson sends its
// scripts by EVAL with their text (up to 2 KB) on every call.
func (w *World) scriptSHA(body string) string {
	if sha, ok := w.shas[body]; ok {
		return sha
	}
	sha := sha1hex(body)
	if w.shas == nil {
		w.shas = map[string]string{}
	}
	if len(w.shas) < maxSHAs {
		w.shas[strings.Clone(body)] = sha
	}
	return sha
}

// native runs EVAL/EVALSHA of a known script in Go. It reports false to
// let miniredis's interpreter handle the command.
func (n *Node) native(c *conn, cmd string, args []string) bool {
	if c.noNative || len(args) < 3 {
		return false
	}
	var sha string
	if cmd == "EVAL" {
		sha = n.w.scriptSHA(args[1])
	} else {
		sha = strings.ToLower(args[1])
		if !n.scripts[sha] {
			return false // miniredis answers NOSCRIPT
		}
	}
	s, ok := nativeScripts[sha]
	if !ok {
		return false
	}
	nk, err := strconv.Atoi(args[2])
	if err != nil || nk < 1 || 3+nk > len(args) {
		return false
	}
	if !s.run(n.m, c.peer, args[3:3+nk], args[3+nk:]) {
		return false
	}
	if cmd == "EVAL" && !n.scripts[sha] {
		// Keep miniredis's script cache the truth for SCRIPT EXISTS and
		// for EVALSHA that falls back.
		n.loadScript(args[1])
	}
	return true
}

// loadScript puts body into miniredis's script cache (once per incarnation).
func (n *Node) loadScript(body string) {
	p := server.NewPeer(bufio.NewWriter(discard{}))
	n.srv.Dispatch(p, []string{"SCRIPT", "LOAD", body})
	n.scripts[sha1hex(body)] = true
}

// noteScript records scripts miniredis cached through its own path.
func (n *Node) noteScript(cmd string, args []string) {
	switch {
	case cmd == "EVAL" && len(args) > 1:
		n.scripts[sha1hex(args[1])] = true
	case cmd == "SCRIPT" && len(args) > 2 && strings.EqualFold(args[1], "LOAD"):
		n.scripts[sha1hex(args[2])] = true
	case cmd == "SCRIPT" && len(args) > 1 && strings.EqualFold(args[1], "FLUSH"):
		n.scripts = map[string]bool{}
	}
}

// getString reads a string key: ok false if the key holds another type.
func getString(m *miniredis.Miniredis, k string) (v string, exists, ok bool) {
	v, err := m.Get(k)
	switch err {
	case nil:
		return v, true, true
	case miniredis.ErrKeyNotFound:
		return "", false, true
	default:
		return "", true, false
	}
}

// positiveMillis parses a PEXPIRE/PX argument the way the fast path
// supports: a positive integer that fits.
func positiveMillis(s string) (time.Duration, bool) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 || ms > 1<<40 {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end
func nativeCAD(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) != 1 || len(argv) < 1 {
		return false
	}
	v, exists, ok := getString(m, keys[0])
	if !ok {
		return false
	}
	if exists && v == argv[0] {
		m.Del(keys[0])
		p.WriteInt(1)
		return true
	}
	p.WriteInt(0)
	return true
}

func nativeRedsyncDelete(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) != 1 || len(argv) < 1 {
		return false
	}
	v, exists, ok := getString(m, keys[0])
	switch {
	case !ok:
		return false
	case !exists:
		p.WriteInt(-1)
	case v == argv[0]:
		m.Del(keys[0])
		p.WriteInt(1)
	default:
		p.WriteInt(0)
	}
	return true
}

func nativeRedsyncTouch(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) != 1 || len(argv) < 2 {
		return false
	}
	ttl, okTTL := positiveMillis(argv[1])
	v, exists, ok := getString(m, keys[0])
	if !ok {
		return false
	}
	if exists && v == argv[0] {
		if !okTTL {
			return false
		}
		m.SetTTL(keys[0], ttl)
		p.WriteInt(1)
		return true
	}
	p.WriteInt(0)
	return true
}

func nativeRedsyncTouchSetNX(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) != 1 || len(argv) < 2 {
		return false
	}
	ttl, okTTL := positiveMillis(argv[1])
	if !okTTL {
		return false
	}
	v, exists, ok := getString(m, keys[0])
	if !ok {
		return false
	}
	switch {
	case exists && v == argv[0]:
		m.SetTTL(keys[0], ttl)
		p.WriteInt(1)
	case !exists:
		m.Set(keys[0], argv[0])
		m.SetTTL(keys[0], ttl)
		p.WriteInt(1)
	default:
		p.WriteInt(0)
	}
	return true
}

// allMatch reports whether every key is a string equal to want (MGET gives
// nil for missing and non-string keys, which never equal want).
func allMatch(m *miniredis.Miniredis, keys []string, want string) bool {
	for _, k := range keys {
		v, err := m.Get(k)
		if err != nil || v != want {
			return false
		}
	}
	return true
}

func nativeRedislockRelease(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(argv) < 1 {
		return false
	}
	if !allMatch(m, keys, argv[0]) {
		p.WriteNull()
		return true
	}
	for _, k := range keys {
		m.Del(k)
	}
	p.WriteInline("OK")
	return true
}

func nativeRedislockRefresh(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(argv) < 2 {
		return false
	}
	ttl, okTTL := positiveMillis(argv[1])
	if !allMatch(m, keys, argv[0]) {
		p.WriteNull()
		return true
	}
	if !okTTL {
		return false
	}
	for _, k := range keys {
		m.SetTTL(k, ttl)
	}
	p.WriteInline("OK")
	return true
}

func nativeRedislockObtain(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(argv) < 3 {
		return false
	}
	offset, err := strconv.Atoi(argv[1])
	if err != nil || offset < 1 || offset > len(argv[0]) {
		return false
	}
	ttl, okTTL := positiveMillis(argv[2])
	if !okTTL {
		return false
	}
	seen := map[string]bool{}
	anyExists := false
	for _, k := range keys {
		if seen[k] {
			return false // duplicate keys: leave MSETNX's corner cases to Lua
		}
		seen[k] = true
		if m.Exists(k) {
			anyExists = true
		}
	}
	if anyExists {
		// canOverrideKeys: GETRANGE key 0 offset-1 == ARGV[1]:sub(1, offset)
		want := argv[0][:offset]
		for _, k := range keys {
			v, exists, ok := getString(m, k)
			if !ok {
				return false
			}
			if !exists {
				v = ""
			}
			if len(v) > offset {
				v = v[:offset]
			}
			if v != want {
				p.WriteNull()
				return true
			}
		}
	}
	for _, k := range keys {
		m.Set(k, argv[0])
		m.SetTTL(k, ttl)
	}
	p.WriteInline("OK")
	return true
}

// if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) else return 0 end
func nativeFencedAcquire(m *miniredis.Miniredis, p *server.Peer, keys, argv []string) bool {
	if len(keys) != 2 || len(argv) < 2 || keys[0] == keys[1] {
		return false
	}
	ttl, ok := positiveMillis(argv[1])
	if !ok {
		return false
	}
	if m.Exists(keys[0]) {
		p.WriteInt(0)
		return true
	}
	// INCR must succeed for the script to behave like this: the counter is
	// missing or a string holding an integer; anything else is Lua's job.
	next := int64(1)
	if m.Exists(keys[1]) {
		v, exists, okType := getString(m, keys[1])
		if !okType || !exists {
			return false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n >= 1<<62 || strconv.FormatInt(n, 10) != v {
			return false
		}
		next = n + 1
	}
	m.Set(keys[0], argv[0])
	m.SetTTL(keys[0], ttl)
	ttlCounter := m.TTL(keys[1])
	m.Set(keys[1], strconv.FormatInt(next, 10))
	if ttlCounter > 0 {
		m.SetTTL(keys[1], ttlCounter) // INCR keeps the counter's TTL; Set drops it
	}
	p.WriteInt(int(next))
	return true
}
