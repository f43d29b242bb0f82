package catalogue

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// Redisson's RLock in cluster mode (config.useClusterServers(), “The
// SETNX command” §2): the same scripts, sent by a ClusterClient to the
// primary of the key's slot. The lock's hash (KEYS[1]), its pub/sub
// channel redisson_lock__channel:{key} and Redisson 4.7.0's unlock latch
// redisson_unlock_latch:{key}:id carry the key as a hash tag, so every
// script's keys are in one slot and run on one shard.

func init() {
	Register(locks.Info{
		ID:        "redisson-cluster",
		Design:    "Redisson RLock in cluster mode on a Redis Cluster of 3 shards: redisson-lock's scripts (hash + Lua, tryLock(500 ms, no leaseTime), the watchdog renewing 30 s every 10 s), each sent through go-redis's ClusterClient to the primary of the key's slot (the channel redisson_lock__channel:{key} hashes to the same slot)",
		Source:    "“The SETNX command” §2 (config.useClusterServers(): RLock on a Redis Cluster; its own example is tryLock(500, 10000): this design keeps redisson-lock's watchdog, no leaseTime), “Redis and ZooKeeper locks” (CSDN) (lock loss in cluster mode); Redisson 3.16 RedissonLock's scripts (redisson.go)",
		Weakness:  "as redisson-lock: a pause longer than the 30 s lease starves the watchdog; the key lives on one shard's primary, whose asynchronous replica may be promoted without it, and another client takes the lock there",
		Topology:  locks.Cluster,
		TTL:       RedissonWatchdogTimeout,
		Reentrant: true,
		Renews:    true,
		New: func(env locks.Env) (locks.Lock, error) {
			if env.Cluster == nil {
				return nil, errors.New("redisson-cluster: the world gives no Redis Cluster client (Env.Cluster): it runs in a cluster world only")
			}
			l := NewRedissonLock(env, 500*time.Millisecond, 0)
			l.cluster = env.Cluster
			return l, nil
		},
	})
	Register(locks.Info{
		ID:        "redisson-wait-cluster",
		Design:    "Redisson 4.7.0 RLock in cluster mode with its replica sync (redisson-wait's syncedEval) on a Redis Cluster of 3 shards, each a primary with replicas: every lock, unlock and watchdog script runs on the primary of the key's slot, followed on the same connection by WAIT <that primary's connected replicas> 1000; 0 synced throws NoSyncedSlavesException after unlocking. tryLock(500 ms, no leaseTime), watchdog renewing 30 s every 10 s",
		Source:    "Redisson 4.7.0 (tag redisson-4.7.0, 0c286e86): CommandAsyncService.java syncedEval on the key's slot's MasterSlaveEntry (wait.go); “The SETNX command” §2 (Redisson in cluster mode), “Redis and ZooKeeper locks” (CSDN) (lock loss in cluster mode)",
		Weakness:  "as redisson-wait on the key's shard: WAIT counts acknowledgements, it does not choose the promotion; a shard that fails over after its replica acknowledged keeps the lock, one that promotes a replica that never acknowledged loses it; a pause longer than the 30 s lease starves the watchdog",
		Topology:  locks.Cluster,
		TTL:       RedissonWatchdogTimeout,
		Reentrant: true,
		Renews:    true,
		New: func(env locks.Env) (locks.Lock, error) {
			if env.Cluster == nil {
				return nil, errors.New("redisson-wait-cluster: the world gives no Redis Cluster client (Env.Cluster): it runs in a cluster world only")
			}
			l := NewRedissonWaitLock(env, 500*time.Millisecond, 0)
			l.cluster = env.Cluster
			return l, nil
		},
	})
}

// client is the MasterSlaveEntry syncedEval sends to: Env.Primary, or in
// cluster mode the ClusterClient's node client for the primary of the
// key's slot (its slot map: refreshed on MOVED). A new primary's replica
// count is unknown until INFO reads it.
func (s *redissonSynced) client(ctx context.Context, l *RedissonLock) (*redis.Client, error) {
	if l.cluster == nil {
		return l.Env.Primary, nil
	}
	c, err := l.cluster.MasterForKey(ctx, l.Env.Key)
	if err != nil {
		return nil, err
	}
	if addr := c.Options().Addr; addr != s.entry {
		s.entry, s.available = addr, -1
	}
	return c, nil
}

// eval runs an unsynced script on c (no replicas, or no WAIT).
func (s *redissonSynced) eval(ctx context.Context, l *RedissonLock, c *redis.Client, script string, keys []string, args ...any) *redis.Cmd {
	ev := c.Eval(ctx, script, keys, args...)
	if err := ev.Err(); err != nil && !errors.Is(err, redis.Nil) {
		s.moved(ctx, l, err)
	}
	return ev
}

// moved: a node client does not follow MOVED (the ClusterClient does, for
// its own commands), so a script that reached a node no longer serving the
// key's slot fails, and the ClusterClient reloads its slot map for the
// next try (Redisson's cluster connection manager learns the new primary
// from the redirect too).
func (s *redissonSynced) moved(ctx context.Context, l *RedissonLock, err error) {
	if l.cluster != nil && strings.HasPrefix(err.Error(), "MOVED ") {
		l.cluster.ReloadState(ctx)
	}
}
