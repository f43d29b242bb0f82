package sim

// One test per fault kind, each proving the fault bites: the test runs a
// world, has a client observe the fault through real go-redis replies (and
// the engine's recorded events), and asserts on what was observed. Most
// worlds use a fixed one-way latency of 100 µs (no jitter) so round trips
// are exact and the timing assertions can be tight; the brackets used for
// expiry times hold for any latency.

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	evt "github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

const biteLatency = 100 * time.Microsecond // one way; a round trip is 200 µs

// biteConfig is a small world with a fixed, jitter-free latency.
func biteConfig(nodes, clients int, dur time.Duration) Config {
	cfg := Config{Seed: 7, Duration: dur, Clients: clients, Nodes: make([]NodeConfig, nodes)}
	cfg.Net.LatencyMin = biteLatency
	cfg.HistoryCommands = true // some tests read the nodes' command events
	return cfg
}

func runBite(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Run(TestBubble(t), cfg.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// --- program side: run a call and record it ------------------------------

const (
	resOK      = "ok"
	resNil     = "nil"
	resTimeout = "timeout"
	resErr     = "error"
)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// do runs f for p and records a "call" and a "ret" event (true time in T),
// the reply in Reply and the outcome class in Result.
func do(p *Proc, op string, f func() (string, error)) (string, error) {
	p.Record(Event{Kind: evt.KindCall, Op: evt.Op(op)})
	v, err := f()
	ev := Event{Kind: "ret", Op: evt.Op(op), Reply: v, Result: resOK}
	switch {
	case err == redis.Nil:
		ev.Result = resNil
	case isTimeout(err):
		ev.Result, ev.Detail = resTimeout, err.Error()
	case err != nil:
		ev.Result, ev.Detail = resErr, err.Error()
	}
	p.Record(ev)
	return v, err
}

func doGet(p *Proc, op string, c *redis.Client, key string) (string, error) {
	return do(p, op, func() (string, error) { return c.Get(p.Context(), key).Result() })
}

func doPing(p *Proc, op string, c *redis.Client) {
	do(p, op, func() (string, error) { return c.Ping(p.Context()).Result() })
}

// sleepUntil sleeps until true time at. Only for clients whose clock runs at
// true rate.
func sleepUntil(p *Proc, at time.Duration) {
	if d := int64(at) - p.TrueNow(); d > 0 {
		p.Sleep(time.Duration(d))
	}
}

// --- test side: read the recorded calls back from the history -------------

type opRec struct {
	Op, Result, Reply, Detail string
	Call, Ret                 int64
}

func (o opRec) rtt() time.Duration { return time.Duration(o.Ret - o.Call) }

func (o opRec) String() string {
	return fmt.Sprintf("%s [%v .. %v] %s %q %s", o.Op, time.Duration(o.Call), time.Duration(o.Ret), o.Result, o.Reply, o.Detail)
}

// opsOf pairs proc's call and ret events (a process's calls are sequential).
func opsOf(t *testing.T, res *Result, proc string) []opRec {
	t.Helper()
	var out []opRec
	var open *opRec
	for _, ev := range res.History {
		if ev.Proc != proc {
			continue
		}
		switch ev.Kind {
		case evt.KindCall:
			if open != nil {
				t.Fatalf("%s: call %q while %q is open", proc, ev.Op, open.Op)
			}
			open = &opRec{Op: string(ev.Op), Call: ev.T}
		case "ret": // this test's own kind
			if open == nil || open.Op != string(ev.Op) {
				t.Fatalf("%s: unpaired ret %q", proc, ev.Op)
			}
			open.Ret, open.Result, open.Reply, open.Detail = ev.T, string(ev.Result), ev.Reply, ev.Detail
			out = append(out, *open)
			open = nil
		}
	}
	return out
}

// named returns the ops called op, or whose name starts with op + "/".
func named(ops []opRec, op string) []opRec {
	var out []opRec
	for _, o := range ops {
		if o.Op == op || strings.HasPrefix(o.Op, op+"/") {
			out = append(out, o)
		}
	}
	return out
}

func one(t *testing.T, ops []opRec, op string) opRec {
	t.Helper()
	got := named(ops, op)
	if len(got) != 1 {
		t.Fatalf("want exactly one %q op, got %d: %v", op, len(got), got)
	}
	return got[0]
}

func engineEvents(res *Result, proc string, kind evt.Kind) []Event {
	var out []Event
	for _, ev := range res.History {
		if ev.Proc == proc && ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// expiry finds when a polled key disappeared: the last GET that still saw
// it and the first that did not. It fails on flapping (present again after
// absent) and on polls that never saw both states.
func expiry(t *testing.T, polls []opRec) (lastPresent, firstAbsent opRec) {
	t.Helper()
	seenAbsent := false
	for _, o := range polls {
		switch o.Result {
		case resOK:
			if seenAbsent {
				t.Fatalf("key flapped back: %v after %v", o, firstAbsent)
			}
			lastPresent = o
		case resNil:
			if !seenAbsent {
				firstAbsent, seenAbsent = o, true
			}
		default:
			t.Fatalf("poll failed: %v", o)
		}
	}
	if lastPresent.Op == "" || !seenAbsent {
		t.Fatalf("polls did not see the key both present and gone (%d polls)", len(polls))
	}
	return lastPresent, firstAbsent
}

// checkExpiry asserts that the key SET by set with a TTL expired after
// exactly after (true time) from the SET's execution: the last GET that saw
// it was called before set.Ret+after, the first that missed it returned
// after set.Call+after, and within slack of it. It returns the measured
// disappearance time (the first miss's return).
func checkExpiry(t *testing.T, name string, set opRec, polls []opRec, after, slack time.Duration) time.Duration {
	t.Helper()
	lp, fa := expiry(t, polls)
	lo, hi := set.Call+int64(after), set.Ret+int64(after)
	if lp.Call >= hi {
		t.Errorf("%s: key still present at %v, after its expiry window [%v, %v]", name, time.Duration(lp.Call), time.Duration(lo), time.Duration(hi))
	}
	if fa.Ret < lo {
		t.Errorf("%s: key gone at %v, before its expiry window [%v, %v]", name, time.Duration(fa.Ret), time.Duration(lo), time.Duration(hi))
	}
	if fa.Ret-lo > int64(slack) {
		t.Errorf("%s: key first seen gone at %v, more than %v after its expiry at %v", name, time.Duration(fa.Ret), slack, time.Duration(lo))
	}
	return time.Duration(fa.Ret)
}

func within(t *testing.T, what string, got, want, tol time.Duration) {
	t.Helper()
	if got < want-tol || got > want+tol {
		t.Errorf("%s = %v, want %v ± %v", what, got, want, tol)
	}
}

// --- 1. clock jump forward ------------------------------------------------

// A node whose clock jumps forward past a key's TTL has lost the key at
// once; the same key on a node without the jump is still there.
func TestFaultBiteClockJumpForward(t *testing.T) {
	cfg := biteConfig(2, 1, 2*time.Second)
	cfg.Faults = []faults.Fault{{Kind: faults.ClockJump, Start: time.Second, Targets: []string{"n0"}, Jump: 15 * time.Second}}
	cfg.Program = func(p *Proc) {
		for i, c := range p.Nodes() {
			do(p, fmt.Sprintf("set/n%d", i), func() (string, error) { return c.Set(p.Context(), "k", "v", 10*time.Second).Result() })
		}
		sleepUntil(p, 990*time.Millisecond)
		for i, c := range p.Nodes() {
			doGet(p, fmt.Sprintf("before/n%d", i), c, "k")
		}
		sleepUntil(p, 1010*time.Millisecond)
		for i, c := range p.Nodes() {
			doGet(p, fmt.Sprintf("after/n%d", i), c, "k")
		}
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	for _, name := range []string{"set/n0", "set/n1"} {
		if o := one(t, ops, name); o.Result != resOK {
			t.Fatalf("%v", o)
		}
	}
	for _, name := range []string{"before/n0", "before/n1", "after/n1"} {
		if o := one(t, ops, name); o.Result != resOK || o.Reply != "v" {
			t.Errorf("%s: want the key, got %v", name, o)
		}
	}
	after := one(t, ops, "after/n0")
	if after.Result != resNil {
		t.Errorf("after the +15s jump the 10s key must be gone on n0, got %v", after)
	}
	if len(engineEvents(res, "world", "fault")) != 1 {
		t.Errorf("the jump was not recorded")
	}
	t.Logf("n0 after jump (GET at %v): %s; n1 (no jump): %s %q", time.Duration(after.Call), after.Result, one(t, ops, "after/n1").Result, one(t, ops, "after/n1").Reply)
}

// --- 2. clock jump backward -----------------------------------------------

// A node whose clock jumps back 5 s keeps a 10 s key until ~15 s of true
// time; a node without the jump drops it at ~10 s.
func TestFaultBiteClockJumpBackward(t *testing.T) {
	cfg := biteConfig(2, 1, 16*time.Second)
	cfg.Faults = []faults.Fault{{Kind: faults.ClockJump, Start: 2 * time.Second, Targets: []string{"n0"}, Jump: -5 * time.Second}}
	cfg.Program = func(p *Proc) {
		for i, c := range p.Nodes() {
			do(p, fmt.Sprintf("set/n%d", i), func() (string, error) { return c.Set(p.Context(), "k", "v", 10*time.Second).Result() })
		}
		sleepUntil(p, 9500*time.Millisecond)
		for p.TrueNow() < int64(15500*time.Millisecond) {
			for i, c := range p.Nodes() {
				doGet(p, fmt.Sprintf("poll/n%d", i), c, "k")
			}
			p.Sleep(10 * time.Millisecond)
		}
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	slack := 12 * time.Millisecond // one poll period
	gone1 := checkExpiry(t, "n1 (no jump)", one(t, ops, "set/n1"), named(ops, "poll/n1"), 10*time.Second, slack)
	gone0 := checkExpiry(t, "n0 (jumped back 5s)", one(t, ops, "set/n0"), named(ops, "poll/n0"), 15*time.Second, slack)
	// At true 12 s the key is alive on n0 and gone on n1.
	for _, o := range named(ops, "poll") {
		if o.Call >= int64(12*time.Second) && o.Ret <= int64(12020*time.Millisecond) {
			want := map[string]string{"poll/n0": resOK, "poll/n1": resNil}[o.Op]
			if o.Result != want {
				t.Errorf("at ~12s: %v, want %s", o, want)
			}
		}
	}
	t.Logf("key gone on n1 (no jump) at %v, on n0 (jumped back 5s at 2s) at %v", gone1, gone0)
}

// --- 3. fast node clock ---------------------------------------------------

// A node whose clock runs 10% fast expires a 10 s key after 10/1.1 =
// 9.0909 s of true time; a node at true rate after 10 s. n2's clock gets
// the same drift from a clock-drift fault at t=1s: its key lives 1 s at
// true rate, then the remaining 9 s at 1.1×, so 1 + 9/1.1 = 9.1818 s.
func TestFaultBiteNodeDrift(t *testing.T) {
	cfg := biteConfig(3, 3, 10500*time.Millisecond)
	cfg.Nodes[0].DriftPPM = 100_000
	cfg.Faults = []faults.Fault{{Kind: faults.ClockDrift, Start: time.Second, Duration: 20 * time.Second, Targets: []string{"n2"}, DriftPPM: 100_000}}
	cfg.Program = func(p *Proc) {
		c := p.Nodes()[p.ID()] // client ci watches node ni
		do(p, "set", func() (string, error) { return c.Set(p.Context(), "k", "v", 10*time.Second).Result() })
		for p.TrueNow() < int64(10200*time.Millisecond) {
			v, _ := doGet(p, "poll", c, "k")
			if v == "" {
				return
			}
			if p.TrueNow() < int64(8500*time.Millisecond) {
				p.Sleep(10 * time.Millisecond)
			} else {
				p.Sleep(time.Millisecond) // poll finely near the expiry
			}
		}
	}
	res := runBite(t, cfg)
	const fast = 10 * time.Second * 1_000_000 / 1_100_000            // 9.0909 s
	const injected = time.Second + 9*time.Second*1_000_000/1_100_000 // 9.1818 s
	slack := 3 * time.Millisecond
	for _, tc := range []struct {
		proc, what string
		want       time.Duration
	}{
		{"c0", "n0 (+10% drift configured)", fast},
		{"c1", "n1 (no drift)", 10 * time.Second},
		{"c2", "n2 (+10% drift fault at 1s)", injected},
	} {
		ops := opsOf(t, res, tc.proc)
		set := one(t, ops, "set")
		gone := checkExpiry(t, tc.what, set, named(ops, "poll"), tc.want, slack)
		within(t, tc.what+": key gone at (true time)", gone, tc.want, slack)
		t.Logf("%s: 10s key SET at [%v, %v] first seen gone at %v (ideal %v after the SET)", tc.what, time.Duration(set.Call), time.Duration(set.Ret), gone, tc.want)
	}
}

// --- 4. crash under each persistence mode ---------------------------------

// Three nodes with persistence none, everysec and always crash at the same
// instant while a client per node INCRs a counter every 50 ms. After the
// restart, always has every acknowledged increment, everysec has exactly
// what was acknowledged by its last fsync (at t=2s, so it loses up to a
// second), and none has nothing.
func TestFaultBiteCrashPersistence(t *testing.T) {
	const crashAt, downFor = 2950 * time.Millisecond, time.Second
	cfg := biteConfig(3, 3, 4500*time.Millisecond)
	cfg.Nodes[0].Persistence = PersistNone
	cfg.Nodes[1].Persistence = PersistEverysec
	cfg.Nodes[2].Persistence = PersistAlways
	cfg.Faults = []faults.Fault{{Kind: faults.Crash, Start: crashAt, Duration: downFor, Targets: []string{"n0", "n1", "n2"}}}
	cfg.Program = func(p *Proc) {
		c := p.Nodes()[p.ID()]
		for p.TrueNow() < int64(crashAt+200*time.Millisecond) {
			do(p, "incr", func() (string, error) {
				v, err := c.Incr(p.Context(), "counter").Result()
				return strconv.FormatInt(v, 10), err
			})
			p.Sleep(50 * time.Millisecond)
		}
		sleepUntil(p, crashAt+downFor+100*time.Millisecond)
		doGet(p, "read", c, "counter")
	}
	res := runBite(t, cfg)

	if n := len(engineEvents(res, "n1", "crash")) + len(engineEvents(res, "n1", "restart")); n != 2 {
		t.Fatalf("n1 crash/restart events: %d, want 2", n)
	}
	type summary struct {
		lastAcked, restored int64
		failed              int
		ops                 []opRec
	}
	sum := func(proc string) summary {
		ops := opsOf(t, res, proc)
		s := summary{ops: ops}
		for _, o := range named(ops, "incr") {
			if o.Result == resOK {
				v, _ := strconv.ParseInt(o.Reply, 10, 64)
				if v != s.lastAcked+1 {
					t.Fatalf("%s: acked INCR %d after %d", proc, v, s.lastAcked)
				}
				s.lastAcked = v
			} else {
				if o.Call < int64(crashAt) {
					t.Fatalf("%s: INCR failed before the crash: %v", proc, o)
				}
				s.failed++
			}
		}
		r := one(t, ops, "read")
		switch r.Result {
		case resOK:
			s.restored, _ = strconv.ParseInt(r.Reply, 10, 64)
		case resNil:
		default:
			t.Fatalf("%s: read after restart failed: %v", proc, r)
		}
		if s.failed == 0 {
			t.Errorf("%s: no INCR failed while the node was down", proc)
		}
		return s
	}
	none, every, always := sum("c0"), sum("c1"), sum("c2")

	if none.restored != 0 || one(t, none.ops, "read").Result != resNil {
		t.Errorf("none: the counter must be gone after restart, read %v (last acked %d)", one(t, none.ops, "read"), none.lastAcked)
	}
	if always.restored != always.lastAcked {
		t.Errorf("always: restored %d, last acked %d: must lose nothing", always.restored, always.lastAcked)
	}
	// everysec: the last fsync before the crash was at t=2s.
	const fsyncAt = int64(2 * time.Second)
	var lo, hi int64 = 0, every.lastAcked
	for _, o := range named(every.ops, "incr") {
		v, _ := strconv.ParseInt(o.Reply, 10, 64)
		if o.Result == resOK && o.Ret <= fsyncAt {
			lo = max(lo, v) // executed before the fsync
		}
		if o.Result == resOK && o.Call >= fsyncAt {
			hi = min(hi, v-1) // executed after it
		}
	}
	if every.restored < lo || every.restored > hi {
		t.Errorf("everysec: restored %d, want the value at the last fsync (between %d and %d)", every.restored, lo, hi)
	}
	lost := every.lastAcked - every.restored
	if lost <= 0 || lost > 21 {
		t.Errorf("everysec: lost %d acknowledged increments, want between 1 and one second's worth (~20)", lost)
	}
	t.Logf("acked/restored: none %d/%d, everysec %d/%d (lost %d, %v of writes), always %d/%d",
		none.lastAcked, none.restored, every.lastAcked, every.restored, lost, time.Duration(lost)*50*time.Millisecond,
		always.lastAcked, always.restored)
}

// --- 5. failover under replication lag ------------------------------------

// runFailover: c0 takes a lock key on the primary at 100 ms; the primary
// crashes at 400 ms; Sentinel promotes n1 after DownAfter (500 ms); c0
// reads the key from the new primary at 2.5 s, after the replication lag
// would have elapsed. The GET must be served by n1.
func runFailover(t *testing.T, lag time.Duration) (set, get opRec, res *Result) {
	cfg := biteConfig(2, 1, 3*time.Second)
	cfg.Topology = Topology{Replicated: true, ReplLag: lag, DownAfter: 500 * time.Millisecond}
	cfg.Faults = []faults.Fault{{Kind: faults.Failover, Start: 400 * time.Millisecond, Duration: 10 * time.Second}}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 100*time.Millisecond)
		do(p, "set", func() (string, error) {
			return p.Primary().Set(p.Context(), "lock", "c0-token", 30*time.Second).Result()
		})
		sleepUntil(p, 2500*time.Millisecond)
		doGet(p, "get", p.Primary(), "lock")
	}
	res = runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	set, get = one(t, ops, "set"), one(t, ops, "get")
	if set.Result != resOK {
		t.Fatalf("lag %v: the lock SET was not acknowledged: %v", lag, set)
	}
	fo := engineEvents(res, SentinelName, "failover")
	if len(fo) != 1 || fo[0].Detail != "n0 -> n1" {
		t.Fatalf("lag %v: want one failover n0 -> n1, got %+v", lag, fo)
	}
	crash := engineEvents(res, "n0", "crash")
	if len(crash) != 1 || crash[0].T != int64(400*time.Millisecond) {
		t.Fatalf("lag %v: want n0 to crash at 400ms, got %+v", lag, crash)
	}
	if get.Call <= set.Ret+int64(lag) {
		t.Fatalf("lag %v: the GET at %v must come after the lag would have elapsed", lag, time.Duration(get.Call))
	}
	served := false
	for _, ev := range engineEvents(res, "n1", "cmd") {
		if ev.Peer == "c0" && ev.Cmd == "get lock" && ev.T >= get.Call && ev.T <= get.Ret {
			served = true
		}
	}
	if !served {
		t.Fatalf("lag %v: the GET after failover was not served by the new primary n1", lag)
	}
	t.Logf("lag %v: SET acked at %v, failover %s at %v, GET on new primary: %s %q", lag, time.Duration(set.Ret), fo[0].Detail, time.Duration(fo[0].T), get.Result, get.Reply)
	return set, get, res
}

func TestFaultBiteFailoverLag(t *testing.T) {
	t.Run("lag 2s loses the lock", func(t *testing.T) {
		set, get, _ := runFailover(t, 2*time.Second)
		if set.Ret+int64(2*time.Second) <= int64(400*time.Millisecond) {
			t.Fatalf("the crash must come before the lag elapses")
		}
		if get.Result != resNil {
			t.Errorf("the unreplicated lock key must be absent on the new primary, got %v", get)
		}
	})
	t.Run("lag 10ms keeps the lock", func(t *testing.T) {
		_, get, _ := runFailover(t, 10*time.Millisecond)
		if get.Result != resOK || get.Reply != "c0-token" {
			t.Errorf("the replicated lock key must survive the failover, got %v", get)
		}
	})
}

// A replica Sentinel cannot reach during a failover is repointed to the
// new primary once it can: the new primary's writes reach it and WAIT
// counts it. (Before the fix in sentinel.go it followed the dead old
// primary forever: WAIT 1 returned 0 after its timeout and the replica
// never saw new writes.)
func TestFaultBiteFailoverReconfiguresReplicas(t *testing.T) {
	cfg := biteConfig(3, 1, 4*time.Second)
	cfg.Topology = Topology{Replicated: true, DownAfter: 500 * time.Millisecond}
	cfg.Faults = []faults.Fault{
		{Kind: faults.Partition, Start: 300 * time.Millisecond, Duration: 1500 * time.Millisecond, From: []string{SentinelName}, To: []string{"n2"}},
		{Kind: faults.Failover, Start: 400 * time.Millisecond, Duration: 10 * time.Second},
	}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 3*time.Second)
		do(p, "set", func() (string, error) { return p.Primary().Set(p.Context(), "k", "v", 0).Result() })
		do(p, "wait", func() (string, error) {
			v, err := p.Primary().Wait(p.Context(), 1, 500*time.Millisecond).Result()
			return strconv.FormatInt(v, 10), err
		})
		doGet(p, "get/n2", p.Nodes()[2], "k")
	}
	res := runBite(t, cfg)
	if fo := engineEvents(res, SentinelName, "failover"); len(fo) != 1 || fo[0].Detail != "n0 -> n1" {
		t.Fatalf("want one failover n0 -> n1, got %+v", fo)
	}
	rc := engineEvents(res, SentinelName, "reconfigure")
	if len(rc) != 1 || rc[0].Detail != "n2 -> replica of n1" || rc[0].T < int64(1800*time.Millisecond) {
		t.Errorf("want n2 repointed to n1 after Sentinel reaches it again (1.8s), got %+v", rc)
	}
	ops := opsOf(t, res, "c0")
	if w := one(t, ops, "wait"); w.Reply != "1" || w.rtt() > 5*time.Millisecond {
		t.Errorf("WAIT 1 on the new primary: want 1 at once, got %v after %v", w, w.rtt())
	}
	if g := one(t, ops, "get/n2"); g.Result != resOK || g.Reply != "v" {
		t.Errorf("n2 must have the new primary's write: %v", g)
	}
	if len(rc) > 0 {
		t.Logf("n2 repointed at %v; WAIT 1 -> %s", time.Duration(rc[0].T), one(t, ops, "wait").Reply)
	}
}

// --- 6. partition -----------------------------------------------------------

// A GET from a client partitioned from its node fails with a net.Error
// timeout exactly ReadTimeout (300 ms) of true time after the call.
// Retries are off: go-redis retries timed-out reads by default, which would
// make the call last MaxRetries+1 timeouts.
func TestFaultBitePartitionTimeout(t *testing.T) {
	t.Run("no retries", func(t *testing.T) { partitionTimeout(t, -1) })
	t.Run("go-redis default retries", func(t *testing.T) { partitionTimeout(t, 0) })
}

func partitionTimeout(t *testing.T, retries int) {
	cfg := biteConfig(1, 1, 3500*time.Millisecond)
	cfg.Redis.ReadTimeout = 300 * time.Millisecond
	cfg.Redis.MaxRetries = retries
	cfg.Faults = []faults.Fault{{Kind: faults.Partition, Start: time.Second, Duration: 2 * time.Second, From: []string{"c0"}, To: []string{"n0"}}}
	cfg.Program = func(p *Proc) {
		c := p.Nodes()[0]
		sleepUntil(p, 500*time.Millisecond)
		doGet(p, "before", c, "k")
		sleepUntil(p, 1200*time.Millisecond)
		doGet(p, "during", c, "k")
		sleepUntil(p, 3200*time.Millisecond)
		doGet(p, "after", c, "k")
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	before, during, after := one(t, ops, "before"), one(t, ops, "during"), one(t, ops, "after")
	if before.Result != resNil || before.rtt() > time.Millisecond {
		t.Errorf("before the partition: %v", before)
	}
	if during.Result != resTimeout {
		t.Fatalf("during the partition: want a net.Error timeout, got %v", during)
	}
	if retries < 0 {
		within(t, "timeout after", during.rtt(), 300*time.Millisecond, time.Millisecond)
	} else if during.rtt() < 2*300*time.Millisecond {
		// go-redis retries a timed-out read on a fresh connection, whose
		// handshake times out in turn: the call outlasts one timeout.
		t.Errorf("with go-redis retries the call took %v, want at least two timeouts", during.rtt())
	}
	if after.Result != resNil {
		t.Errorf("after the heal: %v", after)
	}
	t.Logf("partitioned GET: %s after %v (%s)", during.Result, during.rtt(), during.Detail)
}

// --- 7. client pause --------------------------------------------------------

// A client paused for 5 s while it sleeps 1 s wakes only when the pause
// ends, and its local clock ran on through the pause.
func TestFaultBiteClientPause(t *testing.T) {
	cfg := biteConfig(1, 1, 7*time.Second)
	cfg.Faults = []faults.Fault{{Kind: faults.ClientPause, Start: time.Second, Duration: 5 * time.Second, Targets: []string{"c0"}}}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 500*time.Millisecond)
		do(p, "sleep", func() (string, error) {
			l0 := p.Now()
			p.Sleep(time.Second)
			return p.Now().Sub(l0).String(), nil
		})
		doGet(p, "get", p.Nodes()[0], "k")
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	s := one(t, ops, "sleep")
	pauseEnd := 6 * time.Second
	if time.Duration(s.Ret) < pauseEnd {
		t.Errorf("Sleep(1s) from %v returned at %v, before the pause ended at %v", time.Duration(s.Call), time.Duration(s.Ret), pauseEnd)
	}
	within(t, "sleep return", time.Duration(s.Ret), pauseEnd, time.Millisecond)
	local, err := time.ParseDuration(s.Reply)
	if err != nil {
		t.Fatal(err)
	}
	if local < 5*time.Second {
		t.Errorf("local clock advanced %v across the paused sleep, want ≥ 5s", local)
	}
	if g := one(t, ops, "get"); g.Result != resNil || g.Call < int64(pauseEnd) {
		t.Errorf("GET after the pause: %v", g)
	}
	t.Logf("Sleep(1s) at %v returned at %v; local clock advanced %v", time.Duration(s.Call), time.Duration(s.Ret), local)
}

// --- 8. node pause, delay, loss, client clock drift -------------------------

// A command sent to a paused node is answered only when the pause ends,
// and keys that expired meanwhile are gone by then.
func TestFaultBiteNodePause(t *testing.T) {
	cfg := biteConfig(1, 1, 3500*time.Millisecond)
	cfg.Redis.ReadTimeout = 5 * time.Second
	cfg.Faults = []faults.Fault{{Kind: faults.NodePause, Start: time.Second, Duration: 2 * time.Second, Targets: []string{"n0"}}}
	cfg.Program = func(p *Proc) {
		c := p.Nodes()[0]
		sleepUntil(p, 200*time.Millisecond)
		do(p, "set", func() (string, error) { return c.Set(p.Context(), "k", "v", time.Second).Result() }) // expires at 1.2s
		sleepUntil(p, 500*time.Millisecond)
		doPing(p, "ping/before", c)
		sleepUntil(p, 1100*time.Millisecond)
		doGet(p, "get/during", c, "k") // sent while the key is alive, answered after the pause
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	before, during := one(t, ops, "ping/before"), one(t, ops, "get/during")
	within(t, "RTT before the pause", before.rtt(), 2*biteLatency, time.Microsecond)
	pauseEnd := 3 * time.Second
	if time.Duration(during.Ret) < pauseEnd {
		t.Errorf("GET sent at %v into a node paused until %v was answered at %v", time.Duration(during.Call), pauseEnd, time.Duration(during.Ret))
	}
	within(t, "answer to the GET", time.Duration(during.Ret), pauseEnd+biteLatency, time.Microsecond)
	if during.Result != resNil {
		t.Errorf("the 1s key expired during the pause; the GET answered after it must miss it: %v", during)
	}
	var execAt int64 = -1
	for _, ev := range engineEvents(res, "n0", "cmd") {
		if ev.Cmd == "get k" {
			execAt = ev.T
		}
	}
	if execAt < int64(pauseEnd) || execAt > int64(pauseEnd+time.Microsecond) {
		t.Errorf("n0 ran the GET at %v, want at the end of the pause %v", time.Duration(execAt), pauseEnd)
	}
	t.Logf("GET sent at %v to a paused node: ran at %v, answered at %v (%s)", time.Duration(during.Call), time.Duration(execAt), time.Duration(during.Ret), during.Result)
}

// A WAIT pending on a primary that gets paused is answered only after the
// pause, though its timeout falls inside it. (Before the fix in node.go the
// paused node answered at the timeout.)
func TestFaultBiteNodePauseWait(t *testing.T) {
	cfg := biteConfig(2, 1, 4*time.Second)
	cfg.Topology = Topology{Replicated: true, DownAfter: 5 * time.Second}
	cfg.Faults = []faults.Fault{
		{Kind: faults.Partition, Start: 500 * time.Millisecond, Duration: 3 * time.Second, From: []string{"n0"}, To: []string{"n1"}},
		{Kind: faults.NodePause, Start: 1200 * time.Millisecond, Duration: 2 * time.Second, Targets: []string{"n0"}},
	}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, time.Second)
		do(p, "set", func() (string, error) { return p.Primary().Set(p.Context(), "k", "v", 0).Result() })
		do(p, "wait", func() (string, error) {
			v, err := p.Primary().Wait(p.Context(), 1, time.Second).Result() // times out at ~2s
			return strconv.FormatInt(v, 10), err
		})
	}
	res := runBite(t, cfg)
	w := one(t, opsOf(t, res, "c0"), "wait")
	if w.Result != resOK || w.Reply != "0" {
		t.Errorf("WAIT with the only replica partitioned: want 0, got %v", w)
	}
	pauseEnd := 3200 * time.Millisecond
	within(t, "WAIT answered at", time.Duration(w.Ret), pauseEnd+biteLatency, time.Microsecond)
	t.Logf("WAIT 1 1000 from %v (timeout due at ~2s, node paused 1.2s..3.2s) answered at %v", time.Duration(w.Call), time.Duration(w.Ret))
}

// A delay spike adds its delay to each direction it covers: two-way adds it
// twice to a round trip, one-way once.
func TestFaultBiteDelay(t *testing.T) {
	const spike = 100 * time.Millisecond
	cfg := biteConfig(1, 3, 3*time.Second)
	cfg.Faults = []faults.Fault{
		{Kind: faults.Delay, Start: time.Second, Duration: time.Second, From: []string{"c0"}, To: []string{"n0"}, Delay: spike},
		{Kind: faults.Delay, Start: time.Second, Duration: time.Second, From: []string{"c1"}, To: []string{"n0"}, OneWay: true, Delay: spike},
	}
	cfg.Program = func(p *Proc) {
		c := p.Nodes()[0]
		c.Ping(p.Context()) // the first command on a connection also pays for HELLO
		sleepUntil(p, 500*time.Millisecond)
		doPing(p, "before", c)
		sleepUntil(p, 1200*time.Millisecond)
		doPing(p, "during", c)
		sleepUntil(p, 2500*time.Millisecond)
		doPing(p, "after", c)
	}
	res := runBite(t, cfg)
	base := 2 * biteLatency
	for _, tc := range []struct {
		proc  string
		extra time.Duration
	}{{"c0", 2 * spike}, {"c1", spike}, {"c2", 0}} {
		ops := opsOf(t, res, tc.proc)
		before, during, after := one(t, ops, "before"), one(t, ops, "during"), one(t, ops, "after")
		within(t, tc.proc+" RTT before", before.rtt(), base, time.Microsecond)
		within(t, tc.proc+" RTT during the spike", during.rtt(), base+tc.extra, time.Microsecond)
		within(t, tc.proc+" RTT after", after.rtt(), base, time.Microsecond)
		t.Logf("%s: RTT before %v, during %v, after %v", tc.proc, before.rtt(), during.rtt(), after.rtt())
	}
}

// Loss makes segments wait for TCP retransmission timeouts (200 ms,
// doubling): round trips during loss grow by sums of RTO series.
func TestFaultBiteLoss(t *testing.T) {
	cfg := biteConfig(1, 1, 30*time.Second)
	cfg.Redis.ReadTimeout = 60 * time.Second
	cfg.Faults = []faults.Fault{{Kind: faults.Loss, Start: time.Second, Duration: 25 * time.Second, From: []string{"c0"}, To: []string{"n0"}, LossProb: 0.3}}
	cfg.Program = func(p *Proc) {
		c := p.Nodes()[0]
		c.Ping(p.Context()) // the first command on a connection also pays for HELLO
		for i := 0; i < 10; i++ {
			doPing(p, "before", c)
			p.Sleep(10 * time.Millisecond)
		}
		sleepUntil(p, time.Second)
		for i := 0; i < 30 && p.TrueNow() < int64(20*time.Second); i++ {
			doPing(p, "during", c)
			p.Sleep(10 * time.Millisecond)
		}
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	base := 2 * biteLatency
	for _, o := range named(ops, "before") {
		within(t, "RTT before loss", o.rtt(), base, time.Microsecond)
	}
	// The delay one direction can get from k losses: 0, 200, 600, 1400, ... ms.
	var oneWay []time.Duration
	for k, d, rto := 0, time.Duration(0), 200*time.Millisecond; k <= 8; k, rto = k+1, rto*2 {
		oneWay = append(oneWay, d)
		d += rto
	}
	possible := map[time.Duration]bool{}
	for _, a := range oneWay {
		for _, b := range oneWay {
			possible[a+b] = true
		}
	}
	during := named(ops, "during")
	if len(during) < 20 {
		t.Fatalf("only %d pings during the loss", len(during))
	}
	var hit int
	var total time.Duration
	var rtts []time.Duration
	for _, o := range during {
		if o.Result != resOK {
			t.Fatalf("ping during loss failed: %v", o)
		}
		extra := (o.rtt() - base).Round(time.Millisecond) // events at one instant are spaced by 1 ns
		if !possible[extra] {
			t.Errorf("RTT %v: extra %v is not a sum of retransmission timeouts", o.rtt(), extra)
		}
		if extra > 0 {
			hit++
		}
		total += o.rtt()
		rtts = append(rtts, o.rtt())
	}
	// With p=0.3 per direction, P(a round trip sees no loss) = 0.49.
	if hit < len(during)/4 {
		t.Errorf("only %d of %d round trips hit a retransmission", hit, len(during))
	}
	t.Logf("loss p=0.3: %d of %d round trips retransmitted; mean RTT %v (base %v); RTTs %v", hit, len(during), total/time.Duration(len(during)), base, rtts)
}

// A client clock running 10% fast ends Sleep(10s) after 9.0909 s of true
// time, whether the drift is configured (c1) or injected by a clock-drift
// fault (c0); a client at true rate (c2) after 10 s.
func TestFaultBiteClientDrift(t *testing.T) {
	cfg := biteConfig(1, 3, 13*time.Second)
	cfg.ClientDriftPPMs = []int64{0, 100_000, 0}
	cfg.Faults = []faults.Fault{{Kind: faults.ClockDrift, Start: time.Second, Duration: 20 * time.Second, Targets: []string{"c0"}, DriftPPM: 100_000}}
	cfg.Program = func(p *Proc) {
		p.Sleep(1500 * time.Millisecond)
		do(p, "sleep", func() (string, error) {
			l0 := p.Now()
			p.Sleep(10 * time.Second)
			return p.Now().Sub(l0).String(), nil
		})
	}
	res := runBite(t, cfg)
	const fast = 10 * time.Second * 1_000_000 / 1_100_000
	for _, tc := range []struct {
		proc string
		want time.Duration
	}{{"c0", fast}, {"c1", fast}, {"c2", 10 * time.Second}} {
		s := one(t, opsOf(t, res, tc.proc), "sleep")
		within(t, tc.proc+" true duration of Sleep(10s)", s.rtt(), tc.want, time.Microsecond)
		local, err := time.ParseDuration(s.Reply)
		if err != nil {
			t.Fatal(err)
		}
		within(t, tc.proc+" local duration of Sleep(10s)", local, 10*time.Second, time.Microsecond)
		t.Logf("%s: Sleep(10s) took %v true, %v local", tc.proc, s.rtt(), local)
	}
}

// A client's clock jump shows in its local time (p.Now steps by the jump)
// but, like Go's monotonic sleeps, does not move a sleep's end in true time.
func TestFaultBiteClientClockJump(t *testing.T) {
	cfg := biteConfig(1, 1, 3*time.Second)
	cfg.Faults = []faults.Fault{{Kind: faults.ClockJump, Start: time.Second, Targets: []string{"c0"}, Jump: -30 * time.Second}}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 500*time.Millisecond)
		do(p, "sleep", func() (string, error) {
			l0 := p.Now()
			p.Sleep(time.Second)
			return p.Now().Sub(l0).String(), nil
		})
	}
	res := runBite(t, cfg)
	s := one(t, opsOf(t, res, "c0"), "sleep")
	within(t, "true duration of Sleep(1s)", s.rtt(), time.Second, time.Microsecond)
	local, err := time.ParseDuration(s.Reply)
	if err != nil {
		t.Fatal(err)
	}
	within(t, "local clock change across Sleep(1s) with a -30s jump", local, time.Second-30*time.Second, time.Microsecond)
	t.Logf("Sleep(1s) across a -30s jump: %v true, local clock moved %v", s.rtt(), local)
}

