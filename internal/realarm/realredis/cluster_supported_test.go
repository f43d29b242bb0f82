package realredis

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/run"
)

// TestClusterWorldsRefused: the cluster worlds the real arm cannot build
// yet are refused before any server starts, each with its reason, where
// they used to start nine servers and end as an unknown run (the factory
// found no cluster clients).
func TestClusterWorldsRefused(t *testing.T) {
	for _, c := range []struct {
		scenario, lock string
		ttl            time.Duration
		why            string
	}{
		{"pause-after-check-cluster", "redlock-3-clusters", 30 * time.Second, "independent Redis Clusters"},
	} {
		j, err := Build(run.Spec{Scenario: c.scenario, Lock: c.lock, Seed: 1}, c.ttl)
		if err == nil {
			err = Supported(j.Parts)
		}
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s × %s: %v, want a refusal naming %q", c.scenario, c.lock, err, c.why)
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
}
