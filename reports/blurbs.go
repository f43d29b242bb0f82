package reports

import "github.com/locksim/locksim/locks/catalogue"

// blurbs say in a line what each design is and whose it is: the index's
// lock list, the heat map's column titles and the verdicts' links. The
// full description is the catalogue's (locks.Info.Design, Source), on the
// lock's page. TestBlurbs checks that every catalogue design has one.
var blurbs = map[string]string{
	"setnx-del":             "SETNX, then DEL when done; no expiry: a crashed holder keeps the lock forever (CSDN article, v1)",
	"setnx-expire":          "SETNX, then EXPIRE 10 s as a second command (not atomic); plain DEL (CSDN article, v2)",
	"set-nx-del":            "SET NX EX 10 in one command, but released by a plain DEL with no owner check (CSDN, Tencent Cloud)",
	"getset-expiry":         "expiry time in the value on the client's clock, taken over by GETSET once it has passed (Tencent Cloud article)",
	"set-nx-getdel":         "SET NX EX 3 with a uuid; released by GET, compare in the client, then DEL: two commands (the release the Lua article warns against)",
	"set-nx-cad":            "single node, SET NX PX with a random value, Lua compare-and-delete release: the debate's A1",
	"spin-retry":            "set-nx-cad retried every 50 ms, up to 20 times (Tencent Cloud's spin helper)",
	"watchdog":              "set-nx-cad with a 30 s lease renewed every 10 s by a watchdog (CSDN v4/v5, Redisson style)",
	"redisson-lock":         "Redisson RLock: a reentrant hash by Lua, tryLock(500 ms) and the 30 s watchdog",
	"redisson-rw":           "Redisson RReadWriteLock: shared readers or one writer in one hash, with the watchdog",
	"redisson-fair":         "Redisson RFairLock: RLock plus a FIFO queue of waiters with timeouts on the caller's clock",
	"primary-replica":       "set-nx-cad on a primary with 2 async replicas and Sentinel failover: the debate's A2",
	"set-nx-wait":           "SET NX PX then WAIT 1 1000 on a Sentinel-managed primary: held only if a replica acknowledged",
	"redisson-wait":         "Redisson 4.7.0 RLock: every script followed by WAIT for the connected replicas, 0 synced throws",
	"redisson-waitaof":      "Redisson 3.51.0 RLock: with the AOF on, every script followed by WAITAOF 1 for the connected replicas, 0 synced throws",
	"cluster-set-nx-cad":    "set-nx-cad through go-redis's ClusterClient on a Redis Cluster of 3 shards: the key on its slot's primary",
	"redisson-cluster":      "Redisson RLock in cluster mode: redisson-lock's scripts through a ClusterClient, on the key's slot's primary",
	"redisson-wait-cluster": "Redisson 4.7.0 RLock in cluster mode: each script then WAIT on the key's slot's primary",
	"redlock-3-clusters":    "Redisson RedissonRedLock over 3 independent Redis Clusters, a majority of 2 (the SETNX article's §3.2 in cluster mode)",
	"redlock":               "Redlock: SET NX PX on N independent nodes (5 by default), a majority wins, validity = TTL − elapsed − drift: the debate's A3",
	"redsync":               "go-redsync/redsync v4.18.0, unmodified: Redlock in Go, a goroutine per node",
	"redisson-multilock":    "Redisson RedissonRedLock over 3 Sentinel groups, a majority of 2 (the SETNX article's §3.2)",
	"fencing":               "a lock plus a token from INCR on the lock's primary; the storage rejects a lower token (Kleppmann's fencing): A5",
	"fencing-strict":        "fencing against a storage that also rejects a repeated token from another owner",
	"token-cas":             "set-nx-cad, and the storage compare-and-sets on the holder's random value (antirez's answer): A6",
	"version-cas":           "no lock: read the object's version, write only if unchanged, retry (optimistic locking)",
	"zk-lock":               "ZooKeeper's recipe: ephemeral sequential nodes on a 3-member raft store, 3 s sessions (Curator's mutex)",
	"zk-fencing":            "zk-lock, and the node's creation index (czxid) as the fencing token (Kleppmann: use ZooKeeper)",
	"etcd-mutex":            "etcd's own concurrency.Mutex on a session lease; the lowest create revision holds (real arm only)",
	"etcd-fencing":          "etcd-mutex, and the key's create revision as the fencing token (real arm only)",
	"redislock":             "bsm/redislock v0.10.0, unmodified: one node, Lua obtain and release",
	"go-zero":               "zeromicro/go-zero v1.10.3 RedisLock, unmodified: one node, one attempt, Lua get-then-set and compare-and-delete",
	"gocron":                "go-co-op/gocron-redis-lock v2.1.0, unmodified: redsync on one node, one try, 8 s expiry",
}

// blurb is a design's line: blurbs', else the catalogue's description.
func blurb(id string) string {
	if b, ok := blurbs[id]; ok {
		return b
	}
	info, _ := catalogue.Get(id)
	return oneLine(info.Design)
}