// --- 9. WAIT ----------------------------------------------------------------

// With two replicas and one partitioned from the primary, WAIT 2 500
// returns 1 after 500 ms; WAIT 1 returns at once; after the heal WAIT 2
// returns 2 at once.
func TestFaultBiteWait(t *testing.T) {
	cfg := biteConfig(3, 1, 5*time.Second)
	cfg.Topology = Topology{Replicated: true, DownAfter: time.Second}
	cfg.Faults = []faults.Fault{{Kind: faults.Partition, Start: 500 * time.Millisecond, Duration: 3 * time.Second, From: []string{"n0"}, To: []string{"n2"}}}
	wait := func(p *Proc, op string, n int) {
		do(p, op, func() (string, error) {
			v, err := p.Primary().Wait(p.Context(), n, 500*time.Millisecond).Result()
			return strconv.FormatInt(v, 10), err
		})
	}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, time.Second)
		do(p, "set", func() (string, error) { return p.Primary().Set(p.Context(), "k", "v", 0).Result() })
		wait(p, "wait1/partitioned", 1)
		wait(p, "wait2/partitioned", 2)
		sleepUntil(p, 4*time.Second)
		do(p, "set2", func() (string, error) { return p.Primary().Set(p.Context(), "k2", "v", 0).Result() })
		wait(p, "wait2/healed", 2)
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	for _, tc := range []struct {
		op    string
		reply string
		lo    time.Duration
		hi    time.Duration
	}{
		{"wait1/partitioned", "1", 0, 5 * time.Millisecond},
		{"wait2/partitioned", "1", 500 * time.Millisecond, 501 * time.Millisecond},
		{"wait2/healed", "2", 0, 5 * time.Millisecond},
	} {
		o := one(t, ops, tc.op)
		if o.Result != resOK || o.Reply != tc.reply {
			t.Errorf("%s: want %s replicas, got %v", tc.op, tc.reply, o)
		}
		if o.rtt() < tc.lo || o.rtt() > tc.hi {
			t.Errorf("%s: took %v, want within [%v, %v]", tc.op, o.rtt(), tc.lo, tc.hi)
		}
		t.Logf("%s -> %s after %v", tc.op, o.Reply, o.rtt())
	}
}

