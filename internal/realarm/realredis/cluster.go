package realredis

// A Redis Cluster world (sim.Topology.Shards) on real redis-server
// processes in cluster mode, laid out as the simulator lays it out
// (sim/cluster.go): the nodes split in node order into shards, each
// shard's first node its primary and the rest its replicas, the slots
// split by sim.ShardSlots (redis-cli --cluster create's split).
//
// The cluster is made with CLUSTER MEET, ADDSLOTSRANGE and REPLICATE
// rather than redis-cli --cluster create: redis-cli picks which nodes
// are primaries and which replica follows which by its own anti-affinity
// rule (by host), so the layout would not be the simulator's node for
// node; the commands give exactly that layout, every run.
//
// Each node announces (cluster-announce-ip/port/bus-port) two gateways
// on 127.0.0.1 (sentinel.go's gateway): one for clients and replication,
// one for the cluster bus. A client's ClusterClient dials the announced
// addresses that CLUSTER SLOTS and MOVED name, mapped to that client's
// link proxy to the node (so partitions and delays act on it); a
// replica's replication connection comes from the replica's own address
// and is spliced into its (lagged) link; the bus goes straight through,
// or, in a world of the cluster's own failover, through a link per pair
// of nodes that partitions cut (cluster_own.go).
//
// A failover fault crashes each named shard's primary and, once it has
// been down for Topology.DownAfter (the cluster-node-timeout), the
// harness promotes the shard's replica with CLUSTER FAILOVER TAKEOVER
// (clusterPromote): the simulator's failover agent's rule, not the
// cluster's own election, which needs a majority of primaries to vote and
// cannot run when every shard's primary is down at once (failover-cluster
// crashes them all). cluster-replica-no-failover keeps the nodes' own
// election out of it, unless the world asks for the cluster's own
// failover (Topology.ClusterFailover: cluster_own.go), where the harness
// promotes nobody.

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

// clusterReady bounds how long the cluster may take to form.
const clusterReady = 30 * time.Second

// clusterSide is a cluster world's real side: one cluster, or several
// independent ones (clusters.go).
type clusterSide struct {
	shards, size int            // shards a cluster, nodes a shard
	clusters     int            // independent clusters (clusters.go)
	gateways     []*gateway     // each node's announced address
	buses        []*gateway     // each node's announced cluster bus
	byAddr       map[string]int // announced address -> node
	ids          []string       // each node's cluster node id

	mu        sync.Mutex
	primary   []int        // each shard's primary, as the harness last made or saw it
	owner     map[int]int  // slot -> shard, for slots migrated off their initial shard (cluster_migrate.go)
	migrating map[int]bool // slots whose migration is under way
}

// nodeTimeout is the cluster-node-timeout: the world's DownAfter (the
// simulator's stand-in for it), or 1 s in a world with no failover.
func (w *world) nodeTimeout() time.Duration {
	if d := w.cfg.Topology.DownAfter; d > 0 {
		return max(d, 20*time.Millisecond)
	}
	return time.Second
}

