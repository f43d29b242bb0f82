package sim

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// A Redis Cluster (Topology.Shards): miniredis answers the cluster
// commands for one node only, so the cluster layer is here. The nodes
// split in node order into shards; each shard's first node starts as its
// primary, the rest (a replicated world) are its replicas, replicated as
// any primary/replica group is (replication.go). The slots split among the
// shards as redis-cli --cluster create splits them. Every node answers
// CLUSTER SLOTS, SHARDS, NODES, INFO, MYID and KEYSLOT from the one
// configuration the world holds (the cluster bus's gossip is instant), and
// a keyed command reaching a node that does not serve its slot as a
// primary gets -MOVED slot host:port, as Redis Cluster answers it. Keys of
// one command in different slots get -CROSSSLOT.
//
// A replicated cluster's shards fail over through the world's failover
// agent (sentinel.go, one group a shard; shardNote): by default the
// shard's replica with the most replicated data is promoted once Sentinel
// has not reached its primary for Topology.DownAfter, standing in for the
// cluster's election; with Topology.ClusterFailover the cluster's own
// failure detection and election decide, and a primary cut off from a
// majority of primaries answers -CLUSTERDOWN after the node timeout
// (cluster_failover.go). Slots migrate between shards with ASK
// redirection (cluster_migrate.go).
//
// Not modelled yet: each node's own, possibly stale, view of the slot
// configuration (gossip is instant); WAIT and WAITAOF routed to a key's
// primary.

// ClusterSlotCount is Redis Cluster's number of hash slots.
const ClusterSlotCount = 16384

// ClusterPort is the port every simulated cluster node announces: a node's
// address in CLUSTER SLOTS and in MOVED is its name and this port
// ("n1:6379").
const ClusterPort = 6379

// Dial keys of a process's cluster connections (Proc.connectLocked): one
// range for the ClusterClient's node clients, one for the clients that load
// the slot map, apart from the plain per-node clients (0..MaxNodes) and the
// services (serviceIndex...).
const (
	clusterKeyBase = 1 << 12
	slotsKeyBase   = 1 << 13
)

// KeySlot is the hash slot of key: CRC16 (XMODEM) of the key, or of its
// hash tag (the part between the first '{' and the next '}', when that is
// not empty), modulo 16,384, as the Redis Cluster specification defines it.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % ClusterSlotCount)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), bit by bit:
// the cluster specification's function (go-redis's copy is internal).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// ShardSlots is the slot range [first, last] of shard s of n, as
// redis-cli --cluster create assigns them: shard s ends at
// round((s+1)·16384/n − 1), the last shard at 16,383.
func ShardSlots(s, n int) (first, last int) {
	end := func(s int) int {
		if s == n-1 {
			return ClusterSlotCount - 1
		}
		// lround(x) of x = ((s+1)·16384 − n)/n ≥ 0: floor(x + 1/2).
		return (2*((s+1)*ClusterSlotCount-n) + n) / (2 * n)
	}
	if s > 0 {
		first = end(s-1) + 1
	}
	return first, end(s)
}

// SlotShard is the shard of n that serves slot.
func SlotShard(slot, n int) int {
	for s := 0; s < n; s++ {
		if _, last := ShardSlots(s, n); slot <= last {
			return s
		}
	}
	return n - 1
}

// checkShards validates Topology.Shards against the nodes.
func (c Config) checkShards() error {
	s := c.Topology.Shards
	switch {
	case s == 0 && c.Topology.ClusterFailover:
		return fmt.Errorf("topology: the cluster's own failover needs a cluster (shards)")
	case s == 0:
		return nil
	case s < 0 || s > len(c.Nodes):
		return fmt.Errorf("topology.shards: %d out of range 1..%d (the number of nodes)", s, len(c.Nodes))
	case c.Topology.Replicated && c.Topology.Groups != 0 && c.Topology.Groups != s*c.clusterCount():
		return fmt.Errorf("topology.groups: %d, and a cluster world's groups are its shards: %d (%d a cluster × %d clusters)", c.Topology.Groups, s*c.clusterCount(), s, c.clusterCount())
	}
	if err := c.checkClusters(); err != nil {
		return err
	}
	s *= c.clusterCount() // every cluster's shards
	switch {
	case c.Topology.Replicated && (len(c.Nodes)%s != 0 || len(c.Nodes)/s < 2):
		return fmt.Errorf("topology.shards: %d nodes do not split into %d shards of a primary and at least one replica each", len(c.Nodes), s)
	case c.Topology.ClusterFailover && c.clusterCount() > 1:
		return fmt.Errorf("topology: the cluster's own failover is modelled for one cluster, not %d", c.clusterCount())
	case c.Topology.ClusterFailover && (!c.Topology.Replicated || c.Topology.DownAfter <= 0):
		return fmt.Errorf("topology: the cluster's own failover needs replicas and a positive node timeout (down_after)")
	case !c.Topology.Replicated && len(c.Nodes) != s:
		return fmt.Errorf("topology.shards: %d shards without replicas need %d nodes, got %d (a replicated topology gives each shard replicas)", s, s, len(c.Nodes))
	}
	return nil
}