// A replica's ack that no WAIT is waiting for is kept out of the event
// queue (Node.sendAck) but must act as the message it is, as it does as an
// event (EagerAcks): one that has arrived counts at the next WAIT, and one
// still on its way when a partition starts is held by the partition. The
// SET at 1 s reaches both replicas at once; n1's ack is back 200 µs later,
// n2's is slowed by a 2 s delay spike and arrives at about 3 s, inside a
// partition n0-n2 (2 s to 4 s) that holds it until the heal.
// (Either rule broken on purpose fails it: no flush before a fault event,
// no flush in WAIT.)
func TestFaultBiteLazyAcks(t *testing.T) {
	var events [2]int64
	for i, eager := range []bool{false, true} {
		cfg := biteConfig(3, 1, 6*time.Second)
		cfg.EagerAcks = eager
		cfg.Topology = Topology{Replicated: true, DownAfter: 10 * time.Second}
		cfg.Faults = []faults.Fault{
			{Kind: faults.Delay, Start: 900 * time.Millisecond, Duration: 300 * time.Millisecond, From: []string{"n2"}, To: []string{"n0"}, OneWay: true, Delay: 2 * time.Second},
			{Kind: faults.Partition, Start: 2 * time.Second, Duration: 2 * time.Second, From: []string{"n0"}, To: []string{"n2"}},
		}
		wait := func(p *Proc, op string, n int) {
			do(p, op, func() (string, error) {
				v, err := p.Primary().Wait(p.Context(), n, 100*time.Millisecond).Result()
				return strconv.FormatInt(v, 10), err
			})
		}
		cfg.Program = func(p *Proc) {
			sleepUntil(p, time.Second)
			do(p, "set", func() (string, error) { return p.Primary().Set(p.Context(), "k", "v", 0).Result() })
			sleepUntil(p, 3500*time.Millisecond)
			wait(p, "wait1", 1)
			wait(p, "wait2/held", 2)
			sleepUntil(p, 4500*time.Millisecond)
			wait(p, "wait2/healed", 2)
			// Both acks of a second write arrive before the WAIT and
			// before Sentinel's next look (every 100 ms): WAIT itself
			// must take them in.
			do(p, "set2", func() (string, error) { return p.Primary().Set(p.Context(), "k2", "v", 0).Result() })
			sleepUntil(p, 4520*time.Millisecond)
			wait(p, "wait2/pending", 2)
		}
		res := runBite(t, cfg)
		events[i] = res.Stats.Events
		ops := opsOf(t, res, "c0")
		for _, tc := range []struct {
			op     string
			reply  string
			lo, hi time.Duration
		}{
			{"wait1", "1", 0, time.Millisecond},
			{"wait2/held", "1", 100 * time.Millisecond, 101 * time.Millisecond},
			{"wait2/healed", "2", 0, time.Millisecond},
			{"wait2/pending", "2", 0, time.Millisecond},
		} {
			o := one(t, ops, tc.op)
			if o.Result != resOK || o.Reply != tc.reply || o.rtt() < tc.lo || o.rtt() > tc.hi {
				t.Errorf("eager acks %v: %s: want %s replicas within [%v, %v], got %v after %v", eager, tc.op, tc.reply, tc.lo, tc.hi, o, o.rtt())
			}
		}
	}
	if events[0] >= events[1] {
		t.Errorf("%d events with lazy acks, %d with eager: no ack was kept out of the queue", events[0], events[1])
	}
	t.Logf("events: %d lazy, %d eager", events[0], events[1])
}

