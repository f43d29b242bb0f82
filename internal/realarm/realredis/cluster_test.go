package realredis

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/run"
)

// TestClusterRefused: the real arm refuses a Redis Cluster world by name
// (its cluster mode is not built yet) instead of running the cluster lock
// with no cluster client.
func TestClusterRefused(t *testing.T) {
	for _, sc := range []string{"pause-after-check-cluster", "failover-cluster"} {
		_, err := Build(run.Spec{Scenario: sc, Lock: "cluster-set-nx-cad", Seed: 1}, 2*time.Second)
		if err == nil || !strings.Contains(err.Error(), "not supported by the real backend yet: a Redis Cluster") {
			t.Errorf("%s: Build = %v, want the cluster refused", sc, err)
		}
	}
}