// shards is the number of shards (0: not a cluster).
func (w *World) shards() int { return w.cfg.Topology.Shards }

// shardOf is node id's shard.
func (w *World) shardOf(id int) int { return id / w.shardSize() }

// shardPrimary is the node the cluster names as shard s's primary: its
// first node, or in a replicated cluster whoever was promoted since.
func (w *World) shardPrimary(s int) *Node {
	if w.sentinel != nil {
		return w.nodes[w.sentinel.groups[s].primary]
	}
	return w.nodes[s*w.shardSize()]
}

// shardReplicas are the nodes of shard s that replicate from its primary,
// in node order.
func (w *World) shardReplicas(s int) []*Node {
	p := w.shardPrimary(s)
	var out []*Node
	size := w.shardSize()
	for _, n := range w.nodes[s*size : (s+1)*size] {
		if n != p && n.replicaOf == p.id {
			out = append(out, n)
		}
	}
	return out
}

// shardNote names shard s and its slots for a failover's detail in a
// cluster world (" (cluster shard 2, slots 10923-16383)"); "" otherwise.
// In a replicated cluster the world's failover agent (sentinel.go) stands
// in for the cluster's own election: it promotes the shard's replica with
// the most replicated data once the primary has been unreachable for
// Topology.DownAfter (the cluster's node timeout), and the cluster's slot
// map names the promoted node from then on.
func (w *World) shardNote(s int) string {
	if w.shards() == 0 {
		return ""
	}
	first, last := ShardSlots(s%w.shards(), w.shards())
	return fmt.Sprintf(" (%sshard %d, slots %d-%d)", w.clusterName(s), s%w.shards(), first, last)
}

// clusterAddr is node n's address as the cluster announces it.
func clusterAddr(n *Node) string { return n.name + ":" + strconv.Itoa(ClusterPort) }

// clusterNodeID is node n's 40-hex-digit cluster node id (a digest of its
// name: the same in every run).
func clusterNodeID(n *Node) string {
	h := sha1.Sum([]byte("locksim cluster node " + n.name))
	return hex.EncodeToString(h[:])
}

// clusterNoKey are commands that name no key (beside nonData).
var clusterNoKey = map[string]bool{
	"CLUSTER": true, "ASKING": true, "READWRITE": true, "FLUSHALL": true, "FLUSHDB": true, "KEYS": true,
	"SCAN": true, "RANDOMKEY": true, "EXEC": true, "CONFIG": true, "DEBUG": true, "SWAPDB": true,
	"LASTSAVE": true, "SAVE": true, "BGSAVE": true, "FUNCTION": true, "OBJECT": true, "MEMORY": true,
}

// clusterKeys appends to buf the keys of a command a cluster routes by
// slot, as the Redis command table names them for the commands locks use:
// every argument of DEL, UNLINK, EXISTS, MGET and TOUCH, the keys of MSET,
// EVAL's and FCALL's declared keys, the first argument otherwise. A command
// that names no key gives none.
func clusterKeys(buf []string, cmd string, args []string) []string {
	if nonData[cmd] || clusterNoKey[cmd] || len(args) < 2 {
		return buf
	}
	switch cmd {
	case "DEL", "UNLINK", "EXISTS", "MGET", "TOUCH":
		return append(buf, args[1:]...)
	case "MSET", "MSETNX":
		for i := 1; i < len(args); i += 2 {
			buf = append(buf, args[i])
		}
		return buf
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
		if len(args) < 3 {
			return buf
		}
		nk, err := strconv.Atoi(args[2])
		if err != nil || nk < 0 || 3+nk > len(args) {
			return buf // the node's own error says what is wrong
		}
		return append(buf, args[3:3+nk]...)
	}
	return append(buf, args[1])
}

