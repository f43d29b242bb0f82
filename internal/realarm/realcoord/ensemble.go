package realcoord

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locksim/locksim/internal/reap"
)

// Kind is which real service an ensemble runs.
type Kind string

const (
	ZooKeeper Kind = "zookeeper"
	Etcd      Kind = "etcd"
)

// Members is the size of every ensemble (the simulator's zk store has 3).
const Members = 3

// StartTimeout bounds how long the ensemble may take to serve after its
// processes were started (a JVM on a busy 2-core machine takes seconds),
// and RestartTimeout a restarted member. Members under libfaketime get
// FakeClockSlowdown times as long: three such JVMs served after 14–30 s
// on an idle machine (docs/FINDINGS.md, member clock jumps), over a
// minute beside a loaded test run (a CI failure at 60 s).
const FakeClockSlowdown = 3

var (
	StartTimeout   = 60 * time.Second
	RestartTimeout = 30 * time.Second
)

// MissingError says which binaries a kind needs and how to get them.
type MissingError struct {
	Kind    Kind
	Missing []string
}

func (e *MissingError) Error() string {
	pkgs := "etcd-server etcd-client"
	if e.Kind == ZooKeeper {
		pkgs = "zookeeper default-jre-headless"
	}
	return fmt.Sprintf("the real arm's %s needs %s (not found); install with: apt-get install -y %s", e.Kind, strings.Join(e.Missing, ", "), pkgs)
}

// ZooKeeperJar is where Debian's zookeeper package puts the server.
const ZooKeeperJar = "/usr/share/java/zookeeper.jar"

// Check reports a *MissingError when kind's binaries are absent.
func Check(kind Kind) error {
	var missing []string
	switch kind {
	case Etcd:
		if _, err := exec.LookPath("etcd"); err != nil {
			missing = append(missing, "etcd (package etcd-server)")
		}
	case ZooKeeper:
		if _, err := exec.LookPath("java"); err != nil {
			missing = append(missing, "java (package default-jre-headless)")
		}
		if _, err := os.Stat(ZooKeeperJar); err != nil {
			missing = append(missing, ZooKeeperJar+" (package zookeeper)")
		}
	default:
		return fmt.Errorf("unknown coordination service %q", kind)
	}
	if len(missing) > 0 {
		return &MissingError{Kind: kind, Missing: missing}
	}
	return nil
}

// Member is one server of the ensemble.
type Member struct {
	Name string // zk0, zk1, zk2 (the simulator's member names)
	ID   int    // 1-based (ZooKeeper's myid)
	IP   string // its own 127.x address
	// Client is the port clients connect to; Peer and Election the ports
	// members use between them (Election: ZooKeeper only).
	Client, Peer, Election int
	// PeerProxy is the port the other members reach Peer at (etcd with
	// peer proxies: peerproxy.go; 0 without).
	PeerProxy int
	Dir       string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	status  string // how the last process exited (set before exited closes)
	stopped bool   // SIGSTOPped
	log     *os.File
	offset  time.Duration // its clock offset under libfaketime (fakeclock.go)
}

// Addr is the member's client address.
func (m *Member) Addr() string { return net.JoinHostPort(m.IP, strconv.Itoa(m.Client)) }

// Ensemble is a running coordination service.
type Ensemble struct {
	Kind    Kind
	Members []*Member
	// SessionTimeout is the ZooKeeper session timeout the servers accept
	// (tickTime is set so that it is within 2..20 ticks).
	SessionTimeout time.Duration
	// StartWall is how long Start took (measured: the JVMs' start-up).
	StartWall time.Duration
	ctx       context.Context
	peers     *peerNet // etcd's peer proxies (peerproxy.go), nil without
	// fakeClocks: ZooKeeper members run under libfaketime (fakeLib), so
	// that JumpClock can step their wall clocks (fakeclock.go).
	fakeClocks bool
	fakeLib    string
	relays     []*relay     // ZooKeeper's quorum links (zkrelay.go)
	claim      net.Listener // the address block's claim (claimIPs)
}

// StartOptions are what StartOpts may be asked beyond Start's.
type StartOptions struct {
	// Peer: the members' links to each other, cut-able (see StartWith).
	Peer PeerFunc
	// FakeClocks starts every ZooKeeper member under libfaketime, its
	// wall clock steppable by JumpClock (fakeclock.go). ZooKeeper only
	// (libfaketime does not reach a Go binary such as etcd).
	FakeClocks bool
}

