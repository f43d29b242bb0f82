package catalogue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// The WAIT-based locks: a plain SET NX PX followed by WAIT 1,
// and Redisson's current RLock, whose every lock, unlock and renewal
// script is pipelined with a WAIT for the replicas it believes connected.

// Redisson 4.7.0's RLock scripts (tag redisson-4.7.0, commit 0c286e86):
// RedissonLock.java:215-223 tryLockInnerAsync, :347-370 unlockInnerAsync
// (with the unlock latch, KEYS[3]), renewal/LockTask.java:82-94 (the
// watchdog's script, here for one key).
const (
	Redisson47LockScript = "if ((redis.call('exists', KEYS[1]) == 0) " +
		"or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"return redis.call('pttl', KEYS[1]);"
	Redisson47UnlockScript = "local val = redis.call('get', KEYS[3]); " +
		"if val ~= false then " +
		"return tonumber(val);" +
		"end; " +
		"if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then " +
		"return nil;" +
		"end; " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
		"if (counter > 0) then " +
		"redis.call('pexpire', KEYS[1], ARGV[2]); " +
		"redis.call('set', KEYS[3], 0, 'px', ARGV[5]); " +
		"return 0; " +
		"else " +
		"redis.call('del', KEYS[1]); " +
		"redis.call(ARGV[4], KEYS[2], ARGV[1]); " +
		"redis.call('set', KEYS[3], 1, 'px', ARGV[5]); " +
		"return 1; " +
		"end; "
	Redisson47RenewScript = "local result = {} " +
		"for i = 1, #KEYS, 1 do " +
		"if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then " +
		"redis.call('pexpire', KEYS[i], ARGV[1]); " +
		"table.insert(result, 1); " +
		"else " +
		"table.insert(result, 0); " +
		"end; " +
		"end; " +
		"return result;"
)

// RedissonSlavesSyncTimeout is Redisson 4.7.0's slavesSyncTimeout default
// (Config.java:89): WAIT's timeout.
const RedissonSlavesSyncTimeout = time.Second

func init() {
	Register(locks.Info{
		ID:       "set-nx-wait",
		Design:   "SET key value NX PX ttl (10 s) on the primary of a primary + 2 async replicas with Sentinel, then WAIT 1 1000: held only if WAIT says at least one replica acknowledged the key within 1 s; fewer: the key is given back by Lua compare-and-delete and the try fails (3 tries, 1 s apart); release by Lua compare-and-delete",
		Source:   "redis.io WAIT (\"WAIT does not make Redis a strongly consistent store\"); DEBATE.md S5",
		Weakness: "WAIT counts acknowledgements, it does not choose the promotion: a failover that promotes a replica other than the one that acknowledged (the acknowledging replica down or cut off from Sentinel), or a split brain in which the old primary keeps a replica on its side, loses an acknowledged key and a second client acquires; a holder paused past the TTL keeps acting",
		Topology: locks.Replicated,
		Params:   waitParams(),
		Configure: func(v locks.Values) (locks.Configured, error) {
			c, err := cad(v, true)
			if err != nil {
				return locks.Configured{}, err
			}
			return locks.Configured{TTL: c.TTL, New: func(env locks.Env) (locks.Lock, error) {
				x := c
				x.Env = env
				return &x, nil
			}}, nil
		},
	})
	Register(locks.Info{
		ID:        "redisson-wait",
		Design:    "Redisson 4.7.0 RLock with its replica sync (checkLockSyncedSlaves true, slavesSyncTimeout 1 s): every lock, unlock and watchdog script is pipelined with WAIT <connected replicas> 1000 (the count read once from INFO ALL's connected_slaves and read again whenever WAIT answers another number); a try that WAIT answers 0 for while replicas are connected runs the unlock script and throws NoSyncedSlavesException; one replica is enough. tryLock(500 ms, no leaseTime), watchdog renewing 30 s every 10 s",
		Source:    "Redisson 4.7.0 (tag redisson-4.7.0, 0c286e86): CommandAsyncService.java:1095-1235 syncedEval (INFO ALL connected_slaves :1167-1187, WAIT batch :1198, count reset :1217-1220, NoSyncedSlavesException when 0 synced :1221-1225), :1039-1066 handleNoSync (unlock, then throw), RedissonLock.java:193 and :215-223 (tryLockInnerAsync via RedissonBaseLock.java:80 evalWriteSyncedNoRetryAsync), :347-370 unlockInnerAsync, renewal/LockTask.java:82 (renewal synced too), RenewalTask.java:176-183 (a failed renewal is logged and rescheduled), Config.java:87-89 (defaults); redisson #5965, #3994, #6518",
		Weakness:  "WAIT counts acknowledgements, it does not choose the promotion: a failover that promotes a replica other than the one that acknowledged, or a split brain in which the old primary keeps a replica, loses an acknowledged lock and a second client acquires; one acknowledging replica suffices (a WAIT for 2 that returns 1 holds); as redisson-lock, a pause longer than the 30 s lease starves the watchdog",
		Topology:  locks.Replicated,
		TTL:       RedissonWatchdogTimeout,
		Reentrant: true,
		Renews:    true,
		New: func(env locks.Env) (locks.Lock, error) {
			return NewRedissonWaitLock(env, 500*time.Millisecond, 0), nil
		},
	})
}