// clusterExec answers what the cluster layer answers for node n: the
// CLUSTER commands, ASKING, READWRITE and MIGRATE, -CLUSTERDOWN while n
// sees the cluster down (cluster_failover.go), and -MOVED, -ASK,
// -TRYAGAIN or -CROSSSLOT for a keyed command n must not serve
// (slotRoute). It reports whether it answered (false: the node runs the
// command).
func (n *Node) clusterExec(c *conn, cmd string, args []string) bool {
	// ASKING lasts one command.
	asking := c.asking
	c.asking = false
	switch cmd {
	case "CLUSTER":
		n.clusterCommand(c, args)
		return true
	case "ASKING":
		c.asking = true
		c.peer.WriteOK()
		return true
	case "READWRITE":
		c.peer.WriteOK()
		return true
	case "MIGRATE":
		n.migrateCmd(c, args)
		return true
	}
	if !n.srv.IsRegisteredCommand(cmd) {
		return false
	}
	keys := clusterKeys(n.keys[:0], cmd, args)
	n.keys = keys
	if len(keys) == 0 {
		return false
	}
	slot := KeySlot(keys[0])
	for _, k := range keys[1:] {
		if KeySlot(k) != slot {
			c.peer.WriteError("CROSSSLOT Keys in request don't hash to the same slot")
			return true
		}
	}
	if msg := n.clusterDown(); msg != "" {
		c.peer.WriteError(msg)
		return true
	}
	if msg := n.slotRoute(slot, keys, asking); msg != "" {
		c.peer.WriteError(msg)
		return true
	}
	return false
}