// A partition that starts on the very instant a pending ack arrives: the
// queue runs the fault first (it was scheduled at the start, with a lower
// sequence number), so the ack is held, as its event would be; a
// nanosecond later the ack is in. The test finds that instant with eager
// acks (the WAIT's reply flips from 1 to 2), then demands the same replies
// with lazy acks on both sides of it.
func TestFaultBiteLazyAckTie(t *testing.T) {
	reply := func(start time.Duration, eager bool) string {
		cfg := biteConfig(3, 1, 3*time.Second)
		cfg.EagerAcks = eager
		cfg.Topology = Topology{Replicated: true, DownAfter: 10 * time.Second}
		cfg.Faults = []faults.Fault{{Kind: faults.Partition, Start: start, Duration: time.Second, From: []string{"n0"}, To: []string{"n2"}}}
		cfg.Program = func(p *Proc) {
			sleepUntil(p, time.Second)
			do(p, "set", func() (string, error) { return p.Primary().Set(p.Context(), "k", "v", 0).Result() })
			sleepUntil(p, 1500*time.Millisecond)
			do(p, "wait", func() (string, error) {
				v, err := p.Primary().Wait(p.Context(), 2, 100*time.Millisecond).Result()
				return strconv.FormatInt(v, 10), err
			})
		}
		return one(t, opsOf(t, runBite(t, cfg), "c0"), "wait").Reply
	}
	lo, hi := time.Second, 1400*time.Millisecond // n2's ack is held at lo, in at hi
	if reply(lo, true) != "1" || reply(hi, true) != "2" {
		t.Fatalf("eager acks: want WAIT 2 -> 1 with the partition from %v, 2 from %v; got %s, %s", lo, hi, reply(lo, true), reply(hi, true))
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if reply(mid, true) == "1" {
			lo = mid
		} else {
			hi = mid
		}
	}
	for start := lo - 2; start <= hi+2; start++ {
		if e, l := reply(start, true), reply(start, false); e != l {
			t.Errorf("partition from %v (the ack arrives at %v): WAIT 2 -> %s with eager acks, %s with lazy ones", start, lo, e, l)
		}
	}
	t.Logf("n2's ack arrives at %v: a partition starting then holds it, one starting at %v does not", lo, hi)
}

