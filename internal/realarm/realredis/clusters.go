package realredis

import "github.com/redis/go-redis/v9"

// Several independent Redis Clusters in one world (sim.Topology.Clusters:
// Redlock over clusters), laid out as the simulator lays them out
// (sim/clusters.go): the nodes split in node order into clusters of equal
// size, each cluster's nodes into its shards as one cluster's are
// (cluster.go). Shards are numbered across the world, cluster 0's first:
// shard g is shard g mod shards of cluster g div shards, and a failover's
// target g<g> names it. Each cluster is formed on its own nodes only (its
// own MEETs, slots and replicas: formCluster) and each client has one
// ClusterClient a cluster, seeded with that cluster's nodes. Slot
// migration and the cluster's own failover are for one cluster, in the
// simulator as here (sim.Config's validation refuses the rest).

// allShards is the number of shards of every cluster.
func (c *clusterSide) allShards() int { return c.shards * c.clusters }

// clusterOf is node n's cluster.
func (c *clusterSide) clusterOf(n int) int { return n / (c.shards * c.size) }

// firstNode is cluster cl's first node (its shard 0's first primary).
func (c *clusterSide) firstNode(cl int) int { return cl * c.shards * c.size }

// Clusters returns the client's ClusterClients, one for each independent
// cluster in order (scenarios.RunClient hands them to a lock over several
// clusters as locks.Env.Clusters), nil outside a cluster world.
func (p *proc) Clusters() []*redis.ClusterClient { return p.clusters }

// notePromoted records a promotion of failover fault i: a failover, and
// the promotion (sim.FaultEffect.NotePromotion: the replica that lacked a
// live lock key if one did, else the first promoted of a shard that held
// one, else the first promoted). The simulator's agent promotes the
// shards in order in one tick; real promotions land in any order (a run
// of failover-wait-cluster saw shard 1's n4 promoted before the key's
// shard 0's replica).
func (w *world) notePromoted(i int, name string, keyed, lacking bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.Failovers++
	if e := w.effectLocked(i); e != nil {
		e.NotePromotion(name, keyed, lacking)
	}
}
