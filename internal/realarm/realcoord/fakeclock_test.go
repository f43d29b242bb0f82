package realcoord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestWriteOffset(t *testing.T) {
	m := &Member{Name: "zk0", Dir: t.TempDir()}
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{0, "+0.000000\n"}, {2 * time.Second, "+2.000000\n"}, {-1500 * time.Millisecond, "-1.500000\n"}, {time.Hour, "+3600.000000\n"}} {
		if err := m.writeOffset(tc.d); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(m.Dir, fakeTimeFile))
		if err != nil || string(b) != tc.want {
			t.Errorf("offset %v: file %q, %v; want %q", tc.d, b, err, tc.want)
		}
	}
	if es, _ := os.ReadDir(m.Dir); len(es) != 1 {
		t.Errorf("the dir holds %d files, want the offset file only (no temp file left)", len(es))
	}
	e := &Ensemble{Kind: ZooKeeper, Members: []*Member{m}}
	if err := e.JumpClock(0, time.Second); err == nil || !strings.Contains(err.Error(), "libfaketime") {
		t.Errorf("JumpClock without fake clocks: %v, want an error naming libfaketime", err)
	}
	if _, err := StartOpts(context.Background(), Etcd, t.TempDir(), time.Second, StartOptions{FakeClocks: true}); err == nil || !strings.Contains(err.Error(), "Go binary") {
		if !errors.As(err, new(*MissingError)) {
			t.Errorf("fake clocks on etcd: %v, want a refusal naming the reason", err)
		}
	}
}

// cutter is a TCP forwarder in front of one member that can be cut: its
// connections closed and new ones refused (the listener closed), so that
// a client behind it stops pinging without closing its session.
type cutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newCutter(t *testing.T, upstream string) *cutter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", upstream)
			if err != nil {
				a.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, a, b)
			c.mu.Unlock()
			c.wg.Add(2)
			go func() { defer c.wg.Done(); _, _ = io.Copy(a, b); a.Close() }()
			go func() { defer c.wg.Done(); _, _ = io.Copy(b, a); b.Close() }()
		}
	}()
	t.Cleanup(c.cut)
	return c
}

