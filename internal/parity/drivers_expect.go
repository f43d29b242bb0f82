package parity

// The drivers table's expectations, written from each library's code
// before any of these cells was measured. Each names the
// source lines it rests on: redis-py 4.3.4's
// /usr/lib/python3/dist-packages/redis/lock.py, npm redlock 4.2.0's
// drivers/node-redlock/node_modules/redlock/redlock.js, npm redis-semaphore
// 5.8.0's drivers/node-redis-semaphore/node_modules/redis-semaphore/lib/,
// and the control's
// drivers/python-set-nx-cad/driver.py. Every driver runs in set-nx-cad's
// world (one Redis node, its TTL), so a scenario's faults are the ones it
// lists for set-nx-cad.

// Expectation is what a library is expected to do in one scenario, and
// why (from its code).
type Expectation struct {
	Verdict string `json:"verdict"` // safe | unsafe | liveness
	Why     string `json:"why"`
}

// Go set-nx-cad's expectations are the scenario files' agreed outcomes;
// the control's are the same (it issues set-nx-cad's commands, driver.py).
const (
	redisPy = "python-redis-py"
	redlock = "node-redlock"
	control = "python-set-nx-cad"
	// fencingControl is the fencing design in Python (FencingWorld).
	fencingControl = "python-fencing"
	// redisSemaphore is npm redis-semaphore 5.8.0's Mutex (one node,
	// background auto-refresh, no validity signal).
	redisSemaphore = "node-redis-semaphore"
)

