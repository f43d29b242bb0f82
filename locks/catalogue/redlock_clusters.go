package catalogue

import (
	"fmt"
	"time"

	"github.com/locksim/locksim/locks"
)

// RedlockClusters is the number of independent Redis Clusters
// redlock-3-clusters runs over (“The SETNX command” §3.2: config1,
// config2, config3 in cluster mode, “3个独立的Cluster集群”).
const RedlockClusters = 3

func init() {
	Register(locks.Info{
		ID:       "redlock-3-clusters",
		Design:   "Redisson RedissonRedLock over 3 independent Redis Clusters of 3 shards each (one RedissonClient in cluster mode a cluster): tryLock(500 ms, 30 s) takes Redisson's RLock (hash + Lua) in each cluster in turn, on the primary of the key's slot there, through that cluster's go-redis ClusterClient; each try's own waiting bounded by 500/3 ms with a 1 s lease (2 × waitTime), a majority of 2 suffices, a failed round releases what it took and starts over while the wait lasts, then PEXPIRE 30 s on every lock it took; unlock in every cluster, failures ignored",
		Source:   "“The SETNX command” §3.2 (RedissonRedLock(lock1, lock2, lock3).tryLock(500, 30000, MILLISECONDS); \"3个独立的Cluster集群\": three independent clusters for Redlock in cluster mode) and §4.1 (N nodes: N single instances, N Sentinel sets or N clusters, never one cluster of N primaries); Redisson 3.11 RedissonMultiLock.tryLock, RedissonRedLock (redisson_multi.go)",
		Weakness: "as redisson-multilock, with a cluster where it has a Sentinel group: each cluster's shard fails over with async replication, so a failover can lose the key in a cluster that is part of a bare majority, and a failover that strikes every cluster at once loses a lock just taken in all of them; no validity check (the holder believes its 30 s lease whatever the round took), no fencing token",
		Topology: locks.Cluster,
		Clusters: RedlockClusters,
		TTL:      30 * time.Second,
		New: func(env locks.Env) (locks.Lock, error) {
			if len(env.Clusters) != RedlockClusters {
				return nil, fmt.Errorf("redlock-3-clusters: the world gives %d Redis Cluster clients (Env.Clusters), the design runs over %d independent clusters", len(env.Clusters), RedlockClusters)
			}
			return NewRedissonRedLockClusters(env, 500*time.Millisecond, 30*time.Second), nil
		},
	})
}

// NewRedissonRedLockClusters builds RedissonRedLock's tryLock(wait, lease)
// over env.Clusters: one RLock a cluster, its scripts and PEXPIRE sent
// through that cluster's ClusterClient to the primary of the key's slot
// (RedissonLock.cluster), each with its own RedissonClient id.
func NewRedissonRedLockClusters(env locks.Env, wait, lease time.Duration) *RedissonRedLock {
	l := &RedissonRedLock{Env: env, WaitTime: wait, LeaseTime: lease}
	for _, c := range env.Clusters {
		sub := env
		sub.Primary, sub.Nodes, sub.Groups, sub.Cluster, sub.Clusters = nil, nil, nil, nil, nil
		sub.Hooks.At = func(pt locks.PausePoint) {
			if pt == locks.PointAcquiring {
				env.At(pt)
			}
		}
		sub.Hooks.Go, sub.Hooks.Renewed = nil, nil
		rl := NewRedissonLock(sub, 0, 0)
		rl.cluster = c
		l.locks = append(l.locks, rl)
	}
	return l
}
