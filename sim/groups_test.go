package sim

import (
	"strings"
	"testing"
	"time"

	evt "github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// TestGroupsFailOverAlone: two primary/replica groups (n0,n1,n2 and
// n3,n4,n5) under one Sentinel. c0 writes a key to each group's primary at
// 100 ms; replication lags 2 s, so no replica has it when group g1's
// primary crashes at 400 ms (a failover fault naming g1). Sentinel promotes
// a replica of g1 only; g0 keeps n0, and the client's g0 primary still
// serves the key while its g1 primary, now n4 or n5, lost it (async
// replication's lost write, one group at a time). Every node of g1 follows
// the new primary; no node of g0 does.
func TestGroupsFailOverAlone(t *testing.T) {
	cfg := biteConfig(6, 1, 3*time.Second)
	cfg.Topology = Topology{Replicated: true, Groups: 2, ReplLag: 2 * time.Second, DownAfter: 500 * time.Millisecond}
	cfg.Faults = []faults.Fault{{Kind: faults.Failover, Start: 400 * time.Millisecond, Duration: 10 * time.Second, Targets: []string{"g1"}}}
	cfg.Program = func(p *Proc) {
		if len(p.Primaries()) != 2 || p.Primary() != p.Primaries()[0] {
			p.Record(Event{Kind: "error", Detail: "want two primary clients, the first Primary()"})
			return
		}
		sleepUntil(p, 100*time.Millisecond)
		do(p, "set g0", func() (string, error) { return p.Primaries()[0].Set(p.Context(), "k", "a", 0).Result() })
		do(p, "set g1", func() (string, error) { return p.Primaries()[1].Set(p.Context(), "k", "b", 0).Result() })
		sleepUntil(p, 2500*time.Millisecond)
		doGet(p, "get g0", p.Primaries()[0], "k")
		doGet(p, "get g1", p.Primaries()[1], "k")
	}
	res := runBite(t, cfg)
	for _, ev := range res.History {
		if ev.Kind == evt.KindError {
			t.Fatal(ev.Detail)
		}
	}
	ops := opsOf(t, res, "c0")
	for _, op := range []string{"set g0", "set g1"} {
		if o := one(t, ops, op); o.Result != resOK {
			t.Fatalf("%s: %v", op, o)
		}
	}
	if o := one(t, ops, "get g0"); o.Result != resOK || o.Reply != "a" {
		t.Errorf("g0 did not fail over, its primary must still have the key: %+v", o)
	}
	if o := one(t, ops, "get g1"); o.Result != resNil {
		t.Errorf("g1's new primary must have lost the unreplicated key: %+v", o)
	}
	fo := engineEvents(res, SentinelName, "failover")
	if len(fo) != 1 || !strings.HasPrefix(fo[0].Detail, "n3 -> ") || fo[0].Detail == "n3 -> n0" {
		t.Fatalf("want one failover of g1 (n3 -> n4 or n5), got %+v", fo)
	}
	if c := engineEvents(res, "n0", "crash"); len(c) != 0 {
		t.Errorf("g0's primary crashed: %+v", c)
	}
}

// TestGroupsFailoverEveryGroup: a failover fault naming no group fails
// every group over; the heal settles each group on one primary that its
// replicas and every client follow (healedInvariants checks it at the
// heal and after).
func TestGroupsFailoverEveryGroup(t *testing.T) {
	cfg := biteConfig(6, 2, 3*time.Second)
	cfg.Topology = Topology{Replicated: true, Groups: 2, ReplLag: 100 * time.Millisecond, DownAfter: 500 * time.Millisecond}
	cfg.Faults = []faults.Fault{{Kind: faults.Failover, Start: 400 * time.Millisecond, Duration: time.Second}}
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 2500*time.Millisecond)
		doPing(p, "ping g0", p.Primaries()[0])
		doPing(p, "ping g1", p.Primaries()[1])
	}
	res := runBite(t, cfg)
	fo := engineEvents(res, SentinelName, "failover")
	if len(fo) != 2 || !strings.HasPrefix(fo[0].Detail, "n0 -> ") || !strings.HasPrefix(fo[1].Detail, "n3 -> ") {
		t.Fatalf("want one failover in each group, got %+v", fo)
	}
	for _, c := range []string{"c0", "c1"} {
		for _, op := range []string{"ping g0", "ping g1"} {
			if o := one(t, opsOf(t, res, c), op); o.Result != resOK {
				t.Errorf("%s %s after the failovers: %+v", c, op, o)
			}
		}
	}
}

func TestGroupsValidate(t *testing.T) {
	prog := func(*Proc) {}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"uneven", Config{Nodes: make([]NodeConfig, 5), Topology: Topology{Replicated: true, Groups: 2}}, "do not split into 2 groups"},
		{"one node a group", Config{Nodes: make([]NodeConfig, 3), Topology: Topology{Replicated: true, Groups: 3}}, "do not split into 3 groups"},
		{"not replicated", Config{Nodes: make([]NodeConfig, 4), Topology: Topology{Groups: 2}}, "need a replicated topology"},
		{"unknown group", Config{Nodes: make([]NodeConfig, 4), Topology: Topology{Replicated: true, Groups: 2},
			Faults: []faults.Fault{{Kind: faults.Failover, Duration: time.Second, Targets: []string{"g2"}}}}, "failover: target \"g2\" is not a group (g0..g1)"},
		{"group as a crash target", Config{Nodes: make([]NodeConfig, 4), Topology: Topology{Replicated: true, Groups: 2},
			Faults: []faults.Fault{{Kind: faults.Crash, Duration: time.Second, Targets: []string{"g0"}}}}, "unknown process \"g0\""},
		{"node as group", Config{Nodes: make([]NodeConfig, 4), Topology: Topology{Replicated: true, Groups: 2},
			Faults: []faults.Fault{{Kind: faults.Failover, Duration: time.Second, Targets: []string{"n0"}}}}, "is not a group"},
	} {
		c := tc.cfg
		c.Clients, c.Duration, c.Program = 1, time.Second, prog
		err := c.WithDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
