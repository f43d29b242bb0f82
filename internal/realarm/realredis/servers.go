package realredis

import (
	"context"
	"errors"
	"fmt"
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
)

// Binaries the real arm needs, with the Debian package that has each.
var Binaries = []struct{ Name, Package string }{
	{"redis-server", "redis-server"},
	{"redis-sentinel", "redis-sentinel"},
}

// MissingError says which binaries are absent and how to get them.
type MissingError struct{ Missing []string }

func (e *MissingError) Error() string {
	return fmt.Sprintf("the real-Redis arm needs %s on PATH (not found); install with: apt-get install -y redis-server redis-sentinel faketime",
		strings.Join(e.Missing, ", "))
}

// CheckBinaries reports a *MissingError naming every binary the real arm
// needs that is not on PATH.
func CheckBinaries() error {
	var missing []string
	for _, b := range Binaries {
		if _, err := exec.LookPath(b.Name); err != nil {
			missing = append(missing, b.Name+" (package "+b.Package+")")
		}
	}
	if len(missing) > 0 {
		return &MissingError{Missing: missing}
	}
	return nil
}

// Loopback is the address the real arm listens on and dials, except in a
// replicated world, whose redis-server and redis-sentinel processes each
// get an address of their own in 127.0.0.0/8 (still loopback: Linux routes
// the whole block to lo), so that a node can tell who connects to it by the
// source address (gateway). Nothing outside 127.0.0.0/8 is ever used.
const Loopback = "127.0.0.1"

// startTimeout bounds how long a redis-server may take to accept
// connections after it was started.
const startTimeout = 10 * time.Second

// server is one redis-server process on loopback, with its own directory
// (its append-only file survives a crash there).
type server struct {
	name        string
	ip          string // "" for Loopback
	port        int
	dir         string
	persistence string // none, everysec, always, no (appendfsync no)
	// conf, if set, are the lines of a config file the server runs from
	// (written once, before the first start; Sentinel's CONFIG REWRITE
	// keeps a promoted or re-pointed node's role in it across a restart,
	// as in a real deployment). Without it the server runs from args.
	conf []string

	// op serialises start, crash and close: a crash that comes while a
	// restart is still starting the process waits for it (the node is
	// then killed a little later than scheduled), instead of killing a
	// process whose start-up is being watched.
	op      sync.Mutex
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd exits
	stopped bool          // SIGSTOPped
	down    bool          // killed, not restarted yet
	admin   *redis.Client // direct (not proxied) client for the harness
	hold    net.Listener  // holds the port while the node is down (holdPort)
}

func (s *server) host() string {
	if s.ip != "" {
		return s.ip
	}
	return Loopback
}

func (s *server) addr() string { return net.JoinHostPort(s.host(), strconv.Itoa(s.port)) }

// Redis ports are drawn below Linux's default ephemeral range
// (32768-60999), so that a connection's source port or another run's proxy
// is unlikely to take the port of a node that is down for a restart.
const portLow, portHigh = 20000, 32000

// freePort finds a free loopback port for a redis-server on 127.0.0.1.
func freePort() (int, error) { return freePortOn(Loopback) }