// Ensembles take 127.0.N.x blocks (N in 30..229) so that runs going at
// once, in this process or another (go test runs package binaries side by
// side), never share an address: an ensemble claims its block by binding
// blockClaimPort on 127.0.N.254, held until Close. Within a block, ports
// are held until the members start (reservePort).
var (
	ipMu   sync.Mutex
	ipNext int
)

// blockClaimPort is below Linux's ephemeral range (32768–60999), so that
// no connection's source port can hold it.
const blockClaimPort = 29871

func claimIPs() ([]string, net.Listener, error) {
	ipMu.Lock()
	defer ipMu.Unlock()
	if ipNext == 0 {
		ipNext = os.Getpid() % 200
	}
	var last error
	for try := 0; try < 200; try++ {
		ipNext = (ipNext + 1) % 200
		block := fmt.Sprintf("127.0.%d.", 30+ipNext)
		claim, err := net.Listen("tcp", net.JoinHostPort(block+"254", fmt.Sprint(blockClaimPort)))
		if err != nil {
			last = err // another ensemble's, here or in another process
			continue
		}
		var out []string
		for i := 0; i < Members; i++ {
			out = append(out, fmt.Sprintf("%s%d", block, i+1))
		}
		return out, claim, nil
	}
	return nil, nil, fmt.Errorf("no free 127.0.N.x block for an ensemble (200 tried; the last: %w)", last)
}

// reservePort binds a free port on ip and keeps it bound: the caller
// closes the listener just before the server that takes the port starts,
// so that the relays and proxies this process binds on the same address
// meanwhile cannot be given it (a ZooKeeper member that finds its quorum
// port taken exits with status 14).
func reservePort(ip string) (int, net.Listener, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, nil, err
	}
	return l.Addr().(*net.TCPAddr).Port, l, nil
}

// Start starts kind's three members under dir and waits until each
// serves. sessionTimeout sizes ZooKeeper's tickTime (0: 3 s). On an error
// every process started is gone.
func Start(ctx context.Context, kind Kind, dir string, sessionTimeout time.Duration) (*Ensemble, error) {
	return StartWith(ctx, kind, dir, sessionTimeout, nil)
}

// PeerFunc returns the address member from dials to reach addr, a port of
// member to (a proxy of the caller's, so that a partition can cut the
// link between two members).
type PeerFunc func(from, to, addr string) (string, error)

// StartWith is Start with the members' links to each other cut-able.
// ZooKeeper: each server's config names the others by the address peer
// returns (the caller's per-link proxy). etcd: its members must agree on
// one peer URL each, so peer is not called; each member's advertised
// peer URL is instead a proxy of the ensemble's own, whose links
// CutPeers cuts (peerproxy.go). nil: direct.
func StartWith(ctx context.Context, kind Kind, dir string, sessionTimeout time.Duration, peer PeerFunc) (*Ensemble, error) {
	return StartOpts(ctx, kind, dir, sessionTimeout, StartOptions{Peer: peer})
}

