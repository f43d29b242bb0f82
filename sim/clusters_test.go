package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
)

func TestClustersConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		topo  Topology
		nodes int
		want  string
	}{
		{Topology{Shards: 3, Clusters: -1}, 3, "topology.clusters: -1 out of range 0..16"},
		{Topology{Shards: 1, Clusters: MaxClusters + 1}, 17, "topology.clusters: 17 out of range 0..16"},
		{Topology{Shards: 3, Clusters: 3, Replicated: true}, 16, "16 nodes do not split into 3 clusters"},
		{Topology{Shards: 3, Clusters: 3}, 6, "9 shards without replicas need 9 nodes, got 6"},
		{Topology{Shards: 3, Clusters: 3, Replicated: true}, 9, "9 nodes do not split into 9 shards"},
		{Topology{Shards: 3, Clusters: 2, Replicated: true, Groups: 4}, 12, "groups are its shards: 6 (3 a cluster × 2 clusters)"},
	} {
		cfg := clusterConfig(tc.nodes, 1)
		cfg.Topology = tc.topo
		cfg.Program = func(*Proc) {}
		err := cfg.WithDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v with %d nodes: got %v, want an error containing %q", tc.topo, tc.nodes, err, tc.want)
		}
	}
	// Every shard named as a group is a valid count.
	cfg := clusterConfig(12, 1)
	cfg.Topology, cfg.Program = Topology{Shards: 3, Clusters: 2, Replicated: true, Groups: 6}, func(*Proc) {}
	if err := cfg.WithDefaults().Validate(); err != nil {
		t.Errorf("two clusters of 3 shards, 6 groups: %v", err)
	}
	// A slot migration is modelled within one cluster only.
	cfg = clusterConfig(6, 1)
	cfg.Topology, cfg.Program = Topology{Shards: 3, Clusters: 2}, func(*Proc) {}
	cfg.Faults = []faults.Fault{{Kind: faults.SlotMigration, Start: time.Second, Duration: time.Second}}
	if err := cfg.WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "one cluster (got 3 shards, 2 clusters)") {
		t.Errorf("slot-migration in two clusters: %v, want it refused", err)
	}
	// Nor with replicas: a failover during a migration is not modelled.
	cfg.Topology = Topology{Shards: 3, Replicated: true, DownAfter: time.Second}
	if err := cfg.WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "faults[0]: slot-migration in a replicated cluster (topology.replicated) is not supported") {
		t.Errorf("slot-migration in a replicated cluster: %v, want it refused", err)
	}
}

// TestClustersIndependent: three clusters of three shards, each shard a
// primary and a replica (18 nodes). Each cluster's ClusterClient
// (Proc.Clusters) writes the same key to its own cluster only: the key's
// slot (11058, shard 2) is on n4, n10 and n16, each with its cluster's
// value; a node answers CLUSTER SLOTS with its own cluster's nodes and
// redirects to its own cluster's primary; the failover groups are the nine
// shards.
func TestClustersIndependent(t *testing.T) {
	cfg := clusterConfig(18, 1)
	cfg.Topology = Topology{Replicated: true, Shards: 3, Clusters: 3}
	var ccs int
	var slotAddrs [3][]string
	cfg.Program = func(p *Proc) {
		ccs = len(p.Clusters())
		if ccs != 3 || p.Cluster() != p.Clusters()[0] {
			return
		}
		for c, cc := range p.Clusters() {
			do(p, fmt.Sprintf("set %d", c), func() (string, error) {
				return cc.Set(p.Context(), "somekey", fmt.Sprintf("v%d", c), 0).Result()
			})
		}
		for c := range 3 {
			n := p.Nodes()[6*c+4]
			doGet(p, fmt.Sprintf("get on n%d", 6*c+4), n, "somekey")
			slots, err := p.Nodes()[6*c+1].ClusterSlots(p.Context()).Result()
			if err != nil {
				continue
			}
			for _, sl := range slots {
				for _, nd := range sl.Nodes {
					slotAddrs[c] = append(slotAddrs[c], nd.Addr)
				}
			}
		}
		doGet(p, "get on n6", p.Nodes()[6], "somekey")
	}
	res := runBite(t, cfg)
	if ccs != 3 {
		t.Fatalf("Proc.Clusters: %d clients, want 3 (the first is Proc.Cluster)", ccs)
	}
	ops := opsOf(t, res, "c0")
	for c := range 3 {
		if o := one(t, ops, fmt.Sprintf("set %d", c)); o.Result != resOK {
			t.Errorf("set through cluster %d's client: %v", c, o)
		}
		if o := one(t, ops, fmt.Sprintf("get on n%d", 6*c+4)); o.Result != resOK || o.Reply != fmt.Sprintf("v%d", c) {
			t.Errorf("cluster %d's slot primary n%d: %v, want v%d", c, 6*c+4, o, c)
		}
		var want []string
		for i := 6 * c; i < 6*c+6; i++ {
			want = append(want, fmt.Sprintf("n%d:6379", i))
		}
		if strings.Join(slotAddrs[c], " ") != strings.Join(want, " ") {
			t.Errorf("CLUSTER SLOTS of cluster %d names %v, want %v", c, slotAddrs[c], want)
		}
	}
	if o := one(t, ops, "get on n6"); o.Result != resErr || o.Detail != "MOVED 11058 n10:6379" {
		t.Errorf("a key of another shard sent to cluster 1's n6: %v, want MOVED 11058 n10:6379", o)
	}
	if g := cfg.WithDefaults().groupCount(); g != 9 {
		t.Errorf("groups: %d, want the 9 shards", g)
	}
}
