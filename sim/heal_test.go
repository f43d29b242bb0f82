package sim

// The heal's promises, one test each: whatever outlasts the safety phase
// (a crash of a node or a service, overlapping crashes, a failover with a
// split brain) is over at the heal, under the rules of the fault (a crash
// loses what its persistence mode loses), and the engine refuses to go on
// when its own invariants do not hold. Partitions and node pauses that
// outlast the phase are TestHealEndsFaults.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
)

// echoService answers every command with OK.
type echoService struct{}

func (echoService) Exec(_ int64, _ string, _ []string, r Reply, _ func(Event)) { r.WriteOK() }

// A node and the storage service crash at 1 s for 30 s; the heal at 3 s
// restarts both. The node has no persistence: its key stays lost (a crash
// is a crash), but from the heal on every client reaches every process.
func TestHealRestartsCrashedNodesAndServices(t *testing.T) {
	heal := 3 * time.Second
	for _, pm := range []Persistence{PersistNone, PersistAlways} {
		t.Run(string(pm), func(t *testing.T) {
			cfg := biteConfig(1, 2, heal)
			cfg.Liveness = 2 * time.Second
			cfg.Nodes[0].Persistence = pm
			cfg.Services = []ServiceConfig{{Name: "store", New: func() Service { return echoService{} }}}
			cfg.Faults = []faults.Fault{{Kind: faults.Crash, Start: time.Second, Duration: 30 * time.Second, Targets: []string{"n0", "store"}}}
			cfg.Program = func(p *Proc) {
				if p.ID() == 0 {
					do(p, "set", func() (string, error) { return p.Nodes()[0].Set(p.Context(), "k", "v", 0).Result() })
				}
				sleepUntil(p, 2*time.Second)
				doPing(p, "down/node", p.Nodes()[0])
				sleepUntil(p, heal+100*time.Millisecond)
				doPing(p, "up/node", p.Nodes()[0])
				do(p, "up/store", func() (string, error) { return p.Service(0).Do(p.Context(), "ANY").Text() })
				doGet(p, "get", p.Nodes()[0], "k")
			}
			res := runBite(t, cfg)
			for _, c := range []string{"c0", "c1"} {
				ops := opsOf(t, res, c)
				if o := one(t, ops, "down/node"); o.Result == resOK {
					t.Errorf("%s: the node answered while crashed: %v", c, o)
				}
				for _, op := range []string{"up/node", "up/store"} {
					if o := one(t, ops, op); o.Result != resOK {
						t.Errorf("%s: after the heal: %v", c, o)
					}
				}
				g := one(t, ops, "get")
				want := map[Persistence]string{PersistNone: resNil, PersistAlways: resOK}[pm]
				if g.Result != want {
					t.Errorf("%s: GET after a restart under %s: %v, want %s", c, pm, g, want)
				}
			}
			for _, proc := range []string{"n0", "store"} {
				rs := engineEvents(res, proc, "restart")
				if len(rs) != 1 || rs[0].T != int64(heal) || rs[0].Detail != "heal" {
					t.Errorf("%s: want one restart at the heal (%v), got %+v", proc, heal, rs)
				}
			}
		})
	}
}

