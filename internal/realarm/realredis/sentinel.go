package realredis

import (
	"context"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/internal/reap"
	"github.com/locksim/locksim/sim"
)

// A replicated world (topology replicated: a primary, its replicas and
// Sentinel) runs real redis-server replicas (replicaof) and three real
// redis-sentinel processes (quorum 2). The scenario's network between
// them is made real this way:
//
//   - every redis-server and redis-sentinel has its own loopback address
//     (127.a.b.x, a block drawn per run) and makes its outgoing
//     connections from it (bind-source-addr);
//   - every node announces a gateway (replica-announce-ip/port), a
//     listener on 127.0.0.1 that Sentinel (which probes the addresses the
//     nodes announce and re-points replicas to them) and replicas connect
//     to; the gateway tells the source by its address and splices the
//     connection into the toxiproxy proxy of that source→node link:
//     "sentinel"→nX (one per Sentinel process) or nY→nX (a replica's
//     replication connection), so partitions cut exactly the links the
//     scenario names;
//   - replication lag is a permanent latency toxic on the downstream of
//     every nY→nX link (the replication stream flows from the primary to
//     the replica that connected to it); Sentinel's own probes never take
//     it;
//   - clients follow the primary with go-redis's failover client, whose
//     dialer maps a node's announced address, or a Sentinel's, to this
//     client's proxy for that node or that Sentinel (cX→nY, cX→sentinel).
//
// Sentinel's timing is its own: down-after is the scenario's (scaled);
// its internal periods (SENTINEL DEBUG: ping, info, ask, publish, the
// election timeout, ...) are scaled with the world; what is fixed in its
// code is not (its timer runs 10-19 times a second, and during a failover
// it polls a replica's role once a second): a real failover takes
// down-after plus about 0.3 to 1.3 s of real time whatever the scale (see
// docs/PARITY.md).

// masterName is the name the Sentinels monitor the primary under.
const masterName = "locksim"

// quorum is the Sentinels' quorum (of three).
const quorum = 2

// nSentinels is how many redis-sentinel processes a replicated world runs.
const nSentinels = 3

// block is a run's loopback block: the first three octets of 127.a.b.x.
type block string

// newBlock draws a block for a run and checks that an address in it can
// be bound (Linux routes all of 127.0.0.0/8 to lo).
func newBlock() (block, error) {
	var last error
	for try := 0; try < 8; try++ {
		b := block(fmt.Sprintf("127.%d.%d.", 100+mathrand.IntN(100), 1+mathrand.IntN(250)))
		l, err := net.Listen("tcp", net.JoinHostPort(b.ip(10), "0"))
		if err != nil {
			last = err
			continue
		}
		l.Close()
		return b, nil
	}
	return "", fmt.Errorf("a replicated world needs addresses of 127.0.0.0/8 other than 127.0.0.1 (Linux routes the block to lo): %w", last)
}

func (b block) ip(host int) string { return string(b) + strconv.Itoa(host) }

// node and Sentinel host numbers in the block.
func nodeHost(i int) int     { return 10 + i }
func sentinelHost(k int) int { return 50 + k }

// sentinelProc is one redis-sentinel process.
type sentinelProc struct {
	name string
	ip   string
	port int
	dir  string

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	admin *redis.Client
}

func (s *sentinelProc) addr() string { return net.JoinHostPort(s.ip, strconv.Itoa(s.port)) }