// StartOpts is Start with options.
func StartOpts(ctx context.Context, kind Kind, dir string, sessionTimeout time.Duration, opt StartOptions) (e *Ensemble, err error) {
	if err := Check(kind); err != nil {
		return nil, err
	}
	peer := opt.Peer
	fakeLib := ""
	if opt.FakeClocks {
		if kind != ZooKeeper {
			return nil, fmt.Errorf("%s: member clocks cannot be faked (libfaketime does not reach a Go binary: docs/CONSENSUS.md)", kind)
		}
		if fakeLib, err = FakeTimeLib(); err != nil {
			return nil, err
		}
	}
	if sessionTimeout <= 0 {
		sessionTimeout = 3 * time.Second
	}
	began := time.Now()
	e = &Ensemble{Kind: kind, SessionTimeout: sessionTimeout, ctx: ctx, fakeClocks: fakeLib != "", fakeLib: fakeLib}
	defer func() {
		if err != nil {
			e.Close()
			e = nil
		}
	}()
	var reserved []net.Listener
	release := func() {
		for _, l := range reserved {
			l.Close()
		}
		reserved = nil
	}
	defer release()
	ips, claim, err := claimIPs()
	if err != nil {
		return e, err
	}
	e.claim = claim
	for i, ip := range ips {
		m := &Member{Name: fmt.Sprintf("zk%d", i), ID: i + 1, IP: ip, Dir: filepath.Join(dir, fmt.Sprintf("%s%d", kind, i))}
		for _, p := range []*int{&m.Client, &m.Peer, &m.Election} {
			var l net.Listener
			if *p, l, err = reservePort(ip); err != nil {
				return e, fmt.Errorf("%s: a port on %s: %w", m.Name, ip, err)
			}
			reserved = append(reserved, l)
		}
		if err := os.MkdirAll(m.Dir, 0o755); err != nil {
			return e, err
		}
		if e.fakeClocks {
			if err := m.writeOffset(0); err != nil {
				return e, err
			}
		}
		e.Members = append(e.Members, m)
	}
	if kind == ZooKeeper {
		if err := e.writeZKConfigs(peer); err != nil {
			return e, err
		}
	} else if peer != nil {
		if err := e.startPeerProxies(); err != nil {
			return e, err
		}
	}
	release()
	for _, m := range e.Members {
		if err := e.spawn(m); err != nil {
			return e, err
		}
	}
	wait := StartTimeout
	if e.fakeClocks {
		wait *= FakeClockSlowdown
	}
	deadline := time.Now().Add(wait)
	for _, m := range e.Members {
		if err := e.waitServing(m, deadline, wait); err != nil {
			return e, err
		}
	}
	if _, err := e.waitLeader(deadline); err != nil {
		return e, err
	}
	e.StartWall = time.Since(began)
	return e, nil
}