// waitParams is set-nx-wait's table: set-nx-cad's with WAIT's rows, one
// replica and 1 s by default.
func waitParams() []locks.Param {
	// A 10 s lease: WAIT may take its whole 1 s timeout before the holder
	// knows it holds, and that second comes out of the lease (start is
	// before the SET); with set-nx-cad's 3 s a third of it could go.
	ps := cadParams(10*time.Second, true)
	for i := range ps {
		if ps[i].Name == "wait_replicas" {
			ps[i].Default, ps[i].Min = locks.Int(1), locks.Int(1)
			ps[i].Doc = "replicas that must acknowledge the SET (WAIT numreplicas), or the key is given back and the try fails"
		}
	}
	return ps
}

// NoSyncedSlavesError is Redisson's NoSyncedSlavesException: WAIT answered
// 0 while the primary had replicas connected. The try that got it has run
// the unlock script already, so it is a refusal (locks.ErrNotAcquired).
var NoSyncedSlavesError = fmt.Errorf("%w: None of slaves were synced. Try to increase slavesSyncTimeout setting or set checkLockSyncedSlaves = false.", locks.ErrNotAcquired)

// NewRedissonWaitLock is Redisson 4.7.0's RLock, tryLock(wait, lease) (lease
// 0: the watchdog), on env's key: RedissonLock's tryLock loop and watchdog
// with redissonSynced's scripts.
func NewRedissonWaitLock(env locks.Env, wait, lease time.Duration) *RedissonLock {
	return &RedissonLock{Env: env, WaitTime: wait, LeaseTime: lease, WatchdogTimeout: RedissonWatchdogTimeout,
		id: uuidValue(env) + ":1", variant: &redissonSynced{available: -1}}
}

// redissonSynced is Redisson 4.7.0's syncedEval around RLock's scripts, as
// one RedissonClient with one MasterSlaveEntry:
//
//	WAIT 0 0, WAITAOF 0 0 0            (pipelined, once: which WAITs the server has)
//	INFO ALL                           (when the replica count is unknown: connected_slaves)
//	EVAL <script> ..., WAIT n 1000     (one connection; n the replica count)
//
// A WAIT reply other than n makes the count unknown again (read at the
// next call: the fix of redisson #6518). A WAIT reply of 0 with n > 0 is
// NoSyncedSlavesException: for a lock try, handleNoSync runs the unlock
// script (synced too; its own exception swallowed) and the try throws
// (Acquire returns NoSyncedSlavesError); for an unlock it throws (Release
// returns the error); for a renewal the watchdog logs it and carries on
// (the PEXPIRE ran on the primary: reported as renewed). With n = 0 no
// WAIT is sent. A renewal's other failures stop this watchdog (Redisson
// 4.7 reschedules it; the lease in this catalogue's worlds is longer than
// any hold, so no later renewal could matter).
type redissonSynced struct {
	available int  // MasterSlaveEntry.availableSlaves: -1 unknown
	probed    bool // waitSupportedCommands known
	noWait    bool // the server has no WAIT: scripts run unsynced
	// entry is the address of the primary available counts for (cluster
	// mode: the key's slot's MasterSlaveEntry; redisson_cluster.go).
	entry string
	// aof: Redisson 3.46-3.52's syncedEval (redisson-waitaof, waitaof.go):
	// when INFO ALL says aof_enabled:1 (aofOn, read with the replica
	// count), WAITAOF 1 n replaces WAIT n.
	aof, aofOn bool
}

