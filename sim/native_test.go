package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/faults"
)

// Script bodies exactly as their sources send them (the SHA table in
// native.go is checked against these).
var nativeBodies = map[string]string{
	"fenced-acquire":     "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) else return 0 end",
	"compare-and-delete": "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
	"redsync-delete": `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
`,
	"redsync-touch": `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
`,
	"redsync-touch-setnx": `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	elseif redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then
		return 1
	else
		return 0
	end
`,
	"redislock-release": "-- release.lua: => Arguments: [value]\n-- Release.lua deletes provided keys if all their values match the input. \n\n-- Check all keys values matches provided input.\nlocal values = redis.call(\"mget\", unpack(KEYS))\nfor i, _ in ipairs(KEYS) do\n\tif values[i] ~= ARGV[1] then\n\t\treturn false\n\tend\nend\n\n-- Delete keys.\nredis.call(\"del\", unpack(KEYS))\n\nreturn redis.status_reply(\"OK\")",
}

func TestNativeTableMatchesBodies(t *testing.T) {
	all := map[string]string{"redislock-obtain": redislockScripts["obtain.lua"], "redislock-refresh": redislockScripts["refresh.lua"]}
	for k, v := range nativeBodies {
		all[k] = v
	}
	for k, v := range redissons(t) {
		all[k] = v
	}
	if len(all) != len(nativeScripts) {
		t.Errorf("%d bodies for %d native scripts", len(all), len(nativeScripts))
	}
	for name, body := range all {
		s, ok := nativeScripts[sha1hex(body)]
		if !ok || s.name != name {
			t.Errorf("%s: SHA %s not in the native table as %q", name, sha1hex(body), name)
		}
	}
}

