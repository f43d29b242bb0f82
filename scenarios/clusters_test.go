package scenarios

import (
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/locks/catalogue"
)

// TestClustersWorld: redlock-3-clusters (Info.Clusters 3) gets three
// independent clusters of three shards; a file naming nine groups names
// each shard itself (its failover of g0 fails over cluster 0's shard 0
// only), the file's one group is copied into all nine shards otherwise;
// any other group count is refused, naming the line and both choices.
func TestClustersWorld(t *testing.T) {
	info, err := catalogue.Get("redlock-3-clusters")
	if err != nil {
		t.Fatal(err)
	}
	build := func(topo string) (int, int, int, []string, error) {
		src := minimal + "topology: " + topo + "\nlocks: [redlock-3-clusters]\nexpect: {redlock-3-clusters: {agreed: safe}}\nfaults:\n  - {kind: failover, start: 1s, duration: 1s, targets: [g0]}\n"
		f, err := Parse("t.yaml", []byte(src)) // checks each listed lock's world
		if err != nil {
			return 0, 0, 0, nil, err
		}
		cfg, err := f.build(info, 1, Params{})
		if err != nil {
			return 0, 0, 0, nil, err
		}
		var targets []string
		for _, ft := range cfg.Faults {
			targets = append(targets, ft.Targets...)
		}
		return len(cfg.Nodes), cfg.Topology.Shards, cfg.Topology.Clusters, targets, nil
	}
	nodes, shards, clusters, targets, err := build("{replicated: true, nodes: 2, groups: 9}")
	if err != nil || nodes != 18 || shards != 3 || clusters != 3 || !slices.Equal(targets, []string{"g0"}) {
		t.Fatalf("groups 9: %d nodes, %d shards, %d clusters, targets %v, %v; want 18, 3, 3, [g0]", nodes, shards, clusters, targets, err)
	}
	nodes, shards, clusters, targets, err = build("{replicated: true, nodes: 2}")
	if err != nil || nodes != 18 || shards != 3 || clusters != 3 || len(targets) != 9 {
		t.Fatalf("one group copied: %d nodes, %d shards, %d clusters, targets %v, %v; want 18, 3, 3 and g0 naming all 9", nodes, shards, clusters, targets, err)
	}
	_, _, _, _, err = build("{replicated: true, nodes: 2, groups: 3}")
	if err == nil || !strings.Contains(err.Error(), "t.yaml") || !strings.Contains(err.Error(), "topology.groups") ||
		!strings.Contains(err.Error(), "runs on 3 Redis Clusters of 3 shards") || !strings.Contains(err.Error(), "or 9 groups named one by one") {
		t.Fatalf("groups 3: %v, want the clusters' refusal naming the file and field", err)
	}
}