// syncedEval runs script with keys and args, pipelined with WAIT, and
// returns the script's command and the number of replicas WAIT counted.
func (s *redissonSynced) syncedEval(ctx context.Context, l *RedissonLock, script string, keys []string, args ...any) (*redis.Cmd, error) {
	c, err := s.client(ctx, l)
	if err != nil {
		return nil, err
	}
	if !s.probed {
		pipe := c.Pipeline()
		w := pipe.Do(ctx, "wait", 0, 0)
		a := pipe.Do(ctx, "waitaof", 0, 0, 0)
		_, _ = pipe.Exec(ctx)
		we, ae := unknownCommand(w.Err(), "WAIT"), unknownCommand(a.Err(), "WAITAOF")
		if w.Err() != nil && a.Err() != nil && !we && !ae {
			return nil, w.Err() // neither answered: Redisson throws
		}
		if w.Err() != nil && !we {
			return nil, w.Err()
		}
		s.probed, s.noWait = true, we
	}
	if s.noWait {
		return s.eval(ctx, l, c, script, keys, args...), nil
	}
	n := s.available
	if n < 0 {
		info, err := c.Info(ctx, "all").Result()
		if err != nil {
			return nil, err
		}
		n = connectedSlaves(info)
		s.available = n
		s.aofOn = s.aof && infoField(info, "aof_enabled") == "1"
	}
	if n == 0 {
		return s.eval(ctx, l, c, script, keys, args...), nil
	}
	// One connection: WAIT counts the replicas that acknowledged this
	// connection's writes. Redisson pipelines the two in one write; here
	// they go back to back, because go-redis reads a pipeline's replies
	// with the client's read timeout (500 ms in the simulator), shorter
	// than WAIT's 1 s, and gives a lone WAIT its timeout plus 10 s (as
	// Redisson adds the sync timeout to its response timeout).
	cn := c.Conn()
	defer cn.Close()
	ev := cn.Eval(ctx, script, keys, args...)
	if err := ev.Err(); err != nil && !errors.Is(err, redis.Nil) {
		s.moved(ctx, l, err)
		return nil, err
	}
	synced, err := s.sync(ctx, cn, n)
	if err != nil {
		return nil, err
	}
	if synced != n {
		s.available = -1
	}
	if synced == 0 {
		return ev, NoSyncedSlavesError
	}
	return ev, nil
}

// unknownCommand reports whether err is the server's "ERR unknown command"
// for name (how Redisson tells a missing WAIT or WAITAOF).
func unknownCommand(err error, name string) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "ERR unknown command") && strings.Contains(strings.ToUpper(msg), name)
}

// sync sends the WAIT (or, with aofOn, the WAITAOF) after a script on cn
// and returns the replicas it counted.
func (s *redissonSynced) sync(ctx context.Context, cn *redis.Conn, n int) (int, error) {
	if s.aofOn {
		return waitAOFReplicas(ctx, cn, n)
	}
	got, err := cn.Wait(ctx, n, RedissonSlavesSyncTimeout).Result()
	return int(got), err
}

// connectedSlaves reads connected_slaves from an INFO reply (0 if absent,
// as Redisson's getOrDefault).
func connectedSlaves(info string) int {
	if n, err := strconv.Atoi(infoField(info, "connected_slaves")); err == nil && n >= 0 {
		return n
	}
	return 0
}

// infoField is the value of field in an INFO reply ("" if absent).
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

func (s *redissonSynced) try(ctx context.Context, l *RedissonLock) (bool, time.Duration, error) {
	ev, err := s.syncedEval(ctx, l, Redisson47LockScript, []string{l.Env.Key}, l.lease().Milliseconds(), l.id)
	if errors.Is(err, NoSyncedSlavesError) {
		// handleNoSync: unlockInnerAsync(threadId, null), then throw.
		_, _ = s.unlockOnce(ctx, l)
		return false, 0, err
	}
	if err != nil {
		return false, 0, err
	}
	return redissonReply(ev.Int64())
}

// unlockOnce runs unlockInnerAsync: the unlock script under a fresh
// request id's latch, synced, then a plain DEL of the latch.
func (s *redissonSynced) unlockOnce(ctx context.Context, l *RedissonLock) (*redis.Cmd, error) {
	key := l.Env.Key
	latch := "redisson_unlock_latch:" + rwKeyPrefix(key) + ":" + randomValue(l.Env.Rand)
	// RedissonBaseLock.unlockInnerAsync's timeout: (timeout 3000 ms +
	// EqualJitterDelay(1 s, 2 s) at retryAttempts 4) × retryAttempts 4.
	timeout := (3000 + 1000 + l.Env.Rand.Int64N(1001)) * 4
	ev, err := s.syncedEval(ctx, l, Redisson47UnlockScript, []string{key, l.Channel(), latch},
		0, l.lease().Milliseconds(), l.id, "publish", timeout)
	if err == nil {
		if _, e := ev.Result(); e == nil || errors.Is(e, redis.Nil) {
			l.cmd().Del(ctx, latch)
		}
	}
	return ev, err
}

func (s *redissonSynced) unlock(ctx context.Context, l *RedissonLock) error {
	ev, err := s.unlockOnce(ctx, l)
	if err != nil {
		return err
	}
	return redissonUnlockReply(ev.Int64())
}

func (s *redissonSynced) renew(ctx context.Context, l *RedissonLock, lease time.Duration) (int64, error) {
	ev, err := s.syncedEval(ctx, l, Redisson47RenewScript, []string{l.Env.Key}, lease.Milliseconds(), l.id)
	if err != nil && !errors.Is(err, NoSyncedSlavesError) {
		return 0, err
	}
	vals, e := ev.Int64Slice()
	if e != nil {
		return 0, e
	}
	if len(vals) != 1 {
		return 0, fmt.Errorf("redisson renew: %d results for one key", len(vals))
	}
	return vals[0], nil
}

func (s *redissonSynced) failed(context.Context, *RedissonLock) {}
func (s *redissonSynced) poll() time.Duration                   { return 0 }
func (s *redissonSynced) read() bool                            { return false }
