package catalogue_test

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/locks"
)

// TestClusterLocksNeedClusters: the cluster designs are registered with a
// cluster topology (redlock-3-clusters with 3 clusters) and refuse, naming
// themselves and what is missing, a world that gives no cluster clients.
func TestClusterLocksNeedClusters(t *testing.T) {
	for _, tc := range []struct {
		id       string
		clusters int
		want     string
	}{
		{"redisson-cluster", 0, "redisson-cluster: the world gives no Redis Cluster client (Env.Cluster)"},
		{"redisson-wait-cluster", 0, "redisson-wait-cluster: the world gives no Redis Cluster client (Env.Cluster)"},
		{"redlock-3-clusters", 3, "redlock-3-clusters: the world gives 0 Redis Cluster clients (Env.Clusters), the design runs over 3 independent clusters"},
	} {
		info := mustGet(t, tc.id)
		if info.Topology != locks.Cluster || info.Clusters != tc.clusters || info.Source == "" || info.Weakness == "" {
			t.Errorf("%s: catalogue entry %+v", tc.id, info)
		}
		_, err := info.New(locks.Env{Key: "lock"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s without cluster clients: %v, want %q", tc.id, err, tc.want)
		}
	}
}
