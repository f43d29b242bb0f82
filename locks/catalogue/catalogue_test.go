package catalogue_test

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// seedDesigns are the seed designs this file covers.
var seedDesigns = []string{"setnx-del", "setnx-expire", "set-nx-del", "getset-expiry", "set-nx-getdel", "watchdog"}

// lockOps converts a run's history to the checker's ops, as the CLI does.
func lockOps(h []sim.Event) []checker.Op {
	var ops []checker.Op
	for _, ev := range h {
		if ev.Op != event.OpAcquire && ev.Op != event.OpRelease {
			continue
		}
		switch ev.Kind {
		case event.KindCall, event.KindOK, event.KindFail, event.KindUnknown:
			op := checker.Op{T: ev.T, Proc: ev.Proc, Kind: ev.Kind, Op: ev.Op, OpID: ev.OpID, Until: ev.Until, Detail: ev.Detail}
			if ev.Op == event.OpAcquire {
				op.Mode = ev.Result // a read-write lock's shared hold
			}
			ops = append(ops, op)
		}
	}
	return ops
}

// overlaps are the belief overlaps of a run.
func overlaps(res *sim.Result) []checker.Overlap {
	return checker.Overlaps(checker.Holds(lockOps(res.History), res.Stats.VirtualNS))
}

// events selects the history's events of one op and kind (proc "" = any).
func events(res *sim.Result, proc string, op event.Op, kind event.Kind) []sim.Event {
	var out []sim.Event
	for _, ev := range res.History {
		if ev.Op == op && ev.Kind == kind && (proc == "" || ev.Proc == proc) {
			out = append(out, ev)
		}
	}
	return out
}

func sec(t int64) time.Duration { return time.Duration(t).Round(time.Millisecond) }

// TestCatalogueNoFaults runs each design in the no-faults scenario: the run
// completes, someone acquires after the heal, and no two clients' belief
// intervals overlap. It also runs getset-expiry as “Practice: a Redis lock” (Tencent Cloud)'s aspect really
// is, running unlock (a plain DEL) in its finally block also when its spin
// gives up: a waiter then deletes the holder's lock without any fault, and
// that variant must show overlaps.
func TestCatalogueNoFaults(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 3
	}
	nofaults, err := scenarios.Get("no-faults")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range append(seedDesigns, "getset-expiry/give-up-del") {
		t.Run(id, func(t *testing.T) {
			info, err := catalogue.Get(strings.TrimSuffix(id, "/give-up-del"))
			if err != nil {
				t.Fatal(err)
			}
			if info.Topology != locks.Single || info.New == nil || info.Source == "" || info.Weakness == "" || info.Design == "" {
				t.Fatalf("incomplete catalogue entry: %+v", info)
			}
			expectOverlaps := strings.HasSuffix(id, "/give-up-del")
			if expectOverlaps {
				info = withGiveUpDel(info)
			}
			total, live, over := 0, 0, 0
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				cfg, err := nofaults.Build(info, seed, scenarios.Params{})
				if err != nil {
					t.Fatal(err)
				}
				res, err := sim.Run(sim.TestBubble(t), cfg)
				if err != nil {
					t.Fatalf("seed %d: run incomplete: %v", seed, err)
				}
				if res.TraceCapped {
					t.Fatalf("seed %d: history capped", seed)
				}
				oks := events(res, "", "acquire", "ok")
				n := 0
				for _, ev := range oks {
					if ev.T > int64(cfg.Duration) {
						n++
					}
				}
				if n == 0 {
					t.Errorf("seed %d: no acquisition after t=%v (liveness)", seed, cfg.Duration)
				}
				ov := overlaps(res)
				if len(ov) > 0 && !expectOverlaps {
					t.Errorf("seed %d: %d belief overlaps, first %s/%s at t=%v", seed, len(ov), ov[0].A, ov[0].B, sec(ov[0].Start))
				}
				total += len(oks)
				live += n
				over += len(ov)
			}
			if expectOverlaps && over == 0 {
				t.Errorf("no overlap in %d seeds: the spin's give-up DEL never bit", seeds)
			}
			t.Logf("%d seeds: %d acquisitions, %d in the liveness phase, %d overlaps", seeds, total, live, over)
		})
	}
}