// args is the command line of member m.
func (e *Ensemble) command(m *Member) *exec.Cmd {
	if e.Kind == ZooKeeper {
		return exec.Command("java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
			"-Dzookeeper.log.dir="+m.Dir, "-Dzookeeper.admin.enableServer=false", "-Dzookeeper.jmx.log4j.disable=true",
			"-cp", m.Dir+":"+ZooKeeperJar, "org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(m.Dir, "zoo.cfg"))
	}
	var cluster []string
	for _, o := range e.Members {
		cluster = append(cluster, fmt.Sprintf("%s=http://%s:%d", o.Name, o.IP, o.peerURLPort()))
	}
	state := "new"
	if _, err := os.Stat(filepath.Join(m.Dir, "data", "member")); err == nil {
		state = "existing"
	}
	return exec.Command("etcd", "--name", m.Name, "--data-dir", filepath.Join(m.Dir, "data"),
		"--listen-client-urls", fmt.Sprintf("http://%s:%d", m.IP, m.Client),
		"--advertise-client-urls", fmt.Sprintf("http://%s:%d", m.IP, m.Client),
		"--listen-peer-urls", fmt.Sprintf("http://%s:%d", m.IP, m.Peer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://%s:%d", m.IP, m.peerURLPort()),
		"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-state", state,
		"--initial-cluster-token", "locksim", "--heartbeat-interval", "50", "--election-timeout", "500",
		"--log-level", "warn", "--logger", "zap")
}

// peerURLPort is the port of m's advertised peer URL: its peer proxy's
// when it has one.
func (m *Member) peerURLPort() int {
	if m.PeerProxy != 0 {
		return m.PeerProxy
	}
	return m.Peer
}

func (e *Ensemble) spawn(m *Member) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return nil
	}
	cmd := e.command(m)
	cmd.Dir = m.Dir
	if e.fakeClocks {
		cmd.Env = m.fakeClockEnv(e.fakeLib)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // killed with locksim (reap.Start)
	log, err := os.OpenFile(filepath.Join(m.Dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if _, err := reap.Start(cmd); err != nil {
		log.Close()
		return fmt.Errorf("%s %s: %w", e.Kind, m.Name, err)
	}
	m.cmd, m.log, m.stopped = cmd, log, false
	exited := make(chan struct{})
	m.exited = exited
	go func() {
		err := cmd.Wait()
		m.mu.Lock()
		m.status = fmt.Sprint(err)
		m.mu.Unlock()
		close(exited)
	}()
	return nil
}

// waitServing waits until m answers its health check, until deadline
// (wait after the start, for the message).
func (e *Ensemble) waitServing(m *Member, deadline time.Time, wait time.Duration) error {
	for {
		m.mu.Lock()
		exited := m.exited
		m.mu.Unlock()
		select {
		case <-exited:
			m.mu.Lock()
			status := m.status
			m.mu.Unlock()
			return fmt.Errorf("%s %s (%s) exited while starting (%s%s): %s", e.Kind, m.Name, m.Addr(), status, exitMeaning(e.Kind, status), m.tail())
		default:
		}
		if e.healthy(m) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s (%s) did not serve within %v (members: %s): %s", e.Kind, m.Name, m.Addr(), wait, e.Modes(), m.tail())
		}
		select {
		case <-e.ctx.Done():
			return e.ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// exitMeaning names what a ZooKeeper exit status means (its
// org.apache.zookeeper.server.ExitCode, read from the 3.8.0 jar): Debian's
// zookeeper logs nothing (no slf4j backend), so the status is all it says.
func exitMeaning(kind Kind, status string) string {
	if kind != ZooKeeper {
		return ""
	}
	switch status {
	case "exit status 3":
		return ": ZooKeeper could not use its data dir"
	case "exit status 14":
		return ": ZooKeeper could not bind its quorum port"
	}
	return ""
}

// tail is the end of m's log, for an error.
func (m *Member) tail() string {
	b, _ := os.ReadFile(filepath.Join(m.Dir, "server.log"))
	// Debian's zookeeper ships no slf4j backend: its six SLF4J warnings
	// open every log and say nothing of why a member did not serve.
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "SLF4J: ") {
			keep = append(keep, l)
		}
	}
	s := strings.TrimSpace(strings.Join(keep, "\n"))
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	if s == "" {
		return "(no output)"
	}
	return s
}

// Leader returns the index of the member that leads now (-1: none known).
func (e *Ensemble) Leader() int {
	for i, m := range e.Members {
		if e.isLeader(m) {
			return i
		}
	}
	return -1
}

func (e *Ensemble) waitLeader(deadline time.Time) (int, error) {
	for {
		if l := e.Leader(); l >= 0 {
			return l, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("%s: no member became leader before the start's deadline (StartTimeout, ×%d under libfaketime)", e.Kind, FakeClockSlowdown)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Pause SIGSTOPs member i; Resume SIGCONTs it.
func (e *Ensemble) Pause(i int) error  { return e.Members[i].signal(syscall.SIGSTOP, true) }
func (e *Ensemble) Resume(i int) error { return e.Members[i].signal(syscall.SIGCONT, false) }

func (m *Member) signal(sig syscall.Signal, stopped bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return nil // down: nothing to stop
	}
	m.stopped = stopped
	return syscall.Kill(-m.cmd.Process.Pid, sig)
}

// Kill SIGKILLs member i and waits until it is gone.
func (e *Ensemble) Kill(i int) { e.Members[i].kill() }

func (m *Member) kill() {
	m.mu.Lock()
	cmd, exited, log := m.cmd, m.exited, m.log
	m.cmd, m.log = nil, nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
	if log != nil {
		log.Close()
	}
}

// Down reports whether member i is not running.
func (e *Ensemble) Down(i int) bool {
	m := e.Members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd == nil
}

// Restart starts member i again on its data and waits (RestartTimeout)
// until it serves.
//
// A member that exits while restarting is started once more (measured
// once in a parity table: a ZooKeeper member restarted 1 TTL after its
// SIGKILL exited at start-up on a loaded machine, with nothing in its
// log: Debian's zookeeper ships no logging backend; not reproduced in
// 6 restarts in a row); both failures are in the error.
func (e *Ensemble) Restart(i int) error {
	m := e.Members[i]
	wait := RestartTimeout
	if e.fakeClocks {
		wait *= FakeClockSlowdown
	}
	deadline := time.Now().Add(wait)
	var first error
	for try := 0; try < 2; try++ {
		if err := e.spawn(m); err != nil {
			return err
		}
		err := e.waitServing(m, deadline, wait)
		if err == nil || !strings.Contains(err.Error(), "exited while starting") {
			return err
		}
		m.kill() // reap it: spawn starts a new process only when none is running
		if first != nil {
			return fmt.Errorf("%w; then, started again: %v", first, err)
		}
		first = err
		time.Sleep(500 * time.Millisecond)
	}
	return first
}

// Close kills every member and stops the peer proxies (their data dirs
// are the caller's temp dir).
func (e *Ensemble) Close() {
	if e == nil {
		return
	}
	for _, m := range e.Members {
		m.kill()
	}
	if e.peers != nil {
		e.peers.close()
	}
	for _, r := range e.relays {
		r.Close()
	}
	if e.claim != nil {
		e.claim.Close()
	}
}