// setupCluster starts a cluster world's nodes and gateways and forms the
// cluster (the clients' links are made by setup).
func (w *world) setupCluster(dir string) error {
	cfg := w.cfg
	b, err := newBlock()
	if err != nil {
		return err
	}
	shards, clusters := cfg.Topology.Shards, max(1, cfg.Topology.Clusters)
	c := &clusterSide{shards: shards, clusters: clusters, size: len(cfg.Nodes) / (shards * clusters), byAddr: map[string]int{}}
	w.clus = c
	w.links = newLinks()
	buses := make([]string, len(cfg.Nodes))
	for i, n := range cfg.Nodes {
		ip := b.ip(nodeHost(i))
		port, err := freePortOn(ip)
		if err != nil {
			return err
		}
		bus, err := freePortOn(ip)
		if err != nil {
			return err
		}
		if bus == port {
			return fmt.Errorf("%s: no second free port on %s", n.Name, ip)
		}
		buses[i] = strconv.Itoa(bus)
		g, err := w.addGatewayedServer(dir, n, ip, port)
		if err != nil {
			return err
		}
		c.gateways = append(c.gateways, g)
		c.byAddr[g.addr()] = i
		bg, err := newGateway(net.JoinHostPort(ip, buses[i]))
		if err != nil {
			return err
		}
		c.buses = append(c.buses, bg)
	}
	for g := 0; g < c.allShards(); g++ {
		c.primary = append(c.primary, g*c.size)
	}
	if cfg.Topology.ClusterFailover {
		addrs := make([]string, len(w.servers))
		for i, s := range w.servers {
			addrs[i] = net.JoinHostPort(s.ip, buses[i])
		}
		if err := w.busLinks(addrs); err != nil { // cluster_own.go
			return err
		}
	}
	// A replica's replication connection, lagged downstream, as in a
	// Sentinel world (setupReplicated), once the cluster has formed: the
	// simulator's replicas start in sync, and a lag of a 30 s TTL's
	// (failover-one-cluster at --ttl 30s) held the first full sync past
	// clusterReady.
	var lagged []string
	for x, s := range w.servers {
		for y, o := range w.servers {
			if !cfg.Topology.Replicated || y == x || x/c.size != y/c.size {
				continue
			}
			a, err := w.links.add(o.name, s.name, s.addr())
			if err != nil {
				return err
			}
			c.gateways[x].routes[o.ip] = a
			lagged = append(lagged, o.name+"->"+s.name)
		}
		c.gateways[x].serve(w.sawDial)
		c.buses[x].serve(nil)
	}
	timeout := strconv.FormatInt(max(1, w.nodeTimeout().Milliseconds()), 10)
	noFailover := "yes" // only the harness promotes (clusterPromote)
	if cfg.Topology.ClusterFailover {
		noFailover = "no" // the cluster's own election (cluster_own.go)
	}
	for i, s := range w.servers {
		_, gp, _ := net.SplitHostPort(c.gateways[i].addr())
		_, bp, _ := net.SplitHostPort(c.buses[i].addr())
		s.conf = []string{
			"port " + strconv.Itoa(s.port), "bind " + s.ip, "bind-source-addr " + s.ip,
			"protected-mode no", "daemonize no", "dir " + s.dir, `save ""`,
			"logfile " + filepath.Join(s.dir, "redis.log"), "dbfilename dump.rdb",
			"cluster-enabled yes", "cluster-config-file nodes.conf",
			"cluster-node-timeout " + timeout, "cluster-port " + buses[i],
			"cluster-announce-ip " + Loopback, "cluster-announce-port " + gp, "cluster-announce-bus-port " + bp,
			// A shard down leaves the others serving, as in the simulator.
			"cluster-require-full-coverage no", "cluster-replica-no-failover " + noFailover, "cluster-allow-replica-migration no",
			"repl-diskless-sync-delay " + strconv.Itoa(int(5*w.job.Scale+0.5)),
		}
		switch s.persistence {
		case "always", "everysec", "no":
			s.conf = append(s.conf, "appendonly yes", "appendfsync "+s.persistence)
		default:
			s.conf = append(s.conf, "appendonly no")
		}
	}
	for _, s := range w.servers {
		if err := s.start(w.ctx); err != nil {
			return err
		}
	}
	if err := w.formCluster(); err != nil {
		return err
	}
	for _, l := range lagged {
		if cfg.Topology.ReplLag > 0 {
			if err := w.links.lag(l, cfg.Topology.ReplLag); err != nil {
				return err
			}
		}
	}
	return nil
}

