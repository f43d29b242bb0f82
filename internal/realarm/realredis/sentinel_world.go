package realredis

// The replicated world's Sentinel side (see sentinel.go): starting the
// nodes, gateways and Sentinels, following failovers, and the clients'
// failover client.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/sim"
)

// replication is a replicated world's real Sentinel side.
type replication struct {
	block     block
	gateways  []*gateway
	sentinels []*sentinelProc
	byAddr    map[string]int // announced address -> node index
	watch     *redis.PubSub
}

// setupReplicated starts a replicated world's nodes, gateways, link
// proxies and Sentinels (the clients' links are made by setup).
func (w *world) setupReplicated(dir string) error {
	cfg := w.cfg
	b, err := newBlock()
	if err != nil {
		return err
	}
	r := &replication{block: b, byAddr: map[string]int{}}
	w.repl = r
	w.links = newLinks()
	// Addresses first: every node's own address and port, its gateway.
	for i, n := range cfg.Nodes {
		ip := b.ip(nodeHost(i))
		port, err := freePortOn(ip)
		if err != nil {
			return err
		}
		g, err := w.addGatewayedServer(dir, n, ip, port)
		if err != nil {
			return err
		}
		r.gateways = append(r.gateways, g)
		r.byAddr[g.addr()] = i
	}
	for k := 0; k < nSentinels; k++ {
		ip := b.ip(sentinelHost(k))
		port, err := freePortOn(ip)
		if err != nil {
			return err
		}
		d := filepath.Join(dir, fmt.Sprintf("sentinel%d", k))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		r.sentinels = append(r.sentinels, &sentinelProc{name: fmt.Sprintf("sentinel%d", k), ip: ip, port: port, dir: d})
	}
	// The links into each node: from each Sentinel and from each other
	// node (a replica's replication connection, lagged downstream).
	for x, s := range w.servers {
		g := r.gateways[x]
		for k, sp := range r.sentinels {
			a, err := w.links.addNamed(fmt.Sprintf("%s->%s", sp.name, s.name), sim.SentinelName, s.name, s.addr())
			if err != nil {
				return err
			}
			g.routes[sp.ip] = a
			_ = k
		}
		for y, o := range w.servers {
			if y == x {
				continue
			}
			a, err := w.links.add(o.name, s.name, s.addr())
			if err != nil {
				return err
			}
			g.routes[o.ip] = a
			if cfg.Topology.ReplLag > 0 {
				if err := w.links.lag(o.name+"->"+s.name, cfg.Topology.ReplLag); err != nil {
					return err
				}
			}
		}
		g.serve(w.sawDial)
	}
	primary := r.gateways[0].addr()
	ph, pp, _ := net.SplitHostPort(primary)
	for i, s := range w.servers {
		gh, gp, _ := net.SplitHostPort(r.gateways[i].addr())
		s.conf = []string{
			"port " + strconv.Itoa(s.port),
			"bind " + s.ip,
			"bind-source-addr " + s.ip,
			"protected-mode no",
			"daemonize no",
			"dir " + s.dir,
			`save ""`,
			"logfile " + filepath.Join(s.dir, "redis.log"),
			"dbfilename dump.rdb",
			"replica-announce-ip " + gh,
			"replica-announce-port " + gp,
			// A full sync waits repl-diskless-sync-delay (5 s by default)
			// for more replicas: scaled with the world.
			"repl-diskless-sync-delay " + strconv.Itoa(int(5*w.job.Scale+0.5)),
		}
		switch s.persistence {
		case "always", "everysec", "no":
			s.conf = append(s.conf, "appendonly yes", "appendfsync "+s.persistence)
		default:
			s.conf = append(s.conf, "appendonly no")
		}
		if i > 0 {
			s.conf = append(s.conf, "replicaof "+ph+" "+pp)
		}
	}
	for _, s := range w.servers {
		if err := s.start(w.ctx); err != nil {
			return err
		}
	}
	for _, sp := range r.sentinels {
		if err := sp.start(w.ctx, primary, cfg.Topology.DownAfter, failoverTimeout(w.job.TTL)); err != nil {
			return err
		}
		if err := sp.scaleSentinel(w.ctx, w.job.Scale); err != nil {
			return fmt.Errorf("%s: SENTINEL DEBUG: %w", sp.name, err)
		}
	}
	if err := sentinelsReady(w.ctx, r.sentinels, len(w.servers)-1); err != nil {
		return err
	}
	if err := w.replicasInSync(); err != nil {
		return err
	}
	r.watch = r.sentinels[0].admin.PSubscribe(w.ctx, "*")
	if _, err := r.watch.Receive(w.ctx); err != nil {
		return fmt.Errorf("subscribing to %s: %w", r.sentinels[0].name, err)
	}
	return nil
}

