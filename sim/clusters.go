package sim

import (
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Several independent Redis Clusters in one world (Topology.Clusters):
// Redlock over N clusters, “要么是N个redis单实例,要么是N个sentinel集群,要么是N个cluster集群”
// (“The SETNX command” §4.1). The nodes split in node order into
// clusters of equal size and each cluster's nodes into its shards as one
// cluster's are (cluster.go). Shards are numbered across the world,
// cluster 0's first: shard g is shard g mod Shards of cluster g div
// Shards, and it is failover group g. A node answers CLUSTER commands and
// MOVED for its own cluster only; each process has one ClusterClient a
// cluster, seeded with that cluster's nodes. With one cluster every
// number here is what cluster.go had alone.

// MaxClusters bounds Topology.Clusters.
const MaxClusters = 16

// clusterCount is the number of independent clusters (1 for Clusters 0).
func (c Config) clusterCount() int { return max(1, c.Topology.Clusters) }

// checkClusters validates Topology.Clusters (Shards is set).
func (c Config) checkClusters() error {
	switch n := c.Topology.Clusters; {
	case n < 0 || n > MaxClusters:
		return fmt.Errorf("topology.clusters: %d out of range 0..%d", n, MaxClusters)
	case n > 1 && len(c.Nodes)%n != 0:
		return fmt.Errorf("topology.clusters: %d nodes do not split into %d clusters of equal size", len(c.Nodes), n)
	}
	return nil
}

// clusterCount is the world's number of independent clusters.
func (w *World) clusterCount() int { return w.cfg.clusterCount() }

// shardSize is the number of nodes a shard has.
func (w *World) shardSize() int { return len(w.nodes) / (w.shards() * w.clusterCount()) }

// clusterBase is the world-wide number of the first shard of node id's
// cluster.
func (w *World) clusterBase(id int) int { return w.shardOf(id) / w.shards() * w.shards() }

// clusterName names shard g's cluster in a failover's detail: "cluster "
// for a world of one cluster, "cluster 2 " in a world of several.
func (w *World) clusterName(g int) string {
	if w.clusterCount() == 1 {
		return "cluster "
	}
	return "cluster " + strconv.Itoa(g/w.shards()) + " "
}

// Clusters returns p's ClusterClients, one for each of the world's
// independent clusters in order (Topology.Clusters; one for a world of
// one cluster), nil outside a cluster world.
func (p *Proc) Clusters() []*redis.ClusterClient { return p.clusters }

// clusterOptions are the options of the first cluster's ClusterClient
// (clusterOptionsOf).
func (p *Proc) clusterOptions() *redis.ClusterOptions { return p.clusterOptionsOf(0) }