// withGiveUpDel is getset-expiry with “Practice: a Redis lock” (Tencent Cloud)'s aspect's DEL when its spin
// gives up.
func withGiveUpDel(info locks.Info) locks.Info {
	del := info
	del.New = func(env locks.Env) (locks.Lock, error) {
		lk, err := info.New(env)
		if err != nil {
			return nil, err
		}
		lk.(*catalogue.GetSetExpiry).UnlockOnGiveUp = true
		return lk, nil
	}
	return del
}

// world is a small targeted world: one node n0, the given clients.
func world(clients int, duration, liveness time.Duration, prog sim.Program) sim.Config {
	return sim.Config{Seed: 1, Duration: duration, Liveness: liveness, Clients: clients,
		Nodes: []sim.NodeConfig{{Name: "n0"}}, Program: prog}.WithDefaults()
}

// perClient runs progs[name] on the client with that name, def elsewhere.
func perClient(progs map[string]sim.Program, def sim.Program) sim.Program {
	return func(p *sim.Proc) {
		if f, ok := progs[p.Name()]; ok {
			f(p)
			return
		}
		def(p)
	}
}

// after starts prog d later.
func after(d time.Duration, prog sim.Program) sim.Program {
	return func(p *sim.Proc) {
		p.Sleep(d)
		prog(p)
	}
}

// hold is a workload with a fixed critical section and a short think time.
func hold(d time.Duration) scenarios.Workload {
	return scenarios.Workload{Key: "lock", HoldMin: d, HoldMax: d, ThinkMin: 10 * time.Millisecond, ThinkMax: 500 * time.Millisecond}
}