// Two crashes of one node combine: n0 is down from 1 s until the longer
// one ends at 4 s, not when the shorter one (1.5 s .. 2 s) ends.
func TestHealOverlappingCrashesCombine(t *testing.T) {
	cfg := biteConfig(1, 1, 6*time.Second)
	cfg.Faults = []faults.Fault{
		{Kind: faults.Crash, Start: time.Second, Duration: 3 * time.Second, Targets: []string{"n0"}},
		{Kind: faults.Crash, Start: 1500 * time.Millisecond, Duration: 500 * time.Millisecond, Targets: []string{"n0"}},
	}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 2500*time.Millisecond)
		doPing(p, "at 2.5s", p.Nodes()[0])
		sleepUntil(p, 4200*time.Millisecond)
		doPing(p, "at 4.2s", p.Nodes()[0])
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	if o := one(t, ops, "at 2.5s"); o.Result == resOK {
		t.Errorf("n0 answered at 2.5s, inside the longer crash: %v", o)
	}
	if o := one(t, ops, "at 4.2s"); o.Result != resOK {
		t.Errorf("n0 must be up after both crashes ended: %v", o)
	}
	if rs := engineEvents(res, "n0", "restart"); len(rs) != 1 || rs[0].T != int64(4*time.Second) {
		t.Errorf("want one restart at 4s, got %+v", rs)
	}
	if cs := engineEvents(res, "n0", "crash"); len(cs) != 1 {
		t.Errorf("want one crash event (the second crash found n0 down), got %+v", cs)
	}
}

// A split brain that outlasts the safety phase: n0 (the primary) is cut
// off from Sentinel, n1, n2 and c1 from 1 s for 30 s; Sentinel promotes
// n1 and tells c1, while c0 keeps writing to n0. At the heal (3 s) the
// topology settles on one primary that every node and client follows: n0
// is demoted (what it accepted alone is lost), and a write through the
// primary client reaches every node.
func TestHealSettlesSplitBrain(t *testing.T) {
	heal := 3 * time.Second
	cfg := biteConfig(3, 2, heal)
	cfg.Liveness = 2 * time.Second
	cfg.Topology = Topology{Replicated: true, DownAfter: 500 * time.Millisecond}
	cfg.Faults = []faults.Fault{
		{Kind: faults.Partition, Start: time.Second, Duration: 30 * time.Second, From: []string{"n0", "c0"}, To: []string{SentinelName, "n1", "n2", "c1"}},
	}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 2500*time.Millisecond)
		if p.ID() == 0 {
			do(p, "split", func() (string, error) { return p.Primary().Set(p.Context(), "lost", "x", 0).Result() })
		}
		sleepUntil(p, heal+200*time.Millisecond)
		do(p, "set", func() (string, error) { return p.Primary().Set(p.Context(), p.Name(), "v", 0).Result() })
		sleepUntil(p, heal+500*time.Millisecond)
		for i, c := range p.Nodes() {
			doGet(p, "get/"+p.Name()+"/n"+string(rune('0'+i)), c, p.Name())
		}
		doGet(p, "lost", p.Nodes()[0], "lost")
	}
	res := runBite(t, cfg)
	if fo := engineEvents(res, SentinelName, "failover"); len(fo) != 1 || fo[0].Detail != "n0 -> n1" {
		t.Fatalf("want one failover n0 -> n1, got %+v", fo)
	}
	if d := engineEvents(res, SentinelName, "demote"); len(d) != 1 || d[0].T != int64(heal) || d[0].Detail != "n0 -> replica of n1" {
		t.Errorf("want n0 demoted at the heal, got %+v", d)
	}
	for _, c := range []string{"c0", "c1"} {
		ops := opsOf(t, res, c)
		if o := one(t, ops, "set"); o.Result != resOK {
			t.Errorf("%s: SET through the primary after the heal: %v", c, o)
		}
		for _, o := range named(ops, "get") {
			if o.Result != resOK || o.Reply != "v" {
				t.Errorf("%s: every node must have the write made through the one primary: %v", c, o)
			}
		}
	}
	ops0 := opsOf(t, res, "c0")
	if o := one(t, ops0, "split"); o.Result != resOK {
		t.Errorf("c0's write to the isolated old primary must be accepted (split brain): %v", o)
	}
	if o := one(t, ops0, "lost"); o.Result != resNil {
		t.Errorf("what n0 accepted alone must be lost when it is demoted: %v", o)
	}
}