// freePortOn finds a free port on the loopback address ip.
func freePortOn(ip string) (int, error) {
	for try := 0; try < 64; try++ {
		port := portLow + mathrand.IntN(portHigh-portLow)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// holdPort keeps a crashed node's port while it is down: it accepts and
// at once closes every connection (a client sees the node fail at once,
// as with a refused connection), so nothing else takes the port before
// the restart.
func (s *server) holdPort() {
	l, err := net.Listen("tcp", s.addr())
	if err != nil {
		return // the restart will say if the port is gone
	}
	s.mu.Lock()
	s.hold = l
	s.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

func (s *server) releasePort() {
	s.mu.Lock()
	l := s.hold
	s.hold = nil
	s.mu.Unlock()
	if l != nil {
		l.Close()
	}
}

func (s *server) args() []string {
	a := []string{"--port", strconv.Itoa(s.port), "--bind", Loopback, "--dir", s.dir,
		"--daemonize", "no", "--protected-mode", "yes", "--save", "",
		"--logfile", filepath.Join(s.dir, "redis.log"), "--dbfilename", "dump.rdb"}
	switch s.persistence {
	case "always", "everysec", "no":
		a = append(a, "--appendonly", "yes", "--appendfsync", s.persistence)
	default:
		a = append(a, "--appendonly", "no")
	}
	return a
}

// start runs the server and waits until it answers PING.
func (s *server) start(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	s.mu.Lock()
	running := s.cmd != nil && !s.down
	s.mu.Unlock()
	if running {
		return errRunning // already restarted (the heal and a crash's end both ask)
	}
	s.releasePort()
	args := s.args()
	if s.conf != nil {
		path := filepath.Join(s.dir, "redis.conf")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(path, []byte(strings.Join(s.conf, "\n")+"\n"), 0o644); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
		}
		args = []string{path}
	}
	cmd := exec.Command("redis-server", args...)
	// Its own process group (a Ctrl-C on the terminal reaches locksim,
	// which kills it), and killed with locksim if locksim dies (reap.Start).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := reap.Start(cmd); err != nil {
		return fmt.Errorf("%s: start redis-server: %w", s.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done, s.down, s.stopped = cmd, done, false, false
	if s.admin == nil {
		s.admin = redis.NewClient(&redis.Options{Addr: s.addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, PoolSize: 2, Dialer: loopbackDialer(nil)})
	}
	s.mu.Unlock()
	return awaitPing(ctx, s.admin, done, s.name, "redis-server", filepath.Join(s.dir, "redis.log"))
}

// awaitPing waits until a process just started answers PING: an error if
// it exits first (its log named), ctx ends, or startTimeout passes.
func awaitPing(ctx context.Context, admin *redis.Client, done <-chan struct{}, name, binary, log string) error {
	deadline := time.Now().Add(startTimeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := admin.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s: %s exited at start-up (see %s)", name, binary, log)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not answer PING within %v: %v", name, binary, startTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil || s.down {
		return fmt.Errorf("%s is not running", s.name)
	}
	return s.cmd.Process.Signal(sig)
}

// pause stops the process (SIGSTOP); resume continues it (SIGCONT).
func (s *server) pause() error {
	if err := s.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	return nil
}

func (s *server) resume() error {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if !stopped {
		return nil
	}
	if err := s.signal(syscall.SIGCONT); err != nil {
		return err
	}
	s.mu.Lock()
	s.stopped = false
	s.mu.Unlock()
	return nil
}

// kill ends the process with SIGKILL (a crash) and waits for it.
func (s *server) kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.down = true
	s.stopped = false
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// crash kills the process (SIGKILL) and holds its port until the restart.
func (s *server) crash() {
	s.op.Lock()
	defer s.op.Unlock()
	s.kill()
	s.holdPort()
}

// close kills the process for good and closes the admin client.
func (s *server) close() {
	s.op.Lock()
	defer s.op.Unlock()
	s.kill()
	s.releasePort()
	s.mu.Lock()
	if s.admin != nil {
		_ = s.admin.Close()
		s.admin = nil
	}
	s.mu.Unlock()
}

// isDown reports whether the server is crashed and not restarted.
func (s *server) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// loopbackDialer dials only loopback addresses (127.0.0.0/8); seen, if set, is told every
// address dialled (the loopback test reads it).
func loopbackDialer(seen func(string)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if seen != nil {
			seen(addr)
		}
		if err := checkLoopback(addr); err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// errRunning: start found the server already running.
var errRunning = errors.New("already running")

// errNotLoopback is returned for any address outside 127.0.0.0/8.
var errNotLoopback = errors.New("not a loopback address")

// IsLoopback reports whether host is a literal IPv4 address in
// 127.0.0.0/8 (no names, no IPv6).
func IsLoopback(host string) bool {
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() == nil || strings.Contains(host, ":") {
		return false
	}
	return ip.To4()[0] == 127
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	if !IsLoopback(host) {
		return fmt.Errorf("%s: %w (the real arm uses 127.0.0.0/8 only)", addr, errNotLoopback)
	}
	return nil
}

// removeAll removes dir, reporting a failure.
func removeAll(dir string) error {
	if dir == "" {
		return nil
	}
	return os.RemoveAll(dir)
}