// replicasInSync waits until every replica's link to the primary is up.
func (w *world) replicasInSync() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := w.servers[0].admin.Info(w.ctx, "replication").Result()
		if err == nil && strings.Contains(n, "connected_slaves:"+strconv.Itoa(len(w.servers)-1)) && !strings.Contains(n, "state=wait_bgsave") && !strings.Contains(n, "state=send_bulk") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replicas did not sync within 30 s: %v %q", err, n)
		}
		select {
		case <-w.ctx.Done():
			return w.ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// watchSentinel records what Sentinel does (the events the first
// Sentinel publishes), as the simulator's Sentinel events where there is
// one: a failover (+switch-master: "n0 -> n1"), a demotion of an old
// primary (+convert-to-slave: "demote"), a replica re-pointed
// (+slave-reconf-sent: "reconfigure"); every other event (+sdown, +odown,
// +try-failover, +elected-leader, +selected-slave, +promoted-slave,
// -failover-abort-*, ...) as a "sentinel" event with its own text, node
// addresses replaced by node names.
func (w *world) watchSentinel() {
	r := w.repl
	if r == nil || r.watch == nil {
		return
	}
	ch := r.watch.Channel()
	w.goroutines.Add(1)
	go func() {
		defer w.goroutines.Done()
		for {
			select {
			case <-w.stop:
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				f := strings.Fields(m.Payload)
				// A message of no event of its own is a sentinel event.
				ev := sim.Event{Kind: event.KindSentinel, Detail: m.Channel + " " + w.names(m.Payload)}
				switch m.Channel {
				case "+switch-master": // name oldip oldport newip newport
					if len(f) == 5 {
						ev = sim.Event{Kind: event.KindFailover, Detail: w.nodeName(f[1], f[2]) + " -> " + w.nodeName(f[3], f[4])}
					}
				case "+convert-to-slave", "+slave-reconf-sent": // slave ip:port ip port @ name ip port
					if len(f) >= 4 {
						kind := event.KindDemote
						if m.Channel == "+slave-reconf-sent" {
							kind = event.KindReconfigure
						}
						ev = sim.Event{Kind: kind, Detail: w.nodeName(f[2], f[3]) + " (" + m.Channel + ")"}
					}
				}
				if m.Channel == "+switch-master" {
					w.mu.Lock()
					w.stats.Failovers++
					w.mu.Unlock()
					if len(f) == 5 {
						if n, ok := w.repl.byAddr[net.JoinHostPort(f[3], f[4])]; ok {
							w.promoted(n) // effects.go: did it lack a key live on the crashed primary
						}
					}
				}
				{
					ev.Proc = sim.SentinelName
					w.record(ev)
				}
			}
		}
	}()
}

// names replaces "host port" and "host:port" of announced node
// addresses in Sentinel's event text with node names.
func (w *world) names(text string) string {
	for a, i := range w.repl.byAddr {
		h, p, _ := net.SplitHostPort(a)
		text = strings.ReplaceAll(text, h+" "+p, w.servers[i].name)
		text = strings.ReplaceAll(text, a, w.servers[i].name)
	}
	return text
}

// nodeName names the node announced at host:port.
func (w *world) nodeName(host, port string) string {
	if i, ok := w.repl.byAddr[net.JoinHostPort(host, port)]; ok {
		return w.servers[i].name
	}
	return net.JoinHostPort(host, port)
}

// currentPrimary is the node Sentinel names as the primary.
func (w *world) currentPrimary() (int, error) {
	var last error
	for _, sp := range w.repl.sentinels {
		ctx, cancel := context.WithTimeout(w.ctx, time.Second)
		a, err := sp.admin.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName).StringSlice()
		cancel()
		if err != nil || len(a) != 2 {
			last = fmt.Errorf("%s: %v %v", sp.name, a, err)
			continue
		}
		if i, ok := w.repl.byAddr[net.JoinHostPort(a[0], a[1])]; ok {
			return i, nil
		}
		last = fmt.Errorf("%s names %v, no node of the run", sp.name, a)
	}
	return 0, last
}

// sentinelAddrs are the Sentinels' own addresses (clients' seed list).
func (r *replication) sentinelAddrs() []string {
	var out []string
	for _, sp := range r.sentinels {
		out = append(out, sp.addr())
	}
	return out
}

// close ends the Sentinels and the gateways.
func (r *replication) close() {
	if r.watch != nil {
		_ = r.watch.Close()
	}
	for _, sp := range r.sentinels {
		sp.close()
	}
	for _, g := range r.gateways {
		g.close()
	}
}

var errNoRoute = errors.New("no link for this address")

// failoverClient is the client's go-redis failover client (what
// Primary returns in a replicated world): it asks the Sentinels for the
// primary and follows +switch-master. Its dialer maps a node's announced
// address, or a Sentinel's, to this client's proxy for it (routes).
func (p *proc) failoverClient(routes map[string]string) *redis.Client {
	rc := p.w.cfg.Redis
	dial := loopbackDialer(p.w.sawDial)
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: masterName, SentinelAddrs: p.w.repl.sentinelAddrs(),
		Protocol: 2, DisableIdentity: true, ClientName: p.name,
		PoolSize: 8, ConnMaxIdleTime: -1,
		DialTimeout: rc.DialTimeout, ReadTimeout: rc.ReadTimeout, WriteTimeout: rc.WriteTimeout,
		MaxRetries: rc.MaxRetries, PoolTimeout: rc.ReadTimeout + rc.DialTimeout, MinRetryBackoff: rc.RetryBackoff, MaxRetryBackoff: rc.RetryBackoff,
		Dialer: func(ctx context.Context, network, a string) (net.Conn, error) {
			to, ok := routes[a]
			if !ok {
				p.w.harnessError(fmt.Errorf("%s: the failover client dialled %s: %w", p.name, a, errNoRoute))
				return nil, fmt.Errorf("%s: %w", a, errNoRoute)
			}
			c, err := dial(ctx, network, to)
			if err != nil {
				return nil, err
			}
			return &gatedConn{Conn: c, p: p}, nil
		},
	})
}