// The heal's invariants are checked in every run: a world left broken
// after the heal ends the run with an internal error naming the invariant,
// never a verdict.
func TestHealInvariantsAreEnforced(t *testing.T) {
	cases := []struct {
		name, want string
		cfg        func(*Config)
		breakIt    func(w *World)
	}{
		{"node down", `invariant "every node up"`, nil, func(w *World) { w.nodes[0].up = false }},
		{"node paused", `invariant "no fault active"`, nil, func(w *World) { w.nodes[1].pausedUntil = w.now() + 1 }},
		{"partition", `invariant "no fault active"`, nil, func(w *World) {
			w.net.add(faults.Fault{Kind: faults.Partition, From: []string{"c0"}, To: []string{"n0"}}, w.now()+int64(time.Hour), 0)
		}},
		{"client paused", `invariant "no fault active"`, nil, func(w *World) { w.procs[0].pausedUntil = w.now() + 1 }},
		{"clock", `invariant "clocks resynced"`, nil, func(w *World) { w.procs[1].clk.Jump(w.now(), time.Second) }},
		{"two primaries", `invariant "one primary"`, func(c *Config) { c.Topology = Topology{Replicated: true, DownAfter: time.Second} },
			func(w *World) { w.nodes[1].replicaOf = -1 }},
		{"client follows another", `invariant "clients follow the primary"`, func(c *Config) { c.Topology = Topology{Replicated: true, DownAfter: time.Second} },
			func(w *World) { w.procs[1].primary[0] = 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := biteConfig(2, 2, time.Second)
			cfg.Liveness = time.Second
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			cfg.Program = func(p *Proc) { doPing(p, "ping", p.Nodes()[0]) }
			healHook = tc.breakIt
			defer func() { healHook = nil }()
			_, err := Run(TestBubble(t), cfg.WithDefaults())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "internal error") {
				t.Fatalf("want an internal error naming %s, got %v", tc.want, err)
			}
			t.Log(err)
		})
	}
}

// The heal's clock resync does not move a key's remaining TTL: n0's clock
// jumps 20 s ahead at 1 s, c0 sets a 3 s key at 2 s, the heal at 3 s steps
// n0's clock back; the key still expires at 5 s (stepping back would
// otherwise extend Redis's absolute deadline to 25 s). The same holds for
// a key restored from disk by a restart at the heal (n1, persistence
// always, down from 2.5 s).
func TestHealResyncKeepsTTLs(t *testing.T) {
	heal := 3 * time.Second
	cfg := biteConfig(2, 1, heal)
	cfg.Liveness = 5 * time.Second
	cfg.Nodes[1].Persistence = PersistAlways
	cfg.Faults = []faults.Fault{
		{Kind: faults.ClockJump, Start: time.Second, Jump: 20 * time.Second, Targets: []string{"n0", "n1"}},
		{Kind: faults.Crash, Start: 2500 * time.Millisecond, Duration: time.Minute, Targets: []string{"n1"}},
	}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 2*time.Second)
		for i, c := range p.Nodes() {
			do(p, fmt.Sprintf("set/n%d", i), func() (string, error) { return c.Set(p.Context(), "k", "v", 3*time.Second).Result() })
		}
		sleepUntil(p, 4900*time.Millisecond)
		for i, c := range p.Nodes() {
			doGet(p, fmt.Sprintf("before/n%d", i), c, "k")
		}
		sleepUntil(p, 5100*time.Millisecond)
		for i, c := range p.Nodes() {
			doGet(p, fmt.Sprintf("after/n%d", i), c, "k")
		}
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	for _, n := range []string{"n0", "n1"} {
		if o := one(t, ops, "before/"+n); o.Result != resOK {
			t.Errorf("%s: the key must live until 5s: %v", n, o)
		}
		if o := one(t, ops, "after/"+n); o.Result != resNil {
			t.Errorf("%s: the key must be gone after 5s (the resync must not extend it): %v", n, o)
		}
	}
}