func (c *cutter) cut() {
	c.ln.Close()
	c.mu.Lock()
	for _, x := range c.conns {
		x.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// TestZKClockJump steps every ZooKeeper member's wall clock by an hour,
// forward and then back, under libfaketime, and checks what
// docs/CONSENSUS.md expects from ZooKeeper 3.8's source: the jump
// reaches the JVM (a node created after it carries the stepped time as
// its ctime) but no session's expiry moves (sessions are timed on
// System.nanoTime): a session that keeps pinging survives, and one whose
// client is cut off expires about a session timeout after its last
// ping, not at once nor an hour late. The control is the same steps on
// members started without libfaketime, with no jump.
func TestZKClockJump(t *testing.T) {
	var me *MissingError
	if err := Check(ZooKeeper); errors.As(err, &me) {
		t.Skipf("%v", err)
	}
	if _, err := FakeTimeLib(); err != nil {
		t.Skip(err)
	}
	t.Run("control", func(t *testing.T) { zkClockJump(t, false) })
	t.Run("faked", func(t *testing.T) { zkClockJump(t, true) })
}

func zkClockJump(t *testing.T, fake bool) {
	const timeout = 3 * time.Second
	e, err := StartOpts(context.Background(), ZooKeeper, t.TempDir(), timeout, StartOptions{FakeClocks: fake})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	t.Logf("three JVMs (libfaketime: %v) served with a leader after %v", fake, e.StartWall)
	quiet := zk.WithLogger(log.New(io.Discard, "", 0))
	var addrs []string
	for _, m := range e.Members {
		addrs = append(addrs, m.Addr())
	}
	keep, ev, err := zk.Connect(addrs, timeout, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	waitSession(t, ev)
	// The pinging session's state changes, told against the jumps.
	var smu sync.Mutex
	var states []string
	expired := false
	began := time.Now()
	go func() {
		for e := range ev {
			if e.Type != zk.EventSession {
				continue
			}
			smu.Lock()
			states = append(states, fmt.Sprintf("%v at %v", e.State, time.Since(began).Round(time.Millisecond)))
			expired = expired || e.State == zk.StateExpired
			smu.Unlock()
		}
	}()
	defer func() {
		smu.Lock()
		defer smu.Unlock()
		t.Logf("the pinging session's state changes: %v", states)
		if expired {
			t.Errorf("the pinging session expired across the jumps")
		}
		if t.Failed() || len(states) > 0 {
			for _, m := range e.Members {
				t.Logf("%s's log: %s", m.Name, m.tail())
			}
		}
	}()
	// A connection lost under a request: the client reconnects (the
	// session lives on); the node may have been made already.
	createOnce := func(c *zk.Conn, name string, flags int32) {
		retry(t, began, "create "+name, func() error {
			_, err := c.Create(name, nil, flags, zk.WorldACL(zk.PermAll))
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		})
	}
	createOnce(keep, "/kept", zk.FlagEphemeral)
	ctime := func(name string) time.Duration {
		createOnce(keep, name, 0)
		var st *zk.Stat
		retry(t, began, "get "+name, func() (err error) { _, st, err = keep.Get(name); return err })
		return time.Until(time.UnixMilli(st.Ctime)) // the leader's clock ahead of ours
	}
	if d := ctime("/before"); d.Abs() > 5*time.Second {
		t.Fatalf("before any jump a node's ctime is %v off the real time", d)
	}
	for step, jump := range []time.Duration{time.Hour, -2 * time.Hour} {
		if !fake {
			jump = 0
		}
		t.Logf("jump by %v at %v", jump, time.Since(began).Round(time.Millisecond))
		for i := range e.Members {
			if jump == 0 {
				break
			}
			if err := e.JumpClock(i, jump); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(1100 * time.Millisecond) // libfaketime reads the offset once a second
		want := time.Duration(0)
		if fake {
			want = e.ClockOffset(0)
		}
		if d := ctime([]string{"/after-fwd", "/after-back"}[step]); (d - want).Abs() > 5*time.Second {
			t.Errorf("after a jump to %v a node's ctime is %v off the real time: the jump did not reach the leader's JVM", want, d)
		} else {
			t.Logf("clocks at %v: a new node's ctime is %v off the real time", want, d.Round(time.Millisecond))
		}

		// A second session behind a forwarder; cut it and time its
		// ephemeral node's deletion, seen by the session that keeps pinging.
		fw := newCutter(t, e.Members[step].Addr())
		gone, gev, err := zk.Connect([]string{fw.ln.Addr().String()}, timeout, quiet)
		if err != nil {
			t.Fatal(err)
		}
		waitSession(t, gev)
		node := []string{"/lost-fwd", "/lost-back"}[step]
		_, _ = gone.Sync("/") // a round trip: the session is settled on the server
		createOnce(gone, node, zk.FlagEphemeral)
		retry(t, began, "sync "+node, func() error { _, err := keep.Sync(node); return err }) // keep's member has seen the create
		var ok bool
		var watch <-chan zk.Event
		retry(t, began, "exists "+node, func() (err error) { ok, _, watch, err = keep.ExistsW(node); return err })
		if !ok {
			t.Fatalf("%s: exists %v", node, ok)
		}
		cutAt := time.Now()
		fw.cut()
		select {
		case w := <-watch:
			took := time.Since(cutAt)
			t.Logf("clocks at %v: the cut-off session's node went %v after the cut (%v, session timeout %v)", want, took.Round(time.Millisecond), w.Type, timeout)
			if w.Type != zk.EventNodeDeleted || took < timeout-time.Second || took > 3*timeout {
				t.Errorf("the cut-off session expired %v after the cut (%v), want about its timeout %v", took, w.Type, timeout)
			}
		case <-time.After(6 * timeout):
			t.Errorf("the cut-off session's node still there %v after the cut, with clocks at %v", 6*timeout, want)
		}
		gone.Close()
	}
	ok, _, err := keep.Exists("/kept")
	if err != nil || !ok {
		t.Errorf("the session that kept pinging lost its node across the jumps: %v, %v", ok, err)
	}
	if st := keep.State(); st != zk.StateHasSession {
		t.Errorf("the pinging session's state %v after the jumps", st)
	}
}

func waitSession(t *testing.T, ev <-chan zk.Event) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return
			}
		case <-deadline:
			t.Fatal("no session within 20s")
		}
	}
}

// retry runs fn until it does not fail with a lost connection (the
// client reconnects and the session lives on: ZooKeeper's programmer's
// guide has the application retry), at most 20 times.
func retry(t *testing.T, began time.Time, what string, fn func() error) {
	t.Helper()
	for try := 0; ; try++ {
		err := fn()
		if err == nil {
			return
		}
		if try == 20 || !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s at %v: %v (retrying)", what, time.Since(began).Round(time.Millisecond), err)
		time.Sleep(250 * time.Millisecond)
	}
}