// clusterCommand answers CLUSTER subcommands.
func (n *Node) clusterCommand(c *conn, args []string) {
	w := n.w
	base := w.clusterBase(n.id) // n's cluster's first shard
	sub := ""
	if len(args) > 1 {
		sub = strings.ToUpper(args[1])
	}
	switch {
	case sub == "SLOTS" && len(args) == 2:
		var entries int
		for s := 0; s < w.shards(); s++ {
			entries += len(w.shardRanges(s))
		}
		c.peer.WriteLen(entries)
		for s := 0; s < w.shards(); s++ {
			nodes := append([]*Node{w.shardPrimary(base + s)}, w.shardReplicas(base+s)...)
			for _, r := range w.shardRanges(s) {
				c.peer.WriteLen(2 + len(nodes))
				c.peer.WriteInt(r[0])
				c.peer.WriteInt(r[1])
				for _, m := range nodes {
					c.peer.WriteLen(3)
					c.peer.WriteBulk(m.name)
					c.peer.WriteInt(ClusterPort)
					c.peer.WriteBulk(clusterNodeID(m))
				}
			}
		}
	case sub == "SHARDS" && len(args) == 2:
		c.peer.WriteLen(w.shards())
		for s := 0; s < w.shards(); s++ {
			p := w.shardPrimary(base + s)
			nodes := append([]*Node{p}, w.shardReplicas(base+s)...)
			ranges := w.shardRanges(s)
			c.peer.WriteMapLen(2)
			c.peer.WriteBulk("slots")
			c.peer.WriteLen(2 * len(ranges))
			for _, r := range ranges {
				c.peer.WriteInt(r[0])
				c.peer.WriteInt(r[1])
			}
			c.peer.WriteBulk("nodes")
			c.peer.WriteLen(len(nodes))
			for _, m := range nodes {
				role, off := "master", m.offset
				if m != p {
					role, off = "replica", m.applied
				}
				health := "online"
				if !m.up {
					health = "fail"
				}
				c.peer.WriteMapLen(7)
				c.peer.WriteBulk("id")
				c.peer.WriteBulk(clusterNodeID(m))
				c.peer.WriteBulk("port")
				c.peer.WriteInt(ClusterPort)
				c.peer.WriteBulk("ip")
				c.peer.WriteBulk(m.name)
				c.peer.WriteBulk("endpoint")
				c.peer.WriteBulk(m.name)
				c.peer.WriteBulk("role")
				c.peer.WriteBulk(role)
				c.peer.WriteBulk("replication-offset")
				c.peer.WriteInt(int(off))
				c.peer.WriteBulk("health")
				c.peer.WriteBulk(health)
			}
		}
	case sub == "NODES" && len(args) == 2:
		var b strings.Builder
		for s := 0; s < w.shards(); s++ {
			p := w.shardPrimary(base + s)
			var slots string
			for _, r := range w.shardRanges(s) {
				slots += fmt.Sprintf(" %d-%d", r[0], r[1])
			}
			for _, m := range append([]*Node{p}, w.shardReplicas(base+s)...) {
				flags, master, slots := "master", "-", slots
				if m != p {
					flags, master, slots = "slave", clusterNodeID(p), ""
				}
				if m == n {
					flags = "myself," + flags
				}
				if !m.up {
					flags += ",fail"
				}
				fmt.Fprintf(&b, "%s %s@%d %s %s 0 0 %d connected%s\n", clusterNodeID(m), clusterAddr(m), ClusterPort+10000, flags, master, s+1, slots)
			}
		}
		c.peer.WriteBulk(b.String())
	case sub == "INFO" && len(args) == 2:
		state := "ok"
		if n.clusterDown() != "" {
			state = "fail"
		}
		c.peer.WriteBulk(fmt.Sprintf("cluster_enabled:1\r\ncluster_state:%s\r\ncluster_slots_assigned:%d\r\ncluster_slots_ok:%d\r\ncluster_known_nodes:%d\r\ncluster_size:%d\r\n",
			state, ClusterSlotCount, ClusterSlotCount, len(w.nodes)/w.clusterCount(), w.shards()))
	case sub == "MYID" && len(args) == 2:
		c.peer.WriteBulk(clusterNodeID(n))
	case sub == "KEYSLOT" && len(args) == 3:
		c.peer.WriteInt(KeySlot(args[2]))
	case sub == "SETSLOT":
		if msg := n.clusterSetSlot(args); msg != "" {
			c.peer.WriteError(msg)
			return
		}
		c.peer.WriteOK()
	case (sub == "GETKEYSINSLOT" && len(args) == 4) || (sub == "COUNTKEYSINSLOT" && len(args) == 3):
		slot, err := strconv.Atoi(args[2])
		if err != nil || slot < 0 || slot >= ClusterSlotCount {
			c.peer.WriteError("ERR Invalid slot")
			return
		}
		keys := n.keysInSlot(slot)
		if sub == "COUNTKEYSINSLOT" {
			c.peer.WriteInt(len(keys))
			return
		}
		count, err := strconv.Atoi(args[3])
		if err != nil || count < 0 {
			c.peer.WriteError("ERR Invalid number of keys")
			return
		}
		c.peer.WriteStrings(keys[:min(count, len(keys))])
	default:
		c.peer.WriteError(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for 'CLUSTER %s' (the simulated cluster answers SLOTS, SHARDS, NODES, INFO, MYID, KEYSLOT, SETSLOT, GETKEYSINSLOT, COUNTKEYSINSLOT)", strings.Join(args[1:], " ")))
	}
}

// clusterNodeByAddr resolves an announced address ("n1:6379") to a node.
func (w *World) clusterNodeByAddr(addr string) (*Node, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != strconv.Itoa(ClusterPort) {
		return nil, fmt.Errorf("sim: cluster address %q is not a node's (name:%d)", addr, ClusterPort)
	}
	for _, n := range w.nodes {
		if n.name == host {
			return n, nil
		}
	}
	return nil, fmt.Errorf("sim: cluster address %q names no node", addr)
}

// clusterOptionsOf are the options of cluster cl's ClusterClient (every
// simulated ClusterClient has them): those
// of newRedisClient (RESP2, no CLIENT SETINFO, no maintenance
// notifications, fixed retry backoff, no idle reaping) and two that keep
// it deterministic. go-redis loads the slot map from a node it picks with
// the global random source (loadState's rand.Perm), and with routing
// policies on asks COMMAND of nodes picked the same way: ClusterSlots
// loads it instead with CLUSTER SLOTS from the shards' first nodes in
// order (the first that answers), and routing policies are off (every
// keyed command goes to its slot's primary, as without them).
func (p *Proc) clusterOptionsOf(cl int) *redis.ClusterOptions {
	rc := p.w.cfg.Redis
	var seeds []string
	size := p.w.shardSize()
	for s := 0; s < p.w.shards(); s++ {
		seeds = append(seeds, clusterAddr(p.w.nodes[(cl*p.w.shards()+s)*size]))
	}
	return &redis.ClusterOptions{
		Addrs: seeds,
		Dialer: func(_ context.Context, _, addr string) (net.Conn, error) {
			n, err := p.w.clusterNodeByAddr(addr)
			if err != nil {
				return nil, err
			}
			p.w.mu.Lock()
			defer p.w.mu.Unlock()
			return p.connectLocked(n, clusterKeyBase+n.id, "cluster/"), nil
		},
		ClusterSlots:             func(ctx context.Context) ([]redis.ClusterSlot, error) { return p.loadSlots(ctx, cl) },
		DisableRoutingPolicies:   true,
		Protocol:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PoolSize:                 8,
		ReadBufferSize:           4 << 10,
		WriteBufferSize:          4 << 10,
		ConnMaxIdleTime:          -1,
		DialTimeout:              rc.DialTimeout,
		ReadTimeout:              rc.ReadTimeout,
		WriteTimeout:             rc.WriteTimeout,
		MaxRetries:               rc.MaxRetries,
		MinRetryBackoff:          rc.RetryBackoff,
		MaxRetryBackoff:          rc.RetryBackoff,
		PoolTimeout:              rc.ReadTimeout + rc.DialTimeout,
	}
}

// loadSlots is the ClusterClient's ClusterSlots: CLUSTER SLOTS, parsed by
// go-redis, from each shard's first node in order until one answers. One
// load at a time (the slots channel): go-redis reloads on a goroutine of
// its own, and two loads must not share a connection pool.
func (p *Proc) loadSlots(ctx context.Context, cl int) ([]redis.ClusterSlot, error) {
	sem := p.slotsSems[cl]
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-sem }()
	var firstErr error
	size := p.w.shardSize()
	for s := 0; s < p.w.shards(); s++ {
		slots, err := p.slotsClient((cl*p.w.shards() + s) * size).ClusterSlots(ctx).Result()
		if err == nil {
			return slots, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// slotsClient is p's client for loading the slot map from node i (made on
// first use; only loadSlots uses it, one load at a time).
func (p *Proc) slotsClient(i int) *redis.Client {
	if c := p.slotsClients[i]; c != nil {
		return c
	}
	rc := p.w.cfg.Redis
	n := p.w.nodes[i]
	c := redis.NewClient(&redis.Options{
		Addr: clusterAddr(n),
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			p.w.mu.Lock()
			defer p.w.mu.Unlock()
			return p.connectLocked(n, slotsKeyBase+i, "slots/"), nil
		},
		Protocol:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PoolSize:                 2,
		ReadBufferSize:           4 << 10,
		WriteBufferSize:          4 << 10,
		ConnMaxIdleTime:          -1,
		DialTimeout:              rc.DialTimeout,
		ReadTimeout:              rc.ReadTimeout,
		WriteTimeout:             rc.WriteTimeout,
		MaxRetries:               -1,
		PoolTimeout:              rc.ReadTimeout + rc.DialTimeout,
	})
	p.slotsClients[i] = c
	return c
}

// startCluster makes p's ClusterClient (a cluster world only).
func (p *Proc) startCluster() {
	if p.w.shards() == 0 {
		return
	}
	p.slotsClients = make([]*redis.Client, len(p.w.nodes))
	for cl := 0; cl < p.w.clusterCount(); cl++ {
		p.slotsSems = append(p.slotsSems, make(chan struct{}, 1))
		p.clusters = append(p.clusters, redis.NewClusterClient(p.clusterOptionsOf(cl)))
	}
	p.cluster = p.clusters[0]
}

// closeCluster closes p's cluster clients at shutdown.
func (p *Proc) closeCluster() {
	for _, c := range p.clusters {
		c.Close()
	}
	for _, c := range p.slotsClients {
		if c != nil {
			c.Close()
		}
	}
}

// Cluster returns p's go-redis ClusterClient for a cluster world
// (Topology.Shards), nil otherwise. It routes each command by its key's
// slot and follows MOVED (clusterOptions says how it is set up). In a
// world of several clusters it is the first cluster's (Clusters: each's).
func (p *Proc) Cluster() *redis.ClusterClient { return p.cluster }