// A crash timed by the node's own clock (a delayed restart's timer):
// n0 crashes at 1 s for 3 s of its clock. Alone it restarts at 4 s; a
// forward jump of its clock by 2 s at 2 s brings the restart to 2 s (the
// clock reads 4 s then); a backward jump of 1 s at 2 s puts it off to 5 s;
// running 25% fast from the crash on, its clock counts 3 s in 2.4 s.
func TestCrashTimedByNodeClock(t *testing.T) {
	crash := faults.Fault{Kind: faults.Crash, Start: time.Second, Duration: 3 * time.Second, Targets: []string{"n0"}, NodeClock: true}
	cases := []struct {
		name  string
		extra []faults.Fault
		want  time.Duration
	}{
		{"alone", nil, 4 * time.Second},
		{"jump forward", []faults.Fault{{Kind: faults.ClockJump, Start: 2 * time.Second, Jump: 2 * time.Second, Targets: []string{"n0"}}}, 2 * time.Second},
		{"jump back", []faults.Fault{{Kind: faults.ClockJump, Start: 2 * time.Second, Jump: -time.Second, Targets: []string{"n0"}}}, 5 * time.Second},
		{"drift", []faults.Fault{{Kind: faults.ClockDrift, Start: time.Second, Duration: 10 * time.Second, DriftPPM: 250_000, Targets: []string{"n0"}}},
			time.Second + 2400*time.Millisecond},
		{"a client's jump does not count", []faults.Fault{{Kind: faults.ClockJump, Start: 2 * time.Second, Jump: 2 * time.Second, Targets: []string{"c0"}}}, 4 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := biteConfig(1, 1, 8*time.Second)
			cfg.Faults = append([]faults.Fault{crash}, tc.extra...)
			cfg.Program = func(p *Proc) {
				sleepUntil(p, 1500*time.Millisecond)
				doPing(p, "down", p.Nodes()[0])
				sleepUntil(p, 6*time.Second)
				doPing(p, "up", p.Nodes()[0])
			}
			res := runBite(t, cfg)
			ops := opsOf(t, res, "c0")
			if o := one(t, ops, "down"); o.Result == resOK {
				t.Errorf("n0 answered inside its crash: %v", o)
			}
			if o := one(t, ops, "up"); o.Result != resOK {
				t.Errorf("n0 must be up at 6s: %v", o)
			}
			// Events at one instant run 1 ns apart (the fault and the
			// crash both start at 1 s): a few ns either way is that.
			rs := engineEvents(res, "n0", "restart")
			if len(rs) != 1 || rs[0].T < int64(tc.want)-10 || rs[0].T > int64(tc.want)+10 {
				t.Errorf("want one restart at %v, got %+v", tc.want, rs)
			}
		})
	}
}

// The storage service crashing and restarting in a replicated world leaves
// the Redis replicas alone: a service has no replicas. (Services are
// numbered apart from nodes; the storage, service 0, once full-synced the
// replicas of node 0 from its own empty dataset when it restarted.)
func TestServiceRestartLeavesReplicas(t *testing.T) {
	cfg := biteConfig(3, 1, 6*time.Second)
	cfg.Topology.Replicated = true
	cfg.Services = []ServiceConfig{{Name: "store", New: func() Service { return echoService{} }}}
	cfg.Faults = []faults.Fault{{Kind: faults.Crash, Start: time.Second, Duration: time.Second, Targets: []string{"store"}}}
	cfg.Program = func(p *Proc) {
		do(p, "set", func() (string, error) { return p.Nodes()[0].Set(p.Context(), "k", "v", 0).Result() })
		sleepUntil(p, 3*time.Second)
		doGet(p, "get n1", p.Nodes()[1], "k")
		doGet(p, "get n2", p.Nodes()[2], "k")
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	for _, op := range []string{"get n1", "get n2"} {
		if o := one(t, ops, op); o.Result != resOK {
			t.Errorf("%s after the storage restarted: %v, want the replicated key", op, o)
		}
	}
	if rs := engineEvents(res, "store", "restart"); len(rs) != 1 {
		t.Fatalf("want one restart of the storage, got %+v", rs)
	}
}