// startMini starts a listener-less miniredis and returns it with a Dispatch helper.
func startMini(t testing.TB) (*miniredis.Miniredis, func(args ...string) string) {
	m := miniredis.NewMiniRedis()
	c, err := m.Dial()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	t.Cleanup(m.Close)
	m.SetTime(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	return m, func(args ...string) string {
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		m.Server().Dispatch(server.NewPeer(bw), args)
		bw.Flush()
		return buf.String()
	}
}

// dumpState is the whole keyspace: every key's type, TTL and contents
// (strings, hashes field by field, lists in order, sorted sets with their
// scores' exact bits).
func dumpState(m *miniredis.Miniredis) string {
	var b strings.Builder
	keys := m.Keys()
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s type=%s ttl=%v", k, m.Type(k), m.TTL(k))
		switch m.Type(k) {
		case "string":
			v, _ := m.Get(k)
			fmt.Fprintf(&b, " v=%q", v)
		case "hash":
			fields, _ := m.HKeys(k)
			sort.Strings(fields)
			for _, f := range fields {
				fmt.Fprintf(&b, " %q=%q", f, m.HGet(k, f))
			}
		case "list":
			l, _ := m.List(k)
			fmt.Fprintf(&b, " %q", l)
		case "zset":
			ss, _ := m.SortedSet(k)
			members := make([]string, 0, len(ss))
			for mem := range ss {
				members = append(members, mem)
			}
			sort.Strings(members)
			for _, mem := range members {
				fmt.Fprintf(&b, " %q=%x", mem, math.Float64bits(ss[mem]))
			}
		default:
			fmt.Fprintf(&b, " (contents not compared)")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestNativeMatchesLua runs every native script and miniredis's Lua
// interpreter on the same random states and arguments and demands the same
// reply bytes, the same resulting keyspace and, for the Redisson scripts,
// the same messages delivered to pub/sub subscribers. Inputs include
// missing keys, keys of the wrong type, matching and mismatching values,
// prefixes, and TTL arguments that are negative, zero, huge or not numbers
// (where the native path must fall back, which is then also compared);
// redissonCase (native_redisson_test.go) builds the Redisson family's
// hashes, queues, timeout sets and timeout keys.
func TestNativeMatchesLua(t *testing.T) {
	bodies := map[string]string{}
	for k, v := range nativeBodies {
		bodies[k] = v
	}
	for k, v := range redissons(t) {
		bodies[k] = v
	}
	bodies["redislock-obtain"] = mustReadLib(t, "obtain.lua")
	bodies["redislock-refresh"] = mustReadLib(t, "refresh.lua")
	names := make([]string, 0, len(bodies))
	for n := range bodies {
		names = append(names, n)
	}
	sort.Strings(names)
	r := rand.New(rand.NewPCG(1, 2))
	values := []string{"v1", "v2", "v1-meta", "v", "", "tok12345"}
	ttls := []string{"1000", "1", "0", "-5", "abc", "99999999999999", "3000", "2.5"}
	iters := 150 * len(names)
	if testing.Short() {
		iters = 40 * len(names)
	}
	native, fell := map[string]int{}, map[string]int{}
	for i := 0; i < iters; i++ {
		name := names[r.IntN(len(names))]
		body := bodies[name]
		mA, doA := startMini(t)
		mB, doB := startMini(t)
		var args []string
		var nk int
		if _, ok := redissonBodies[name]; ok {
			var setup [][]string
			var keys, argv []string
			setup, keys, argv = redissonCase(r, name)
			for _, cmd := range setup {
				if a, b := doA(cmd...), doB(cmd...); a != b {
					t.Fatalf("setup %q: %q vs %q", cmd, a, b)
				}
			}
			nk = len(keys)
			args = append([]string{"EVAL", body, fmt.Sprint(nk)}, keys...)
			args = append(args, argv...)
		} else {
			args, nk = oldNativeCase(r, name, body, values, ttls, doA, doB)
		}
		subsA, subsB := subscribe(mA), subscribe(mB)
		// A: the interpreter.
		want := doA(args...)
		// B: the native path, as the engine calls it.
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		s := nativeScripts[sha1hex(body)]
		ok := s.run(mB, server.NewPeer(bw), args[3:3+nk], args[3+nk:])
		if !ok {
			fell[name]++
			mB.Server().Dispatch(server.NewPeer(bw), args)
		} else {
			native[name]++
		}
		bw.Flush()
		if got := buf.String(); got != want {
			t.Fatalf("%s %q: native reply %q, Lua reply %q (native path: %v)", name, args[2:], got, want, ok)
		}
		if a, b := dumpState(mA), dumpState(mB); a != b {
			t.Fatalf("%s %q: state differs (native path: %v)\nLua:\n%s\nnative:\n%s", name, args[2:], ok, a, b)
		}
		if a, b := subsA.done(), subsB.done(); a != b {
			t.Fatalf("%s %q: subscribers got different messages (native path: %v)\nLua:\n%s\nnative:\n%s", name, args[2:], ok, a, b)
		}
	}
	for _, name := range names {
		n, f := native[name], fell[name]
		share := 10 // the older scripts' cases are mostly odd inputs
		if _, ok := redissonBodies[name]; ok {
			share = 3
		}
		if n < (n+f)/share || n < 5 {
			t.Errorf("%s: native path taken only %d of %d times: the comparison is too weak", name, n, n+f)
		}
		t.Logf("%s: %d native, %d fell back to Lua", name, n, f)
	}
}

// oldNativeCase sets up a state on both servers and returns the EVAL and
// its key count for the scripts other than Redisson's.
func oldNativeCase(r *rand.Rand, name, body string, values, ttls []string, doA, doB func(...string) string) ([]string, int) {
	keys := []string{"k1", "k2", "k3"}[:1+r.IntN(2)]
	for _, k := range keys {
		switch r.IntN(4) {
		case 0: // missing
		case 1, 2:
			v := values[r.IntN(len(values))]
			for _, do := range []func(...string) string{doA, doB} {
				do("SET", k, v)
			}
			if r.IntN(2) == 0 {
				for _, do := range []func(...string) string{doA, doB} {
					do("PEXPIRE", k, "5000")
				}
			}
		case 3:
			for _, do := range []func(...string) string{doA, doB} {
				do("HSET", k, "f", "x")
			}
		}
	}
	nk := len(keys)
	if !strings.HasPrefix(name, "redislock") {
		nk = 1
	}
	if name == "fenced-acquire" {
		keys = []string{"k1", "k2"}
		if r.IntN(3) == 0 { // a counter that is not an integer, or has a TTL
			v := []string{"abc", "7", "-3", "9223372036854775807"}[r.IntN(4)]
			for _, do := range []func(...string) string{doA, doB} {
				do("SET", "k2", v)
				do("PEXPIRE", "k2", "9000")
			}
		}
		nk = 2
	}
	args := []string{"EVAL", body, fmt.Sprint(nk)}
	args = append(args, keys[:nk]...)
	args = append(args, values[r.IntN(len(values))])
	switch name {
	case "redsync-touch", "redsync-touch-setnx", "redislock-refresh", "fenced-acquire":
		args = append(args, ttls[r.IntN(len(ttls))])
	case "redislock-obtain":
		args = append(args, fmt.Sprint(r.IntN(5)), ttls[r.IntN(len(ttls))])
	}
	return args, nk
}

func mustReadLib(t *testing.T, name string) string {
	t.Helper()
	b, ok := redislockScripts[name]
	if !ok {
		t.Fatalf("no copy of redislock %s", name)
	}
	return b
}

// TestNoScriptAfterRestart: EVALSHA of a script a node loaded before a
// crash gets NOSCRIPT from the restarted node (the cache died with it), and
// go-redis's Script.Run then recovers with EVAL. The native path must not
// answer for a script the new incarnation never saw.
func TestNoScriptAfterRestart(t *testing.T) {
	body := nativeBodies["compare-and-delete"]
	sha := sha1hex(body)
	var before, after, afterEval string
	cfg := Config{Seed: 3, Duration: 10 * time.Second, Liveness: time.Second, Clients: 1,
		Nodes:  []NodeConfig{{Persistence: PersistAlways}},
		Faults: []faults.Fault{{Kind: faults.Crash, Start: 2 * time.Second, Duration: time.Second, Targets: []string{"n0"}}},
	}.WithDefaults()
	cfg.Program = func(p *Proc) {
		c := p.Nodes()[0]
		ctx := p.Context()
		c.Set(ctx, "k", "v", 0)
		c.ScriptLoad(ctx, body)
		before = fmt.Sprint(c.EvalSha(ctx, sha, []string{"k"}, "other").Result())
		p.Sleep(5 * time.Second) // crash at 2 s, restart at 3 s
		after = fmt.Sprint(c.EvalSha(ctx, sha, []string{"k"}, "v").Result())
		afterEval = fmt.Sprint(redis.NewScript(body).Run(ctx, c, []string{"k"}, "v").Result())
		for !p.Stopping() {
			p.Sleep(time.Second)
		}
	}
	res, err := Run(TestBubble(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if before != "0 <nil>" {
		t.Fatalf("before crash: EVALSHA gave %q, want 0", before)
	}
	if !strings.Contains(after, "NOSCRIPT") {
		t.Fatalf("after restart: EVALSHA gave %q, want NOSCRIPT", after)
	}
	if afterEval != "1 <nil>" {
		t.Fatalf("after restart: Script.Run gave %q, want 1 (key persisted with always)", afterEval)
	}
	if res.Stats.NativeEvals < 2 {
		t.Fatalf("native path ran %d times, want ≥ 2", res.Stats.NativeEvals)
	}
}
