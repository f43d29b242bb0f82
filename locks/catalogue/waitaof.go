package catalogue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// redisson-waitaof: Redisson 3.51.0's RLock (tag redisson-3.51.0, commit
// 8500aa50). Its scripts are 4.7.0's (wait.go); its syncedEval differs in
// one way: CommandAsyncService.java:1131 reads aof_enabled from the same
// INFO ALL as connected_slaves, and createCommandBatchService
// (:1174-1181) then pipelines WAITAOF 1 <replicas> <slavesSyncTimeout>
// (BatchOptions.syncAOF) where 4.7.0 sends WAIT <replicas>. The batch's
// synced count is the WAITAOF reply's second element, the replicas that
// fsynced (CommandBatchService.java:338-344); the first, the local fsync,
// is read by nobody. As with WAIT, 0 synced while replicas are connected
// is NoSyncedSlavesException: a try runs the unlock script and throws.
// Redisson 3.46.0 to 3.52.0 do this for RLock; 4.0.0 (commit 64bacfef,
// "RSemaphore and RLock objects wait too long if aof enabled") sends WAIT
// again for RLock (SyncMode.WAIT).

func init() {
	Register(locks.Info{
		ID:        "redisson-waitaof",
		Design:    "Redisson 3.51.0 RLock with its replica sync (checkLockSyncedSlaves true, slavesSyncTimeout 1 s): as redisson-wait, but when INFO ALL says aof_enabled:1 every lock, unlock and watchdog script is pipelined with WAITAOF 1 <connected replicas> 1000 instead of WAIT; only the reply's replica count is read (the local fsync is ignored); 0 replicas fsynced while replicas are connected: the try runs the unlock script and throws NoSyncedSlavesException. tryLock(500 ms, no leaseTime), watchdog renewing 30 s every 10 s",
		Source:    "Redisson 3.51.0 (tag redisson-3.51.0, 8500aa50): CommandAsyncService.java:1057-1171 syncedEval (aof_enabled read from INFO ALL :1131, NoSyncedSlavesException :1158-1162), :1174-1181 createCommandBatchService (syncAOF(1, availableSlaves, timeout)), CommandBatchService.java:445-454 (WAITAOF appended to the batch), :338-344 (synced = the reply's second element); RedissonLock.java:218-228 tryLockInnerAsync; 4.0.0 commit 64bacfef returns RLock to WAIT; redisson #6920 (appendfsync no: \"None of slaves were synced\"), #6619",
		Weakness:  "appendfsync no: no replica ever fsyncs, so every WAITAOF answers 0 replicas after its 1 s and every try fails: the lock is never granted (redisson #6920); everysec: each lock, unlock and renewal waits up to 1 s for the next fsync tick; WAITAOF, like WAIT, counts replicas, it does not choose the promotion, so a failover to a replica that did not fsync still loses the lock",
		Topology:  locks.Replicated,
		TTL:       RedissonWatchdogTimeout,
		Reentrant: true,
		Renews:    true,
		New: func(env locks.Env) (locks.Lock, error) {
			return NewRedissonWaitAOFLock(env, 500*time.Millisecond, 0), nil
		},
	})
}

// NewRedissonWaitAOFLock is Redisson 3.51.0's RLock, tryLock(wait, lease)
// (lease 0: the watchdog), on env's key: redisson-wait's lock with
// WAITAOF where the primary has an AOF.
func NewRedissonWaitAOFLock(env locks.Env, wait, lease time.Duration) *RedissonLock {
	return &RedissonLock{Env: env, WaitTime: wait, LeaseTime: lease, WatchdogTimeout: RedissonWatchdogTimeout,
		id: uuidValue(env) + ":1", variant: &redissonSynced{available: -1, aof: true}}
}

// waitAOFReplicas sends WAITAOF 1 n <slavesSyncTimeout> on cn and returns
// the replicas its reply counts (the local fsync is not read, as in
// Redisson 3.51.0).
func waitAOFReplicas(ctx context.Context, cn *redis.Conn, n int) (int, error) {
	got, err := cn.WaitAOF(ctx, 1, n, RedissonSlavesSyncTimeout).Result()
	if err != nil {
		return 0, err
	}
	if len(got) != 2 {
		return 0, fmt.Errorf("redisson: WAITAOF answered %d values, want 2", len(got))
	}
	return int(got[1]), nil
}
