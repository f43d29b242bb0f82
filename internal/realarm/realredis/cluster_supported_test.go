package realredis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/run"
)

// TestClusterWorldsRefused: the real arm builds every built-in cluster
// world, the several-cluster one (redlock-3-clusters) included, which it
// used to refuse up front; what cannot work in a world of several
// clusters (a slot migration, the cluster's own failover) is refused
// before any server starts, as the simulator refuses it, naming why.
func TestClusterWorldsRefused(t *testing.T) {
	for _, c := range []struct{ scenario, lock string }{
		{"pause-after-check-cluster", "redlock-3-clusters"},
		{"failover-one-cluster", "redlock-3-clusters"},
		{"failover-wait-cluster", "redisson-wait-cluster"},
	} {
		j, err := Build(run.Spec{Scenario: c.scenario, Lock: c.lock, Seed: 1}, 30*time.Second)
		if err == nil {
			err = Supported(j.Parts)
		}
		if err != nil {
			t.Errorf("%s × %s: %v, want it supported", c.scenario, c.lock, err)
		}
	}
	for _, sc := range []string{"pause-after-check-cluster", "slot-migration-cluster", "minority-primary-cluster"} {
		j, err := Build(run.Spec{Scenario: sc, Lock: "cluster-set-nx-cad", Seed: 1}, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := Supported(j.Parts); err != nil {
			t.Errorf("%s × cluster-set-nx-cad: %v, want it supported", sc, err)
		}
	}
	const head = "id: t\ndescription: a test world\nclients: {count: 2}\nduration: 10s\nlocks: [redlock-3-clusters]\nexpect: {redlock-3-clusters: {agreed: safe}}\n"
	for name, c := range map[string]struct{ src, why string }{
		"migration": {head + "topology: {replicated: true, nodes: 2, groups: 9}\nfaults:\n  - {kind: slot-migration, start: 1s, duration: 1s}\n", "3 independent clusters"},
		"own":       {head + "topology: {replicated: true, nodes: 2, groups: 9, down_after: 500ms, failover: cluster}\nfaults:\n  - {kind: failover, start: 1s, duration: 1s, targets: [g0]}\n", "modelled for one"},
	} {
		p := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(p, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		j, err := Build(run.Spec{Scenario: p, Lock: "redlock-3-clusters", Seed: 1}, 30*time.Second)
		if err == nil {
			err = Supported(j.Parts)
		}
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want a refusal naming %q", name, err, c.why)
		}
	}
}
