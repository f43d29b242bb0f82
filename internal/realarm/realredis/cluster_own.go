package realredis

// The cluster's own failover on a real cluster (Topology.ClusterFailover,
// scenario topology.failover: cluster), as the simulator models it
// (sim/cluster_failover.go): redis-server's own failure detection and
// replica election, with cluster-node-timeout the world's DownAfter and
// cluster-replica-no-failover no; the harness promotes nobody.
//
// Real Redis detects a failure over the cluster bus, so in such a world
// the bus runs through link proxies too: each node's bus gateway maps
// every other node's source address to a proxy of its own
// ("bus:a->b"), whose ends are the two nodes, so a partition that
// separates two nodes cuts their bus both ways (a cut holds the bus's
// pings until the heal, as it holds any link's data). The harness watches
// each node's ROLE and records a replica turned primary as the
// simulator's promotion (a failover event naming the shard and its
// slots), and an old primary turned replica as a demotion.

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/sim"
)

// clusterProc is the process name of the cluster's own events, as the
// simulator's (sim/cluster_failover.go).
const clusterProc = "cluster"

// busLinks routes every node's bus through a link proxy per ordered pair
// of nodes (busAddrs: each node's own bus address).
func (w *world) busLinks(busAddrs []string) error {
	c := w.clus
	for x, s := range w.servers {
		for y, o := range w.servers {
			if y == x {
				continue
			}
			a, err := w.links.addNamed("bus:"+o.name+"->"+s.name, o.name, s.name, busAddrs[x])
			if err != nil {
				return err
			}
			c.buses[x].routes[o.ip] = a
		}
	}
	return nil
}

// rolePoll is how often watchClusterRoles reads every node's ROLE.
const rolePoll = 20 * time.Millisecond

// watchClusterRoles records the cluster's own promotions and demotions
// (ROLE of every running node, every rolePoll) until the run stops.
func (w *world) watchClusterRoles() {
	c := w.clus
	if c == nil || !w.cfg.Topology.ClusterFailover {
		return
	}
	w.goroutines.Add(1)
	go func() {
		defer w.goroutines.Done()
		master := make([]bool, len(w.servers))
		for n := range master {
			master[n] = n%c.size == 0
		}
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(rolePoll):
			}
			for n, s := range w.servers {
				if s.isDown() {
					continue
				}
				ctx, cancel := context.WithTimeout(w.ctx, liveTimeout)
				role, err := s.admin.Do(ctx, "ROLE").Slice()
				cancel()
				if err != nil || len(role) == 0 {
					continue
				}
				is := role[0] == "master"
				if is == master[n] {
					continue
				}
				master[n] = is
				w.roleChanged(n, is, role)
			}
		}
	}()
}

// roleChanged records node n's new role: a promotion (the shard's primary
// is n now) or a demotion (n follows the primary ROLE names).
func (w *world) roleChanged(n int, isMaster bool, role []any) {
	c := w.clus
	s := n / c.size
	if isMaster {
		c.mu.Lock()
		old := c.primary[s]
		c.primary[s] = n
		c.mu.Unlock()
		if old == n {
			return
		}
		w.mu.Lock()
		w.stats.Failovers++
		w.mu.Unlock()
		w.creditPromotion(old, n) // cluster_own_effects.go
		w.record(sim.Event{Proc: clusterProc, Kind: event.KindFailover,
			Detail: w.servers[old].name + " -> " + w.servers[n].name + c.shardNote(s) + " by the cluster's own election"})
		return
	}
	to := "?"
	if len(role) > 2 {
		host, _ := role[1].(string)
		port := fmt.Sprint(role[2])
		if i, ok := c.byAddr[net.JoinHostPort(host, port)]; ok {
			to = w.servers[i].name
		}
	}
	w.record(sim.Event{Proc: clusterProc, Kind: event.KindDemote, Detail: w.servers[n].name + " -> replica of " + to + c.shardNote(s)})
}
