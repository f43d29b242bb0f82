package scenarios

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/sim"
)

func TestDefaultRuns(t *testing.T) {
	for _, id := range []string{"set-nx-cad", "redlock", "redsync", "redislock"} {
		cfg, err := Build("default", id, 1, Params{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(sim.TestBubble(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v %s", id, res.Stats, res.TraceSHA256)
	}
}

// TestWorldIsDefaultWithoutFaults: World is default.yaml's world for the
// lock and seed (topology, drawn persistence and lag, phases, clients)
// with no faults, for every topology.
func TestWorldIsDefaultWithoutFaults(t *testing.T) {
	for _, id := range []string{"set-nx-cad", "redlock", "primary-replica", "redisson-multilock", "zk-lock", "setnx-del", "watchdog"} {
		for _, seed := range []uint64{1, 2, 3} {
			full, err := Build("default", id, seed, Params{})
			if err != nil {
				t.Fatal(err)
			}
			info, _ := catalogue.Get(id)
			w, err := World(info, seed, Params{})
			if err != nil {
				t.Fatal(err)
			}
			if len(full.Faults) < 4 || len(w.Faults) != 0 {
				t.Fatalf("%s seed %d: default has %d faults, World %d", id, seed, len(full.Faults), len(w.Faults))
			}
			if !reflect.DeepEqual(full.Nodes, w.Nodes) || full.Topology != w.Topology || full.Duration != w.Duration ||
				full.Liveness != w.Liveness || full.Clients != w.Clients || len(full.Services) != len(w.Services) {
				t.Errorf("%s seed %d: World differs from default beyond its faults:\n%+v %+v\n%+v %+v", id, seed, full.Nodes, full.Topology, w.Nodes, w.Topology)
			}
			if want := max(30*time.Second, 2*info.TTL); w.Liveness != want {
				t.Errorf("%s: liveness %v, want max(30s, 2ttl) = %v", id, w.Liveness, want)
			}
		}
	}
}

// TestDefaultLanguage: what default.yaml needed from the language.
func TestDefaultLanguage(t *testing.T) {
	s, err := ParseSpan("max(30s, 2ttl)")
	if err != nil || !s.AtLeast || s.NS != 30*time.Second || s.TTLs != 2 || s.String() != "max(30s, 2ttl)" {
		t.Fatalf("max(30s, 2ttl) = %+v, %v", s, err)
	}
	for ttl, want := range map[time.Duration]time.Duration{0: 30 * time.Second, 3 * time.Second: 30 * time.Second, 30 * time.Second: time.Minute} {
		if d, err := s.Resolve(ttl); err != nil || d != want {
			t.Errorf("max(30s, 2ttl) at TTL %v = %v, %v; want %v", ttl, d, err, want)
		}
	}
	for _, bad := range []string{"max(30s, 2s)", "max(1ttl, 2ttl)", "max(30s)", "max(30s, 2ttl, 1s)"} {
		if _, err := ParseSpan(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{"topology: {persistence: sometimes}\n", `topology.persistence: "sometimes" is not one of none, everysec, always, no, random`},
		{"topology: {repl_lag: 1ms, repl_lag_up_to: 50ms}\n", "topology.repl_lag_up_to: give either repl_lag or repl_lag_up_to, not both"},
		{"topology: {repl_lag_up_to: 1ttl}\n", "topology.repl_lag_up_to: 1ttl: an absolute duration"},
	} {
		if _, err := Parse("t.yaml", []byte("id: t\ndescription: d\n"+c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
}

// TestDefaultParamsMatchTheFile: DefaultParams (the CLI's help) says what
// default.yaml sets.
func TestDefaultParamsMatchTheFile(t *testing.T) {
	s, err := Get("default")
	if err != nil || s.File == nil {
		t.Fatalf("default: %v (a file: %v)", err, s.File != nil)
	}
	f := s.File
	if f.Clients.Count != DefaultParams.Clients || f.Duration.NS != DefaultParams.Duration || f.Liveness.NS != DefaultParams.Liveness {
		t.Errorf("default.yaml: %d clients, %v, liveness %v; DefaultParams %+v", f.Clients.Count, f.Duration, f.Liveness, DefaultParams)
	}
}