// driverExpect is keyed by driver, then scenario.
var driverExpect = map[string]map[string]Expectation{
	redisPy: {
		"pause-after-check":      {"unsafe", "acquire() returns True right after do_acquire's SET NX PX (lock.py 206-208, 217-225) and nothing re-reads the key or a clock before the caller writes: a pause past the TTL after it returned makes a stale write"},
		"pause-during-acquire":   {"unsafe", "acquire() measures nothing around do_acquire (lock.py 206-208): the SET's reply arrives, the pause outlasts the TTL, and acquire still returns True into a section with an expired key (as Go redislock)"},
		"slow-client-clocks":     {"unsafe", "no validity signal (acquire returns True, line 208): the holder believes until it releases; the workload's sections are 1.21-1.24 TTL of true time on a 20 % slow clock, past the key's PX (line 223)"},
		"clock-jump":             {"unsafe", "the node's clock jumps 2 TTL while the key is held and expires it at once; nothing in the Lock reads the key again before release (lua_release, lines 255-259, only runs at the end)"},
		"delayed-write":          {"unsafe", "as set-nx-cad: SET NX PX and a compare-and-delete (lines 27-34, 217-225); a write held in the network lands after the next holder's"},
		"restart-no-persistence": {"unsafe", "the node restarts empty under a holder; the Lock never checks ownership before its release (owned(), lines 234-243, is an extra round trip the documented use does not make)"},
		"no-faults":              {"safe", "SET NX PX (line 223) and a compare-and-delete release (LUA_RELEASE_SCRIPT, lines 27-34)"},
		"foreign-release":        {"safe", "release runs LUA_RELEASE_SCRIPT (lines 27-34, 255-259): a stale release deletes nothing and raises LockNotOwnedError; the next holder's key stays"},
		// Written before the failover cell was first run.
		"failover": {"unsafe", "do_acquire's SET NX PX (lock.py 217-225) goes to the primary Sentinel names (sentinel.py 111-119 get_master_address; 40-44: asked again on every new connection), and replication is asynchronous (failover.yaml: repl_lag 2 s; redis-server 7.0 replicates the key after the reply): a primary killed within 2 s of the SET leaves a promoted replica without the key, and the other client's SET NX succeeds there (measured for the Go primary-replica, PARITY.md section 6) while the first, with no validity signal (acquire returns True, line 208), believes until its release; that release then raises LockNotOwnedError (lines 255-259): an overlap, not prevented"},
	},
	redlock: {
		"pause-after-check":      {"unsafe", "lock() checks votes >= quorum && lock.expiration > Date.now() once (redlock.js 419) before resolving; the pause is after that check, and nothing re-reads it before the write"},
		"pause-during-acquire":   {"safe", "the pause lands after the node's reply to lockScript, before loop's check (the driver wraps _executeScript: the 'acquiring' point); expiration = start + ttl - drift (lines 397, 415-416) is then past Date.now(), so the check at line 419 fails, the lock is unlocked and retried (lines 424-429), as the Go redlock"},
		"slow-client-clocks":     {"unsafe", "expiration is start + ttl - drift on Date.now() (lines 397, 416), which libfaketime runs 20 % slow: the validity it reports is 1.24 TTL of true time, and the section runs to it, past the key's PX (as Go redlock: outside its assumptions)"},
		"clock-jump":             {"unsafe", "one node here: the node's clock jumps 2 TTL and expires the key under the holder; the validity (line 416) is on the client's clock and cannot see it"},
		"delayed-write":          {"unsafe", "lock()'s check (line 419) is before the section; a write held in the network lands after the next holder's"},
		"restart-no-persistence": {"unsafe", "the one node restarts empty under a holder (a quorum of 1 of 1); redis.io's fsync or delayed restart is not there"},
		"no-faults":              {"safe", "lockScript sets the key only if none exists (lines 9-24) and unlockScript deletes only its own value (lines 26-34)"},
		"foreign-release":        {"safe", "unlockScript deletes a key only if its value is the lock's (lines 26-34); the stale unlock rejects with a LockError (driver: fail)"},
	},
	// npm redis-semaphore 5.8.0's Mutex, written from
	// drivers/node-redis-semaphore/node_modules/redis-semaphore/lib/
	// (Lock.js, mutex/acquire.js, mutex/refresh.js, mutex/release.js,
	// misc.js) before the driver ran any of these scenarios. lockTimeout is
	// the TTL; auto-refresh is the library's default: a setInterval of
	// round(0.8 x lockTimeout) (Lock.js 48, 112-115) started once
	// tryAcquire's SET succeeded (Lock.js 137-141), whose expireIfEqualLua
	// PEXPIREs the key only while its value is the Mutex's identifier
	// (refresh.js 11-24); a failed refresh sets isAcquired false, stops
	// the interval and calls onLockLost (Lock.js 61-69), which the driver
	// makes a log line (the default throws: misc.js 11-13). It gives no
	// validity, so a holder believes until it releases, and the refresh's
	// verdict never reaches the caller's write. Issue #175 (a refresh that
	// silently re-SET an expired key) does not apply: 5.8.0's refresh only
	// PEXPIREs its own value and returns 0 otherwise (refresh.js 16-23).
	redisSemaphore: {
		"pause-after-check":      {"unsafe", "tryAcquire starts the refresh interval (Lock.js 137-141) and returns before the after-check point; SIGSTOP stops the whole process, timers included, so nothing re-times the key during the 1.5 TTL pause (PX lockTimeout, acquire.js 17): it expires and another client takes it. At SIGCONT the overdue refresh's GET finds another value, returns 0 (refresh.js 16-23) and onLockLost runs (Lock.js 61-69), but it only flips isAcquired: the acquire's ok and the write go on, and with no validity the holder believes until its release"},
		"pause-during-acquire":   {"unsafe", "acquireMutex returns true as soon as SET NX PX says OK (acquire.js 17-21), measuring nothing around it; the pause at the acquiring point (after the SET's reply) outlasts the TTL, the key expires and another client takes it, and tryAcquire still resolves true; its refresh starts only then (Lock.js 137-141), 0.8 TTL later, after this short section has released (as redis-py's Lock)"},
		"slow-client-clocks":     {"unsafe", "a race the slow clock loses about as often as it wins: the refresh interval, round(0.8 x lockTimeout) = 400 ms on the driver's clock (Lock.js 48, 113: libuv's timers read CLOCK_MONOTONIC, which libfaketime slows by 20 %), is 500 ms of true time, the key's PX (acquire.js 17); it fires after the SET's round trip, so it reaches the node at about the moment the key expires, and a refresh that finds it gone only calls onLockLost (Lock.js 61-69, refresh.js 16-23). Sections are 1.21-1.24 TTL of true time and the holder, with no validity, believes to the end: each lost race is a window for the other two clients' retries"},
		"clock-jump":             {"unsafe", "the node's clock jumps 2 TTL and expires the key under the holder; sections are 0.5-0.8 TTL, shorter than or about the 0.8 TTL refresh interval, and a refresh that comes finds no key and only calls onLockLost (refresh.js 16-23, Lock.js 61-69); no validity: the holder believes until its release while the other client takes the key"},
		"delayed-write":          {"unsafe", "as set-nx-cad: SET NX PX (acquire.js 17) and a compare-and-delete (release.js 11-20); the write times out at ioredis's commandTimeout, the driver says unknown, the client releases (release stops the refresh, Lock.js 146-148) and the held write lands after the next holder's"},
		"restart-no-persistence": {"unsafe", "the node restarts empty under a holder and the other client's SET NX succeeds; the holder has no validity and believes until its release; a refresh after the restart finds no key or the other's and only calls onLockLost (refresh.js 16-23, Lock.js 61-69)"},
		"no-faults":              {"safe", "SET NX PX (acquire.js 17), a refresh that PEXPIREs only its own value (refresh.js 16-23) and a release that deletes only its own value (release.js 11-20); release stops the interval before deleting (Lock.js 146-151)"},
		"foreign-release":        {"unsafe", "the release is harmless: delIfEqualLua deletes only the Mutex's own value (release.js 11-20), and once the overdue refresh at SIGCONT has found the key gone or another's, release sends nothing at all (isAcquired false, Lock.js 149); but as redis-py's Lock (PARITY.md, foreign-release x python-redis-py) the Mutex gives no validity, so c0, stopped 1.5 TTL in its section, believes it holds while the next client does: a lease overlap"},
		// Written before the failover cell was first run.
		"failover": {"unsafe", "as Go primary-replica: the driver reaches the primary through ioredis's Sentinel connector (master_name, natMap to its proxies); SET NX PX (acquire.js 17) is answered by the primary before its replicas (repl_lag 2 s), a failover within 2 s of it promotes a replica without the key and the other client acquires there, while the holder (no validity; sections 0.6-0.9 TTL) believes until its release; its refresh, every 2.4 s (0.8 x 3 s, Lock.js 48), can only find the key gone and call onLockLost (Lock.js 61-69)"},
	},
	control: {
		"pause-after-check":      {"unsafe", "as Go set-nx-cad (driver.py sends after-check after the SET, then returns)"},
		"pause-during-acquire":   {"unsafe", "as Go set-nx-cad: no elapsed-time check after the SET (driver.py)"},
		"slow-client-clocks":     {"unsafe", "as Go set-nx-cad: validity time.time() before the SET + TTL, on a 20 % slow clock (driver.py)"},
		"clock-jump":             {"unsafe", "as Go set-nx-cad"},
		"delayed-write":          {"unsafe", "as Go set-nx-cad"},
		"restart-no-persistence": {"unsafe", "as Go set-nx-cad"},
		"no-faults":              {"safe", "as Go set-nx-cad"},
		"foreign-release":        {"safe", "as Go set-nx-cad: compare-and-delete release"},
		// Written before the failover cell was first run.
		"failover": {"unsafe", "as Go primary-replica (set-nx-cad on the primary Sentinel names): SET NX PX on a primary whose replicas lag 2 s; a failover within 2 s of the SET promotes a replica without the key and the other client acquires there; the holder's validity, time.time() before the SET + TTL (3 s here, driver.py), still runs: Sentinel promotes 1.6-1.9 s after the kill (PARITY.md section 6)"},
	},
	// python-fencing in fencing's world (a storage that refuses a token
	// lower than the highest it has seen, on reads and writes), written
	// before the driver was first run. Its acquire is fenced.go's line by
	// line (driver.py FENCED_ACQUIRE = fenced.go 15: SET NX PX + INCR
	// "<key>:token" in one script) and returns the token; the harness puts
	// it in STORE.READ key token owner and STORE.WRITE ... token ... as
	// resource.Client does for the Go fencing (client.go 37-41, 62-63).
	fencingControl + "@" + FencingWorld: {
		"pause-after-check": {"safe", "as Go fencing: c0 resumes after its key expired and c1 took token t+1 (INCR, driver.py FENCED_ACQUIRE) and read with it; c0's read or write carries t < t+1 and the max-token storage refuses it (storage.go 188-190: FENCED, recorded fenced): stale operations refused, no lost update"},
		"delayed-write":     {"safe", "as Go fencing: the held write carries the older token; it lands after the next holder's fenced read raised the storage's highest token, and is refused (storage.go 188-190)"},
		"no-faults":         {"safe", "as Go fencing: SET NX PX + INCR in one script, compare-and-delete release (driver.py), every operation carries the holder's token"},
	},
	// node-redlock in Redlock's world (five independent nodes), written
	// after one exploratory run (restart-no-persistence seed 1: unsafe)
	// and before any other measurement of this world.
	redlock + "@" + RedlockWorld: {
		"pause-after-check":      {"unsafe", "the check (line 419) is before the pause; nothing re-reads it before the write"},
		"pause-during-acquire":   {"safe", "the pause is between a node's reply and the vote count (the driver's 'acquiring' point); expiration = start + ttl - drift is then past Date.now() and line 419 refuses, unlocks and retries"},
		"clock-jump":             {"unsafe", "quorum = floor(5/2) + 1 = 3 (line 400): c0 holds n0..n2, n2's clock jumps and expires its key, c1 (cut from n0, n1) takes n2..n4: two majorities"},
		"restart-no-persistence": {"unsafe", "quorum 3 (line 400): c0 holds n0..n2, n2 restarts empty, c1 takes n2..n4; nothing in lock() or the Lock can see a node forget"},
		"restart-fsync-always":   {"safe", "the restarted node keeps the key (appendfsync always), so no second majority forms: lockScript refuses where the key exists (lines 9-24)"},
		"redlock-2-of-5":         {"liveness", "only 2 of 5 nodes reachable: votes < quorum 3 (line 419) on every attempt; lock() rejects after retryCount (lines 427-433): no holder, a liveness failure, never an overlap"},
		"no-faults":              {"safe", "lockScript and unlockScript on five nodes (lines 9-34); quorum 3 (line 400)"},
	},
}