func mustGet(t *testing.T, id string) locks.Info {
	t.Helper()
	info, err := catalogue.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func run(t *testing.T, cfg sim.Config) *sim.Result {
	t.Helper()
	res, err := sim.Run(sim.TestBubble(t), cfg)
	if err != nil {
		t.Fatalf("run incomplete: %v", err)
	}
	return res
}

// crashAt is a client that acquires once and dies at pause point pt, the
// first time it reaches it: it never releases.
func crashAt(info locks.Info, pt locks.PausePoint) sim.Program {
	return func(p *sim.Proc) {
		env := locks.Env{Nodes: locks.UniversalClients(p.Nodes()), Primary: p.Nodes()[0], Clock: p, Rand: p.Rand(), Client: p.Name(), Key: "lock", Hooks: locks.Hooks{Go: p.Go}}
		env.Hooks.At = func(at locks.PausePoint) {
			if at == pt {
				p.Record(sim.Event{Kind: "crash", Detail: string(at)})
				runtime.Goexit()
			}
		}
		lk, err := info.New(env)
		if err != nil {
			panic(err)
		}
		p.Record(sim.Event{Kind: "call", Op: "acquire", OpID: 1, Lock: info.ID})
		if _, err := lk.Acquire(p.Context()); err != nil {
			p.Record(sim.Event{Kind: "fail", Op: "acquire", OpID: 1, Lock: info.ID, Detail: err.Error()})
		}
	}
}

func crashed(res *sim.Result, proc string) int64 {
	for _, ev := range res.History {
		if ev.Proc == proc && ev.Kind == event.KindCrash {
			return ev.T
		}
	}
	return -1
}

// setnx-del: a holder that dies before its DEL locks everyone out for good;
// a holder that is paused locks everyone out for as long as the pause.
func TestSetNXDelDeadlock(t *testing.T) {
	info := mustGet(t, "setnx-del")
	others := after(500*time.Millisecond, scenarios.LockProgram(info, hold(100*time.Millisecond)))

	t.Run("crash", func(t *testing.T) {
		cfg := world(3, 60*time.Second, 30*time.Second, perClient(map[string]sim.Program{"c0": crashAt(info, locks.PointAfterCheck)}, others))
		res := run(t, cfg)
		if crashed(res, "c0") < 0 {
			t.Fatal("c0 never took the lock")
		}
		if ok := events(res, "", "acquire", "ok"); len(ok) > 0 {
			t.Fatalf("%s acquired at t=%v after the holder died: no deadlock", ok[0].Proc, sec(ok[0].T))
		}
		fails := events(res, "", "acquire", "fail")
		if len(fails) < 100 {
			t.Fatalf("only %d failed attempts", len(fails))
		}
		t.Logf("holder died holding the key; %d attempts over %v all failed, none in the liveness phase either", len(fails), cfg.Duration+cfg.Liveness)
	})

	t.Run("pause", func(t *testing.T) {
		// c0 takes the lock at once and holds 2 s; a 50 s pause freezes it
		// from t=1 s, with its DEL not sent.
		pause := faults.Fault{Kind: faults.ClientPause, Start: time.Second, Duration: 50 * time.Second, Targets: []string{"c0"}}
		cfg := world(3, 80*time.Second, 10*time.Second, perClient(map[string]sim.Program{"c0": scenarios.LockProgram(info, hold(2*time.Second))}, others))
		cfg.Faults = []faults.Fault{pause}
		res := run(t, cfg)
		var first int64 = -1
		for _, ev := range events(res, "", "acquire", "ok") {
			if ev.Proc != "c0" {
				first = ev.T
				break
			}
		}
		if first < int64(pause.End()) {
			t.Fatalf("another client acquired at t=%v, during the holder's pause", sec(first))
		}
		t.Logf("no one else acquired during the holder's %v pause; the first did at t=%v", pause.Duration, sec(first))
	})
}

// setnx-expire: a holder that dies between SETNX and EXPIRE leaves a key
// that never expires; dying after EXPIRE only blocks the others for 10 s.
func TestSetNXExpireGap(t *testing.T) {
	info := mustGet(t, "setnx-expire")
	others := after(500*time.Millisecond, scenarios.LockProgram(info, hold(100*time.Millisecond)))
	for _, tc := range []struct {
		at       locks.PausePoint
		deadlock bool
	}{{locks.PointAcquiring, true}, {locks.PointAfterCheck, false}} {
		t.Run(string(tc.at), func(t *testing.T) {
			cfg := world(3, 60*time.Second, 30*time.Second, perClient(map[string]sim.Program{"c0": crashAt(info, tc.at)}, others))
			res := run(t, cfg)
			died := crashed(res, "c0")
			if died < 0 {
				t.Fatal("c0 never reached the point")
			}
			oks := events(res, "", "acquire", "ok")
			switch {
			case tc.deadlock && len(oks) > 0:
				t.Fatalf("%s acquired at t=%v: the key expired", oks[0].Proc, sec(oks[0].T))
			case tc.deadlock:
				t.Logf("c0 died between SETNX and EXPIRE at t=%v: no acquisition in %v", sec(died), cfg.Duration+cfg.Liveness)
			case len(oks) == 0:
				t.Fatal("no one acquired after the key's EXPIRE")
			case oks[0].T < died+int64(info.TTL):
				t.Fatalf("acquired at t=%v, before the key could expire", sec(oks[0].T))
			default:
				t.Logf("c0 died after EXPIRE at t=%v: %s acquired at t=%v", sec(died), oks[0].Proc, sec(oks[0].T))
			}
		})
	}
}

// set-nx-del: “Redis and ZooKeeper locks” (CSDN)'s story. Request 1 needs 15 s on a 10 s key; request
// 2 (8 s) takes the expired lock; request 1's plain DEL deletes request 2's
// key and request 3 takes it while request 2 still holds it.
func TestSetNXDelDeletesOthersLock(t *testing.T) {
	info := mustGet(t, "set-nx-del")
	cfg := world(3, 30*time.Second, 5*time.Second, perClient(map[string]sim.Program{
		"c0": scenarios.LockProgram(info, hold(15*time.Second)),
	}, after(time.Second, scenarios.LockProgram(info, hold(8*time.Second)))))
	res := run(t, cfg)
	ov := overlaps(res)
	if len(ov) == 0 {
		t.Fatal("no belief overlap")
	}
	o := ov[0]
	if o.A == "c0" || o.B == "c0" {
		t.Fatalf("first overlap involves the expired holder c0: %+v", o)
	}
	rel := events(res, "c0", "release", "ok")
	if len(rel) == 0 || rel[0].T > o.Start {
		t.Fatalf("c0's DEL did not precede the overlap at t=%v", sec(o.Start))
	}
	t.Logf("c0's DEL at t=%v (its key had expired at 10 s) deleted another's key; %s and %s both held it from t=%v to t=%v",
		sec(rel[0].T), o.A, o.B, sec(o.Start), sec(o.End))
}

// set-nx-getdel: c0's GET sees its own value just before the key expires;
// its reply (and so its DEL) comes 2 s late, after another client took the
// key: the DEL deletes it and a third client gets in.
func TestSetNXGetDelDeletesOthersLock(t *testing.T) {
	info := mustGet(t, "set-nx-getdel")
	const h = 2900 * time.Millisecond // just under the 3 s TTL
	cfg := world(3, 20*time.Second, 5*time.Second, perClient(map[string]sim.Program{
		"c0": scenarios.LockProgram(info, hold(h)),
	}, after(500*time.Millisecond, scenarios.LockProgram(info, hold(h)))))
	cfg.Redis.ReadTimeout, cfg.Redis.WriteTimeout = 5*time.Second, 5*time.Second
	cfg.Faults = []faults.Fault{{Kind: faults.Delay, Start: 2500 * time.Millisecond, Duration: 10 * time.Second,
		From: []string{"n0"}, To: []string{"c0"}, OneWay: true, Delay: 2 * time.Second}}
	cfg.HistoryCommands = true
	res := run(t, cfg)
	// The node's log: c0's GET before the key expired, its DEL after.
	cmds := commands(res, "c0")
	get, del := find(cmds, "get lock"), find(cmds, "del lock")
	if get == nil || del == nil || del.Reply != ":1" {
		t.Fatalf("no GET then successful DEL from c0: %v", cmds)
	}
	ov := overlaps(res)
	if len(ov) == 0 {
		t.Fatal("no belief overlap")
	}
	o := ov[0]
	if o.A == "c0" || o.B == "c0" || o.Start < del.T {
		t.Fatalf("first overlap %+v is not after c0's DEL at t=%v", o, sec(del.T))
	}
	var victim *sim.Event
	for _, ev := range events(res, "", "acquire", "ok") {
		if ev.Proc != "c0" && ev.T > get.T && ev.T < del.T {
			victim = &ev
			break
		}
	}
	if victim == nil {
		t.Fatal("no one acquired between c0's GET and its DEL")
	}
	t.Logf("c0's GET at t=%v matched its value; the key expired and %s acquired at t=%v; c0's DEL at t=%v deleted it; %s and %s both held it from t=%v to t=%v",
		sec(get.T), victim.Proc, sec(victim.T), sec(del.T), o.A, o.B, sec(o.Start), sec(o.End))
}

// commands are the node commands a client sent, as the node logged them
// (Config.HistoryCommands).
func commands(res *sim.Result, client string) []sim.Event {
	var out []sim.Event
	for _, ev := range res.History {
		if ev.Kind == event.KindCmd && ev.Peer == client {
			out = append(out, ev)
		}
	}
	return out
}

func find(cmds []sim.Event, prefix string) *sim.Event {
	for i := range cmds {
		if strings.HasPrefix(strings.ToLower(cmds[i].Cmd), prefix) {
			return &cmds[i]
		}
	}
	return nil
}

// getset-expiry: c1's clock is 15 s ahead, so c0's lock (expiry 10 s on c0's
// clock) looks expired to it and c1's GETSET takes it over while c0 holds
// it. With synchronized clocks c1 waits.
func TestGetSetExpiryClockSkew(t *testing.T) {
	info := mustGet(t, "getset-expiry")
	prog := func(info locks.Info) sim.Program {
		return perClient(map[string]sim.Program{"c0": scenarios.LockProgram(info, hold(5*time.Second))},
			after(time.Second, scenarios.LockProgram(info, hold(time.Second))))
	}

	cfg := world(2, 20*time.Second, 5*time.Second, prog(info))
	cfg.ClientOffsets = []time.Duration{0, 15 * time.Second}
	res := run(t, cfg)
	ov := overlaps(res)
	if len(ov) == 0 {
		t.Fatal("no belief overlap with c1's clock 15 s ahead")
	}
	if ov[0].Start > int64(2*time.Second) {
		t.Fatalf("overlap at t=%v, not at c1's first attempt", sec(ov[0].Start))
	}
	t.Logf("clock skew: %s and %s both held it from t=%v to t=%v", ov[0].A, ov[0].B, sec(ov[0].Start), sec(ov[0].End))

	// Control: the same world with synchronized clocks has no overlap.
	cfg = world(2, 20*time.Second, 5*time.Second, prog(info))
	res = run(t, cfg)
	if ov := overlaps(res); len(ov) > 0 {
		t.Fatalf("synchronized clocks: overlap %+v", ov[0])
	}
	if len(events(res, "c1", "acquire", "ok")) == 0 {
		t.Fatal("synchronized clocks: c1 never acquired")
	}
}

// getset-expiry with “Practice: a Redis lock” (Tencent Cloud)'s aspect as written: its finally runs unlock
// (DEL) when the spin gives up after 22 tries, 50 ms apart, so a waiter
// deletes the holder's lock.
func TestGetSetExpiryGiveUpDeletes(t *testing.T) {
	info := withGiveUpDel(mustGet(t, "getset-expiry"))
	cfg := world(2, 20*time.Second, 5*time.Second, perClient(map[string]sim.Program{
		"c0": scenarios.LockProgram(info, hold(5*time.Second)),
	}, after(time.Second, scenarios.LockProgram(info, hold(time.Second)))))
	res := run(t, cfg)
	fails := events(res, "c1", "acquire", "fail")
	if len(fails) == 0 || !strings.Contains(fails[0].Detail, "spin gave up") {
		t.Fatal("c1's spin never gave up")
	}
	ov := overlaps(res)
	if len(ov) == 0 {
		t.Fatal("no belief overlap")
	}
	if ov[0].Start < fails[0].T || ov[0].Start > int64(5*time.Second) {
		t.Fatalf("overlap %+v is not after c1's give-up at t=%v while c0 holds", ov[0], sec(fails[0].T))
	}
	t.Logf("c1 gave up at t=%v (%s) and DELeted c0's key; %s and %s both held it from t=%v to t=%v",
		sec(fails[0].T), fails[0].Detail, ov[0].A, ov[0].B, sec(ov[0].Start), sec(ov[0].End))
}

// watchdogBeliefs are the belief intervals with renewals: an acquisition's
// deadline is its last renewal's.
func watchdogBeliefs(res *sim.Result) []checker.Hold {
	last := map[[2]any]int64{}
	for _, ev := range res.History {
		if ev.Kind == event.KindRenew {
			last[[2]any{ev.Proc, ev.OpID}] = ev.Until
		}
	}
	ops := lockOps(res.History)
	for i, o := range ops {
		if u, ok := last[[2]any{o.Proc, o.OpID}]; ok && o.Op == event.OpAcquire && o.Kind == event.KindOK {
			ops[i].Until = u
		}
	}
	return checker.Holds(ops, res.Stats.VirtualNS)
}

// firstRenewals are the renewals of c0's first acquisition.
func firstRenewals(res *sim.Result) []sim.Event {
	first := events(res, "c0", "acquire", "ok")[0].OpID
	var out []sim.Event
	for _, ev := range events(res, "c0", "acquire", "renew") {
		if ev.OpID == first {
			out = append(out, ev)
		}
	}
	return out
}

// watchdog: renewals keep a 60 s critical section's 30 s lease alive; a 40 s
// pause of the holder (longer than the lease) starves the watchdog, the key
// expires and another client takes it while the holder is still inside its
// critical section, which it learns only at release.
func TestWatchdogStarvedByPause(t *testing.T) {
	info := mustGet(t, "watchdog")
	prog := perClient(map[string]sim.Program{"c0": scenarios.LockProgram(info, hold(60*time.Second))},
		after(time.Second, scenarios.LockProgram(info, hold(time.Second))))

	t.Run("renewed", func(t *testing.T) {
		res := run(t, world(2, 90*time.Second, 10*time.Second, prog))
		renews := firstRenewals(res)
		if len(renews) != 5 {
			t.Fatalf("c0 renewed %d times in a 60 s hold", len(renews))
		}
		rel := events(res, "c0", "release", "call")
		for _, ev := range events(res, "c1", "acquire", "ok") {
			if ev.T < rel[0].T {
				t.Fatalf("c1 acquired at t=%v while c0's renewed lock was held", sec(ev.T))
			}
		}
		if r := events(res, "c0", "release", "ok"); len(r) == 0 || r[0].OpID != rel[0].OpID {
			t.Fatal("c0's release after 60 s did not find its key")
		}
		if ov := checker.Overlaps(watchdogBeliefs(res)); len(ov) > 0 {
			t.Fatalf("overlap %+v", ov[0])
		}
		t.Logf("c0 held 60 s on a 30 s lease: %d renewals, last until t=%v", len(renews), sec(renews[len(renews)-1].Until))
	})

	t.Run("paused", func(t *testing.T) {
		cfg := world(2, 90*time.Second, 10*time.Second, prog)
		pause := faults.Fault{Kind: faults.ClientPause, Start: 25 * time.Second, Duration: 40 * time.Second, Targets: []string{"c0"}}
		cfg.Faults = []faults.Fault{pause}
		res := run(t, cfg)
		renews := firstRenewals(res)
		if len(renews) == 0 {
			t.Fatal("c0 never renewed")
		}
		lastRenew := renews[len(renews)-1]
		if lastRenew.T > int64(pause.Start) {
			t.Fatalf("c0 renewed at t=%v, after its pause began", sec(lastRenew.T))
		}
		relCall := events(res, "c0", "release", "call")[0]
		var taken *sim.Event
		for _, ev := range events(res, "c1", "acquire", "ok") {
			if ev.T < relCall.T {
				taken = &ev
				break
			}
		}
		if taken == nil {
			t.Fatal("c1 never acquired while c0 was inside its critical section")
		}
		if taken.T < lastRenew.Until {
			t.Fatalf("c1 acquired at t=%v, before c0's lease (renewed until t=%v) ran out", sec(taken.T), sec(lastRenew.Until))
		}
		rel := events(res, "c0", "release", "fail")
		if len(rel) == 0 || rel[0].OpID != relCall.OpID || rel[0].Detail != locks.ErrNotOwner.Error() {
			t.Fatalf("c0's release did not find the key taken: %+v", rel)
		}
		if ov := checker.Overlaps(watchdogBeliefs(res)); len(ov) > 0 {
			t.Fatalf("belief overlap %+v", ov[0])
		}
		t.Logf("c0 paused at t=%v for %v; its lease (last renewed at t=%v) ran out at t=%v; c1 acquired at t=%v while c0 was still in its critical section; c0 learnt it at release (t=%v: %s)",
			sec(int64(pause.Start)), pause.Duration, sec(lastRenew.T), sec(lastRenew.Until), sec(taken.T), sec(rel[0].T), rel[0].Detail)
	})
}

// once is a client that acquires once, holds for d, releases and exits,
// recording both outcomes.
func once(info locks.Info, d time.Duration) sim.Program {
	return func(p *sim.Proc) {
		env := locks.Env{Nodes: locks.UniversalClients(p.Nodes()), Primary: p.Nodes()[0], Clock: p, Rand: p.Rand(), Client: p.Name(), Key: "lock", Hooks: locks.Hooks{Go: p.Go}}
		lk, err := info.New(env)
		if err != nil {
			panic(err)
		}
		lease, err := lk.Acquire(p.Context())
		if err != nil {
			p.Record(sim.Event{Kind: "fail", Op: "acquire", Detail: err.Error()})
			return
		}
		p.Record(sim.Event{Kind: "ok", Op: "acquire", Detail: lease.Value})
		p.Sleep(d)
		if err := lk.Release(p.Context(), lease); err != nil {
			p.Record(sim.Event{Kind: "fail", Op: "release", Detail: err.Error()})
			return
		}
		p.Record(sim.Event{Kind: "ok", Op: "release"})
	}
}

// TestCatalogueCommands checks the exact commands each design sends, as the
// node logs them (V: the lock's value, S: a script's SHA1).
func TestCatalogueCommands(t *testing.T) {
	const v, n, sha = `[0-9a-f]{20}`, `[0-9]+`, `[0-9a-f]{40}`
	for _, tc := range []struct {
		id   string
		hold time.Duration
		want []string
	}{
		{"setnx-del", time.Second, []string{`setnx lock c0 -> :1`, `del lock -> :1`}},
		{"setnx-expire", time.Second, []string{`setnx lock c0 -> :1`, `expire lock 10 -> :1`, `del lock -> :1`}},
		{"set-nx-del", time.Second, []string{`set lock c0 ex 10 nx -> \+OK`, `del lock -> :1`}},
		{"getset-expiry", time.Second, []string{`setnx lock ` + n + ` -> :1`, `pexpire lock 86400000 -> :1`, `del lock -> :1`}},
		{"set-nx-getdel", time.Second, []string{`set lock ` + v + ` ex 3 nx -> \+OK`, `get lock -> ` + v, `del lock -> :1`}},
		{"watchdog", 25 * time.Second, []string{`set lock ` + v + ` ex 30 nx -> \+OK`,
			`evalsha ` + sha + ` 1 lock ` + v + ` 30000 -> -NOSCRIPT.*`, `eval <script 110 bytes> 1 lock ` + v + ` 30000 -> :1`, // 10 s
			`evalsha ` + sha + ` 1 lock ` + v + ` 30000 -> :1`, // 20 s
			`evalsha ` + sha + ` 1 lock ` + v + ` -> -NOSCRIPT.*`, `eval <script 97 bytes> 1 lock ` + v + ` -> :1`}},
	} {
		t.Run(tc.id, func(t *testing.T) {
			cfg := world(1, 40*time.Second, 0, once(mustGet(t, tc.id), tc.hold))
			cfg.HistoryCommands = true
			res := run(t, cfg)
			if len(events(res, "c0", "release", "ok")) != 1 {
				t.Fatal("acquire/release did not succeed")
			}
			matchCommands(t, commands(res, "c0"), tc.want)
		})
	}

	// getset-expiry taking over an expired lock: c0's value says 10 s, it
	// holds 12 s; c1 comes at 11 s and holds 3 s; c0's DEL at 12 s deletes
	// c1's key, and c1's own DEL finds nothing.
	t.Run("getset-expiry/takeover", func(t *testing.T) {
		info := mustGet(t, "getset-expiry")
		cfg := world(2, 20*time.Second, 0, perClient(map[string]sim.Program{"c0": once(info, 12*time.Second)},
			after(11*time.Second, once(info, 3*time.Second))))
		cfg.HistoryCommands = true
		res := run(t, cfg)
		if len(events(res, "c1", "acquire", "ok")) != 1 {
			t.Fatal("c1 did not take the expired lock over")
		}
		matchCommands(t, commands(res, "c0"), []string{`setnx lock ` + n + ` -> :1`, `pexpire lock 86400000 -> :1`, `del lock -> :1`})
		matchCommands(t, commands(res, "c1"), []string{`setnx lock ` + n + ` -> :0`, `get lock -> ` + n,
			`getset lock ` + n + ` -> ` + n, `pexpire lock 86400000 -> :1`, `del lock -> :0`})
		if r := events(res, "c1", "release", "fail"); len(r) != 1 || r[0].Detail != locks.ErrNotOwner.Error() {
			t.Fatalf("c1's release: %+v", r)
		}
	})
}

func matchCommands(t *testing.T, cmds []sim.Event, want []string) {
	t.Helper()
	var got []string
	for _, c := range cmds {
		if !strings.HasPrefix(c.Cmd, "hello ") { // go-redis's connection handshake
			got = append(got, c.Cmd+" -> "+c.Reply)
		}
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = regexp.MustCompile(`^` + want[i] + `$`).MatchString(got[i])
	}
	if !ok {
		t.Fatalf("commands:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