// --- the heal ends every fault ----------------------------------------------

// Faults that would outlast the safety phase end at the heal: a client
// paused past it (by time or at a pause point) resumes at the heal, a node
// paused past it answers at the heal, and a message a partition held
// arrives one latency after the heal. (Before the fix in queue.go they
// waited for the fault's own end, deep in the liveness phase.)
func TestHealEndsFaults(t *testing.T) {
	heal := 3 * time.Second
	cfg := biteConfig(2, 4, heal)
	cfg.Liveness = 20 * time.Second
	cfg.Redis.ReadTimeout = 10 * time.Second
	cfg.Redis.MaxRetries = -1
	long := 30 * time.Second
	cfg.Faults = []faults.Fault{
		{Kind: faults.ClientPause, Start: time.Second, Duration: long, Targets: []string{"c0"}},
		{Kind: faults.ClientPause, Start: time.Second, Duration: long, Targets: []string{"c1"}, At: "before-write"},
		{Kind: faults.NodePause, Start: time.Second, Duration: long, Targets: []string{"n0"}},
		{Kind: faults.Partition, Start: time.Second, Duration: long, From: []string{"c3"}, To: []string{"n1"}},
	}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 500*time.Millisecond)
		doPing(p, "ping/before", p.Nodes()[p.ID()%2]) // the connection exists before the faults
		// c0: a sleep the pause (from 1 s) overtakes.
		if p.Name() == "c0" {
			sleepUntil(p, 900*time.Millisecond)
			do(p, "paused", func() (string, error) { p.Sleep(time.Second); return "", nil })
			return
		}
		sleepUntil(p, 1500*time.Millisecond)
		switch p.Name() {
		case "c1":
			do(p, "paused", func() (string, error) { p.Point("before-write"); return "", nil })
		case "c2":
			doGet(p, "paused", p.Nodes()[0], "k")
		case "c3":
			doGet(p, "paused", p.Nodes()[1], "k")
		}
	}
	res := runBite(t, cfg)
	want := map[string]time.Duration{"c0": heal, "c1": heal, "c2": heal + biteLatency, "c3": heal + 2*biteLatency}
	for _, c := range []string{"c0", "c1", "c2", "c3"} {
		o := one(t, opsOf(t, res, c), "paused")
		if o.Result != resOK && o.Result != resNil {
			t.Errorf("%s: %v", c, o)
		}
		within(t, c+" resumed at", time.Duration(o.Ret), want[c], time.Millisecond)
		t.Logf("%s: a %v fault from 1s; the op called at %v returned at %v (heal at %v)", c, long, time.Duration(o.Call), time.Duration(o.Ret), heal)
	}
}