// start writes the Sentinel's config file, runs it and waits for PING.
func (s *sentinelProc) start(ctx context.Context, monitor string, downAfter, failoverTimeout time.Duration) error {
	host, port, _ := net.SplitHostPort(monitor)
	conf := []string{
		"port " + strconv.Itoa(s.port),
		"bind " + s.ip,
		"bind-source-addr " + s.ip,
		"protected-mode no",
		"daemonize no",
		"dir " + s.dir,
		"logfile " + filepath.Join(s.dir, "sentinel.log"),
		"sentinel resolve-hostnames no",
		fmt.Sprintf("sentinel monitor %s %s %s %d", masterName, host, port, quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", masterName, max(1, downAfter.Milliseconds())),
		fmt.Sprintf("sentinel failover-timeout %s %d", masterName, max(1, failoverTimeout.Milliseconds())),
		fmt.Sprintf("sentinel parallel-syncs %s 1", masterName),
	}
	path := filepath.Join(s.dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	cmd := exec.Command("redis-sentinel", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := reap.Start(cmd); err != nil { // killed with locksim
		return fmt.Errorf("%s: start redis-sentinel: %w", s.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.admin = redis.NewClient(&redis.Options{Addr: s.addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, PoolSize: 2, Dialer: loopbackDialer(nil)})
	s.mu.Unlock()
	return awaitPing(ctx, s.admin, done, s.name, "redis-sentinel", filepath.Join(s.dir, "sentinel.log"))
}

// close kills the process and waits for it.
func (s *sentinelProc) close() {
	s.mu.Lock()
	cmd, done, admin := s.cmd, s.done, s.admin
	s.admin = nil
	s.mu.Unlock()
	if admin != nil {
		_ = admin.Close()
	}
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
		<-done
	}
}

// sentinelDebug are Sentinel's internal periods (SENTINEL DEBUG, Redis ≥
// 7.0) with their defaults in ms, scaled with the world. The script
// settings are left alone (no scripts run).
var sentinelDebug = []struct {
	name string
	ms   int64
}{
	{"info-period", 10000}, {"ping-period", 1000}, {"ask-period", 1000}, {"publish-period", 2000},
	{"slave-reconf-timeout", 10000}, {"min-link-reconnect-period", 15000}, {"election-timeout", 10000},
	{"tilt-period", 30000},
}

// scaleSentinel sets the Sentinel's internal periods to their defaults ×
// k (none below 10 ms). Nothing to do at k = 1.
func (s *sentinelProc) scaleSentinel(ctx context.Context, k float64) error {
	if k == 1 {
		return nil
	}
	args := []any{"SENTINEL", "DEBUG"}
	for _, d := range sentinelDebug {
		args = append(args, d.name, max(10, int64(float64(d.ms)*k)))
	}
	return s.admin.Do(ctx, args...).Err()
}

// failoverTimeout is Sentinel's failover-timeout: small (the scenario
// fails over every few TTL, and Sentinel waits twice this before it tries
// a failover of the same primary again), one TTL but never below 3 s of
// real time, since part of a failover does not scale (Sentinel polls the
// promoted replica's role once a second) and a shorter timeout aborts
// failovers that would have succeeded (measured: 500 ms aborted every
// try).
func failoverTimeout(ttl time.Duration) time.Duration {
	return max(3*time.Second, ttl)
}

// ready waits until every Sentinel knows the primary, its n replicas and
// the other Sentinels (they learn them from the primary's INFO and hello
// messages).
func sentinelsReady(ctx context.Context, ss []*sentinelProc, replicas int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		var last string
		for _, s := range ss {
			m, err := s.admin.Do(ctx, "SENTINEL", "MASTER", masterName).Slice()
			if err != nil {
				ok, last = false, err.Error()
				break
			}
			kv := map[string]string{}
			for i := 0; i+1 < len(m); i += 2 {
				kv[fmt.Sprint(m[i])] = fmt.Sprint(m[i+1])
			}
			if kv["num-slaves"] != strconv.Itoa(replicas) || kv["num-other-sentinels"] != strconv.Itoa(len(ss)-1) || kv["flags"] != "master" {
				ok, last = false, fmt.Sprintf("%s sees %s replicas, %s other sentinels, flags %s", s.name, kv["num-slaves"], kv["num-other-sentinels"], kv["flags"])
				break
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Sentinels did not settle within 30 s: %s", last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// gateway is the address a node announces: it splices each connection
// into the proxy of the link its source (told by its address) is on, or
// straight to the node for anyone else (the harness).
type gateway struct {
	l      net.Listener
	direct string            // the node itself
	routes map[string]string // source IP -> the link proxy's address
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// addGatewayedServer adds node n's server on ip:port, its folder under
// dir, to the world, with a gateway in front of its address (a Sentinel or
// cluster world's nodes announce their gateways); the server is started
// later.
func (w *world) addGatewayedServer(dir string, n sim.NodeConfig, ip string, port int) (*gateway, error) {
	d := filepath.Join(dir, n.Name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	s := &server{name: n.Name, ip: ip, port: port, dir: d, persistence: string(n.Persistence)}
	w.servers = append(w.servers, s)
	return newGateway(s.addr())
}

func newGateway(direct string) (*gateway, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(Loopback, "0"))
	if err != nil {
		return nil, err
	}
	return &gateway{l: l, direct: direct, routes: map[string]string{}, conns: map[net.Conn]bool{}}, nil
}

func (g *gateway) addr() string { return g.l.Addr().String() }

func (g *gateway) serve(seen func(string)) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := g.l.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			up := g.direct
			if r, ok := g.routes[host]; ok {
				up = r
			}
			g.wg.Add(1)
			go func() {
				defer g.wg.Done()
				g.splice(c, up, seen)
			}()
		}
	}()
}

func (g *gateway) track(c net.Conn, on bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if on && g.closed {
		return false
	}
	if on {
		g.conns[c] = true
	} else {
		delete(g.conns, c)
	}
	return true
}

func (g *gateway) splice(c net.Conn, up string, seen func(string)) {
	defer c.Close()
	if seen != nil {
		seen(up)
	}
	if checkLoopback(up) != nil {
		return
	}
	u, err := net.DialTimeout("tcp", up, time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	if !g.track(c, true) || !g.track(u, true) {
		return
	}
	defer g.track(c, false)
	defer g.track(u, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done // either side ended: end both
	c.Close()
	u.Close()
	<-done
}

func (g *gateway) close() {
	g.l.Close()
	g.mu.Lock()
	g.closed = true
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}
