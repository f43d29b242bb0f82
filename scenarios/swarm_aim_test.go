package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/resource"
	"github.com/locksim/locksim/sim"
)

// TestSwarmDefaultsUnchanged: a swarm block without targets, ttl_relative
// or arm draws the schedule the builder drew before those fields existed:
// faults.Swarm on the seed's "faults" stream with the world's clients, its
// nodes and the storage, and nothing else set.
func TestSwarmDefaultsUnchanged(t *testing.T) {
	f, err := Parse("s.yaml", []byte(minimal+"swarm: {min_faults: 2, max_faults: 6}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"set-nx-cad", "redlock", "watchdog"} {
		info, _ := catalogue.Get(id)
		for seed := uint64(1); seed <= 5; seed++ {
			cfg, err := f.Scenario().Build(info, seed, Params{})
			if err != nil {
				t.Fatal(err)
			}
			var clients, nodes []string
			for i := range cfg.Clients {
				clients = append(clients, fmt.Sprintf("c%d", i))
			}
			for _, n := range cfg.Nodes {
				nodes = append(nodes, n.Name)
			}
			want, err := faults.Swarm(sim.NewStreams(seed).Get("faults"), faults.Bounds{
				Duration: cfg.Duration, Clients: clients, Nodes: append(nodes, resource.Name),
				Replicated: cfg.Topology.Replicated, MinFaults: 2, MaxFaults: 6,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got, w := fmt.Sprint(cfg.Faults), fmt.Sprint(want); got != w {
				t.Fatalf("%s seed %d: drew\n%s\nwant the schedule drawn without the new fields\n%s", id, seed, got, w)
			}
		}
	}
}

// TestSwarmAimed: targets, ttl_relative and arm reach the draw: every
// fault lands on the targets, sizes stay within the TTL-relative bounds,
// and armed faults wait at the workload's points (and renewals for a lock
// that renews).
func TestSwarmAimed(t *testing.T) {
	f, err := Parse("s.yaml", []byte(minimal+"swarm: {min_faults: 4, max_faults: 4, kinds: [node-pause, crash, delay, partition], targets: [n0], ttl_relative: true, arm: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := catalogue.Get("watchdog")
	if !info.Renews || info.TTL <= 0 {
		t.Fatalf("watchdog: want a lock that renews, with a TTL: %+v", info)
	}
	armedAt := map[string]bool{}
	for seed := uint64(1); seed <= 40; seed++ {
		cfg, err := f.Scenario().Build(info, seed, Params{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Faults) != 4 {
			t.Fatalf("seed %d: %d faults, want 4", seed, len(cfg.Faults))
		}
		for _, x := range cfg.Faults {
			switch x.Kind {
			case faults.NodePause, faults.Crash:
				if !slices.Equal(x.Targets, []string{"n0"}) {
					t.Fatalf("seed %d: %v: want it on n0 only", seed, x)
				}
				if x.Duration > 5*info.TTL {
					t.Fatalf("seed %d: %v: longer than 5 TTL (%v)", seed, x, info.TTL)
				}
			case faults.Delay, faults.Partition:
				// n0 cut off from every other process: the storage's
				// links to the clients untouched.
				if !slices.Equal(x.From, []string{"n0"}) && !slices.Equal(x.To, []string{"n0"}) {
					t.Fatalf("seed %d: %v: want n0 alone on one side", seed, x)
				}
			default:
				t.Fatalf("seed %d: %v: not a kind of the block", seed, x)
			}
			if x.At != "" {
				armedAt[x.At] = true
			}
		}
	}
	for _, pt := range append(slices.Clone(faults.HarnessPoints), string(locks.PointRenewing)) {
		if !armedAt[pt] {
			t.Errorf("no fault armed at %s in 40 seeds (armed at: %v)", pt, armedAt)
		}
	}

	// Without arm, no fault waits at a point; without ttl_relative the
	// sizes are the absolute ones (a node pause up to faults.SwarmMaxNodePause).
	g, err := Parse("s.yaml", []byte(minimal+"swarm: {min_faults: 4, max_faults: 4, kinds: [node-pause, delay], targets: [n0]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 20; seed++ {
		cfg, err := g.Scenario().Build(info, seed, Params{})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range cfg.Faults {
			if x.At != "" {
				t.Fatalf("seed %d: %v: armed without arm: true", seed, x)
			}
		}
	}

	// A lock that does not renew is never armed at renewals.
	plain, _ := catalogue.Get("set-nx-cad")
	for seed := uint64(1); seed <= 40; seed++ {
		cfg, err := f.Scenario().Build(plain, seed, Params{})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range cfg.Faults {
			if x.At == string(locks.PointRenewing) {
				t.Fatalf("seed %d: %v: armed at renewing for a lock that does not renew", seed, x)
			}
		}
	}
}

// TestSwarmAimGroups: all-clients and all-nodes name the world's clients
// and nodes, as in a scripted fault's targets.
func TestSwarmAimGroups(t *testing.T) {
	f, err := Parse("s.yaml", []byte(minimal+"clients: {count: 3}\nswarm: {min_faults: 5, max_faults: 5, kinds: [client-pause], targets: [all-clients]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := catalogue.Get("set-nx-cad")
	cfg, err := f.Scenario().Build(info, 3, Params{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range cfg.Faults {
		if x.Kind != faults.ClientPause || len(x.Targets) != 1 || !strings.HasPrefix(x.Targets[0], "c") {
			t.Fatalf("%v: want a pause of one client", x)
		}
	}
}

// TestSwarmAimErrors: a bad value of a new field is an error naming the
// field.
func TestSwarmAimErrors(t *testing.T) {
	for _, c := range []struct{ name, file, lock, want string }{
		{"unknown target", "swarm: {max_faults: 2, targets: [n7]}\n", "set-nx-cad", `swarm.targets: "n7" is not a client or node of lock set-nx-cad's world (nodes n0, clients c0..c4, store; all-clients, all-nodes)`},
		{"sentinel target", "swarm: {max_faults: 2, targets: [sentinel]}\n", "set-nx-cad", `swarm.targets: "sentinel" is not a client or node`},
		{"no kind lands", "swarm: {max_faults: 2, kinds: [node-pause], targets: [c0]}\n", "set-nx-cad", `swarm.targets: bounds: no fault kind of [node-pause] can land on the targets [c0] (lock set-nx-cad)`},
		{"empty targets", "swarm: {max_faults: 2, targets: []}\n", "", `swarm.targets: empty`},
		{"target twice", "swarm: {max_faults: 2, targets: [n0, n0]}\n", "", `swarm.targets[1]: "n0" is named twice`},
		{"ttl_relative without ttl", "swarm: {max_faults: 2, ttl_relative: true}\n", "version-cas", `swarm.ttl_relative: sizes relative to the lock's TTL, and lock version-cas has none`},
		{"ttl_relative not a bool", "swarm: {max_faults: 2, ttl_relative: maybe}\n", "", `swarm.ttl_relative`},
		{"arm not a bool", "swarm: {max_faults: 2, arm: 3}\n", "", `swarm.arm`},
		{"unknown field", "swarm: {max_faults: 2, target: [n0]}\n", "", `swarm.target: unknown field`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(minimal+c.file))
			if err == nil && c.lock != "" {
				info, gerr := catalogue.Get(c.lock)
				if gerr != nil {
					t.Fatal(gerr)
				}
				_, err = f.Scenario().Build(info, 1, Params{})
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