// formCluster joins each cluster's nodes (only its own), assigns each
// shard's slots to its first node and makes the rest its replicas, then
// waits until every node says cluster_state:ok, names its cluster's
// layout in CLUSTER SLOTS, and every replica's link to its primary is up.
func (w *world) formCluster() error {
	c := w.clus
	ctx, cancel := context.WithTimeout(w.ctx, clusterReady)
	defer cancel()
	for _, s := range w.servers {
		id, err := s.admin.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER MYID: %w", s.name, err)
		}
		c.ids = append(c.ids, id)
	}
	for i := range w.servers {
		f := c.firstNode(c.clusterOf(i))
		if i == f {
			continue
		}
		h, gp, _ := net.SplitHostPort(c.gateways[i].addr())
		_, bp, _ := net.SplitHostPort(c.buses[i].addr())
		if err := w.servers[f].admin.Do(ctx, "CLUSTER", "MEET", h, gp, bp).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER MEET %s: %w", w.servers[f].name, w.servers[i].name, err)
		}
	}
	for g := 0; g < c.allShards(); g++ {
		first, last := sim.ShardSlots(g%c.shards, c.shards)
		if err := w.servers[g*c.size].admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE %d %d: %w", w.servers[g*c.size].name, first, last, err)
		}
	}
	// A replica can follow a primary once it knows it (MEET's gossip).
	for i, s := range w.servers {
		if i%c.size == 0 {
			continue
		}
		p := i - i%c.size
		err := poll(ctx, "joining "+s.name+" to "+w.servers[p].name, func() (bool, error) {
			err := s.admin.Do(ctx, "CLUSTER", "REPLICATE", c.ids[p]).Err()
			return err == nil, err
		})
		if err != nil {
			return err
		}
	}
	for i, s := range w.servers {
		err := poll(ctx, s.name+" seeing the cluster formed", func() (bool, error) {
			info, err := s.admin.Do(ctx, "CLUSTER", "INFO").Text()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false, fmt.Errorf("CLUSTER INFO: %v %q", err, firstLine(info))
			}
			if err := c.checkSlots(ctx, s.admin, c.clusterOf(i)); err != nil {
				return false, err
			}
			if i%c.size == 0 {
				return true, nil
			}
			repl, err := s.admin.Info(ctx, "replication").Result()
			if err != nil || !strings.Contains(repl, "master_link_status:up") {
				return false, fmt.Errorf("replication not up: %v", err)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSlots reports whether admin's node's CLUSTER SLOTS names the
// layout the harness holds for cluster cl: each shard's slots, its
// primary first, its replicas after.
func (c *clusterSide) checkSlots(ctx context.Context, admin *redis.Client, cl int) error {
	slots, err := admin.ClusterSlots(ctx).Result()
	if err != nil {
		return fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	if len(slots) != c.shards {
		return fmt.Errorf("CLUSTER SLOTS: %d ranges, want %d", len(slots), c.shards)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sl := range slots {
		s := sim.SlotShard(int(sl.Start), c.shards)
		first, last := sim.ShardSlots(s, c.shards)
		if int(sl.Start) != first || int(sl.End) != last || len(sl.Nodes) != c.size {
			return fmt.Errorf("CLUSTER SLOTS: %d-%d with %d nodes, want %d-%d with %d", sl.Start, sl.End, len(sl.Nodes), first, last, c.size)
		}
		if n, ok := c.byAddr[sl.Nodes[0].Addr]; !ok || n != c.primary[cl*c.shards+s] {
			return fmt.Errorf("CLUSTER SLOTS: shard %d's primary is %s, want node %d", s, sl.Nodes[0].Addr, c.primary[cl*c.shards+s])
		}
	}
	return nil
}

// poll calls try every 20 ms until it reports done or ctx ends (an error
// naming what and ctx's bound, with try's last error).
func poll(ctx context.Context, what string, try func() (bool, error)) error {
	var last error
	bound := "its deadline"
	if d, ok := ctx.Deadline(); ok {
		bound = time.Until(d).Round(time.Millisecond).String()
	}
	for {
		done, err := try()
		if done {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not done within %s: %v", what, bound, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// close ends the gateways.
func (c *clusterSide) close() {
	for _, g := range append(c.gateways, c.buses...) {
		g.close()
	}
}

// listeners are the gateways' addresses.
func (c *clusterSide) listeners() []string {
	var out []string
	for _, g := range append(c.gateways, c.buses...) {
		out = append(out, g.addr())
	}
	return out
}

// shardNote names world-wide shard g, its cluster in a world of several,
// and its slots, as the simulator's failover event does
// (sim.World.shardNote): " (cluster shard 2, slots 10923-16383)",
// " (cluster 1 shard 0, slots 0-5460)".
func (c *clusterSide) shardNote(g int) string {
	first, last := sim.ShardSlots(g%c.shards, c.shards)
	name := "cluster "
	if c.clusters > 1 {
		name += strconv.Itoa(g/c.shards) + " "
	}
	return fmt.Sprintf(" (%sshard %d, slots %d-%d)", name, g%c.shards, first, last)
}

// failoverShards are the world-wide shards a failover names (g0, g1,
// ..., cluster 0's first; none: every shard of every cluster).
func (c *clusterSide) failoverShards(targets []string) []int {
	var out []int
	for s := 0; s < c.allShards(); s++ {
		if len(targets) == 0 {
			out = append(out, s)
			continue
		}
		for _, t := range targets {
			if t == "g"+strconv.Itoa(s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// clusterFailover carries out failover fault i in a cluster world: each
// named shard's primary crashes, and its replica is promoted after the
// node timeout (clusterPromote). It returns what the fault's end does.
func (w *world) clusterFailover(i int, f faults.Fault) func() {
	c := w.clus
	var crashed []int
	for _, s := range c.failoverShards(f.Targets) {
		c.mu.Lock()
		n := c.primary[s]
		c.mu.Unlock()
		if w.servers[n].isDown() {
			continue // still down from an earlier crash
		}
		want := w.liveKeys(n)
		w.noteNodeFault(i, f, []int{n})
		w.crashAs(n, "failover")
		crashed = append(crashed, n)
		if w.cfg.Topology.ClusterFailover {
			continue // the cluster elects a replica itself (cluster_own.go)
		}
		s := s
		time.AfterFunc(w.cfg.Topology.DownAfter, func() { w.clusterPromote(i, s, n, want) })
	}
	return func() {
		// The shards' primaries restart together, as the simulator's do
		// (one after another, each would wait for the last's start-up).
		var wg sync.WaitGroup
		for _, n := range crashed {
			wg.Add(1)
			go func() { defer wg.Done(); w.crashEnded(n) }()
		}
		wg.Wait()
	}
}

// clusterPromote promotes shard s's replica with the most replicated data
// with CLUSTER FAILOVER TAKEOVER while its primary old is down, and
// records it as the simulator's agent does: a failover event naming the
// shard and its slots, and whether the promoted node lacked a key live on
// old (want). With no replica to promote yet (one restarted from an
// earlier crash not following yet) it tries again every 10 ms, as the
// simulator's agent does every tick, until old is back or the run stops.
func (w *world) clusterPromote(i, s, old int, want map[string]string) {
	c := w.clus
	best := -1
	for {
		if w.stopping() || !w.servers[old].isDown() {
			return
		}
		if best = w.bestReplica(s, old); best >= 0 {
			break
		}
		select {
		case <-w.stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	lacking := w.lacks(best, want)
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Second)
	defer cancel()
	admin := w.servers[best].admin
	if err := admin.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		if w.ctx.Err() == nil && !w.stopping() { // not the teardown closing it
			w.harnessError(fmt.Errorf("fault %d: CLUSTER FAILOVER TAKEOVER on %s: %w", i+1, w.servers[best].name, err))
		}
		return
	}
	err := poll(ctx, w.servers[best].name+" taking over", func() (bool, error) {
		info, err := admin.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:master"), err
	})
	if err != nil {
		if w.ctx.Err() == nil {
			w.harnessError(fmt.Errorf("fault %d: %w", i+1, err))
		}
		return
	}
	c.mu.Lock()
	c.primary[s] = best
	c.mu.Unlock()
	w.notePromoted(i, w.servers[best].name, len(want) > 0, lacking)
	w.record(sim.Event{Proc: sim.SentinelName, Kind: event.KindFailover,
		Detail: w.servers[old].name + " -> " + w.servers[best].name + c.shardNote(s) + " by CLUSTER FAILOVER TAKEOVER"})
}

// bestReplica is shard s's running replica (other than old) with the
// highest replication offset, or -1.
func (w *world) bestReplica(s, old int) int {
	c := w.clus
	best, bestOff := -1, int64(-1)
	for n := s * c.size; n < (s+1)*c.size; n++ {
		if n == old || w.servers[n].isDown() {
			continue
		}
		ctx, cancel := context.WithTimeout(w.ctx, liveTimeout)
		info, err := w.servers[n].admin.Info(ctx, "replication").Result()
		cancel()
		off, ok := infoField(info, "slave_repl_offset")
		if err != nil || !strings.Contains(info, "role:slave") || !ok {
			continue
		}
		if off > bestOff {
			best, bestOff = n, off
		}
	}
	return best
}

// infoField reads an integer field of an INFO reply.
func infoField(info, name string) (int64, bool) {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// clusterClient is the client's go-redis ClusterClient for cluster cl
// (what Cluster and Clusters return), set up as the simulator's
// (sim.Proc.clusterOptionsOf): it loads the slot map with CLUSTER SLOTS
// from each of cl's shards' first node in order, without routing
// policies. Its dialer maps a node's announced address to this client's
// link to it (routes).
func (p *proc) clusterClient(routes map[string]string, cl int) *redis.ClusterClient {
	rc, c := p.w.cfg.Redis, p.w.clus
	dial := loopbackDialer(p.w.sawDial)
	dialer := func(ctx context.Context, network, a string) (net.Conn, error) {
		to, ok := routes[a]
		if !ok {
			p.w.harnessError(fmt.Errorf("%s: the cluster client dialled %s: %w", p.name, a, errNoRoute))
			return nil, fmt.Errorf("%s: %w", a, errNoRoute)
		}
		conn, err := dial(ctx, network, to)
		if err != nil {
			return nil, err
		}
		return &gatedConn{Conn: conn, p: p}, nil
	}
	var seeds []string
	for s := 0; s < c.shards; s++ {
		seeds = append(seeds, c.gateways[(cl*c.shards+s)*c.size].addr())
	}
	sem := make(chan struct{}, 1)
	var loaders []*redis.Client
	for _, a := range seeds {
		loaders = append(loaders, redis.NewClient(&redis.Options{
			Addr: a, Dialer: dialer, Protocol: 2, DisableIdentity: true,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
			PoolSize:                 2, ConnMaxIdleTime: -1, MaxRetries: -1,
			DialTimeout: rc.DialTimeout, ReadTimeout: rc.ReadTimeout, WriteTimeout: rc.WriteTimeout,
			PoolTimeout: rc.ReadTimeout + rc.DialTimeout,
		}))
	}
	p.slotsClients = append(p.slotsClients, loaders...)
	load := func(ctx context.Context) ([]redis.ClusterSlot, error) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-sem }()
		var firstErr error
		for _, sc := range loaders {
			slots, err := sc.ClusterSlots(ctx).Result()
			if err == nil {
				return slots, nil
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		return nil, firstErr
	}
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: seeds, Dialer: dialer, ClusterSlots: load, DisableRoutingPolicies: true,
		Protocol: 2, DisableIdentity: true, ClientName: p.name,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PoolSize:                 8, ConnMaxIdleTime: -1,
		DialTimeout: rc.DialTimeout, ReadTimeout: rc.ReadTimeout, WriteTimeout: rc.WriteTimeout,
		MaxRetries: rc.MaxRetries, PoolTimeout: rc.ReadTimeout + rc.DialTimeout,
		MinRetryBackoff: rc.RetryBackoff, MaxRetryBackoff: rc.RetryBackoff,
	})
}

// Cluster returns the client's ClusterClient in a cluster world, nil
// otherwise (scenarios.RunClient hands it to a cluster lock as
// locks.Env.Cluster).
func (p *proc) Cluster() *redis.ClusterClient { return p.cluster }
