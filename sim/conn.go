package sim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// conn is a simulated TCP connection from a client process to a node. The
// client side implements net.Conn for go-redis: Write hands complete
// commands to the network as events, Read blocks until the scheduler
// delivers reply bytes, an error or a deadline. Errors reach a blocked
// reader only through scheduled events, never from another goroutine.
type conn struct {
	w    *World
	p    *Proc
	node *Node
	src  uint64
	seq  uint64
	rng  *rand.Rand
	// node incarnation at dial: a crash or restart resets the connection
	epoch int

	// client side, guarded by w.mu
	rbuf    []byte
	rerr    error
	waiting bool
	readCh  chan struct{}
	rdl     time.Time
	dlArmed int64  // true time of the pending deadline event, 0 if none
	dlEv    *event // the pending deadline event
	closed  bool
	wbuf    []byte
	lastUp  int64

	// node side, touched by the scheduler only
	peer      *server.Peer
	out       bytes.Buffer
	bw        *bufio.Writer
	lastDown  int64
	waitReq   *waitReq
	backlog   [][]string
	resetSent bool
	noNative  bool // the connection used SELECT or MULTI
	asking    bool // a cluster node: the connection sent ASKING (for its next command)
}

// Errors name the link (Source, Addr: "read tcp c0->n0: ..."), so a run's
// summary can say which node held a client back.

func (c *conn) resetErr() error {
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

func (c *conn) timeoutErr(op string) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
}

type simAddr string

func (a simAddr) Network() string { return "sim" }
func (a simAddr) String() string  { return string(a) }

func (c *conn) LocalAddr() net.Addr  { return simAddr(c.p.name) }
func (c *conn) RemoteAddr() net.Addr { return simAddr(c.node.name) }

func (c *conn) Read(b []byte) (int, error) {
	w := c.w
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if len(c.rbuf) > 0 {
			n := copy(b, c.rbuf)
			c.rbuf = c.rbuf[n:]
			return n, nil
		}
		if c.rerr != nil {
			return 0, c.rerr
		}
		if c.closed || w.stopping {
			return 0, net.ErrClosed
		}
		now := w.now()
		if !c.rdl.IsZero() && w.bc.fromTime(c.rdl) <= now {
			return 0, c.timeoutErr("read")
		}
		c.waiting = true
		if !c.rdl.IsZero() {
			c.armDeadlineLocked(w.bc.fromTime(c.rdl))
		}
		w.mu.Unlock()
		<-c.readCh
		w.mu.Lock()
	}
}

// armDeadlineLocked makes sure one deadline event is pending at or before
// true time at. A connection keeps at most one: when it fires it wakes the
// reader only if the current deadline has passed, and otherwise re-arms for
// the current one (deadlines move with every command; a chain of stale
// events per command would grow without bound). A reader woken by data
// cancels it (cancelDeadlineLocked): most reads end long before their
// deadline, and a cancelled event costs the scheduler nothing. The caller
// holds w.mu.
func (c *conn) armDeadlineLocked(at int64) {
	if c.dlEv != nil && c.dlArmed <= at {
		return
	}
	c.cancelDeadlineLocked()
	c.dlArmed = at
	c.seq++
	c.dlEv = c.w.scheduleFromLocked(at, c.src, c.seq, c.p, stepDeadline, nil)
	c.dlEv.op, c.dlEv.c, c.dlEv.arg = opDeadline, c, at
}

// cancelDeadlineLocked drops the pending deadline event. The caller holds w.mu.
func (c *conn) cancelDeadlineLocked() {
	if c.dlEv != nil {
		c.dlEv.dead = true
		c.dlEv, c.dlArmed = nil, 0
	}
}

func (c *conn) deadlineFired(at int64) {
	w := c.w
	w.mu.Lock()
	if c.dlArmed != at {
		w.mu.Unlock()
		return // superseded by an earlier one
	}
	c.dlEv, c.dlArmed = nil, 0
	if !c.waiting || c.rdl.IsZero() {
		w.mu.Unlock()
		return
	}
	if dl := w.bc.fromTime(c.rdl); dl > w.now() {
		c.armDeadlineLocked(dl)
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	c.wakeReader()
}

// wakeReader runs in the scheduler and lets a blocked reader look again.
func (c *conn) wakeReader() {
	c.w.mu.Lock()
	waiting := c.waiting
	c.waiting = false
	c.cancelDeadlineLocked()
	c.w.mu.Unlock()
	if waiting {
		select {
		case c.readCh <- struct{}{}:
		default:
		}
	}
}

func (c *conn) Write(b []byte) (int, error) {
	w := c.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.closed || w.stopping {
		return 0, net.ErrClosed
	}
	if c.rerr != nil {
		return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", syscall.EPIPE)}
	}
	c.wbuf = append(c.wbuf, b...)
	cmds, rest, err := parseCommands(c.wbuf)
	if err != nil {
		return 0, err
	}
	if len(rest) == 0 {
		c.wbuf = c.wbuf[:0] // the arguments were copied out: reuse the buffer
	} else {
		c.wbuf = append(c.wbuf[:0], rest...)
	}
	if len(cmds) == 0 {
		return len(b), nil
	}
	if now := w.now(); c.p.pausedUntil > now {
		// A paused process sends when it resumes (or at the heal): the send
		// is an event targeted at it, which the scheduler puts off.
		c.seq++
		w.scheduleFromLocked(now, c.src, c.seq, c.p, stepSend, func() {
			w.mu.Lock()
			c.sendLocked(cmds)
			w.mu.Unlock()
		})
		return len(b), nil
	}
	c.sendLocked(cmds)
	return len(b), nil
}

// sendLocked puts cmds on the wire now. The caller holds w.mu.
func (c *conn) sendLocked(cmds [][]string) {
	w := c.w
	sent := w.now()
	from, to := c.p.id, c.node.addr()
	at := max(sent+w.net.latency(c.rng, from, to, sent), c.lastUp)
	c.lastUp = at
	c.seq++
	ev := w.scheduleFromLocked(at, c.src, c.seq, nil, stepArrive, nil)
	ev.op, ev.c, ev.cmds = opArrive, c, cmds
	ev.link, ev.a, ev.b, ev.sent = true, from, to, sent
}

func (c *conn) Close() error {
	c.w.mu.Lock()
	c.closed = true
	c.w.mu.Unlock()
	return nil
}

// abort fails the connection for shutdown.
func (c *conn) abort() {
	c.w.mu.Lock()
	c.closed = true
	c.w.mu.Unlock()
	c.wakeReader()
}

func (c *conn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.w.mu.Lock()
	c.rdl = t
	c.w.mu.Unlock()
	return nil
}

// SetWriteDeadline is accepted; writes never block in the simulation (they
// are buffered like a socket's send buffer), so it never fires.
func (c *conn) SetWriteDeadline(t time.Time) error { return nil }

// deliverReply carries the node's reply bytes to the client.
func (c *conn) sendReply() {
	if c.out.Len() == 0 {
		return
	}
	data := append([]byte(nil), c.out.Bytes()...)
	c.out.Reset()
	w := c.w
	ev := w.net.deliverLink(w.net.rng, c.node.addr(), c.p.id, &c.lastDown, c.p, stepReply)
	ev.op, ev.c, ev.data = opReply, c, data
	w.mu.Unlock()
}

// deliverReply hands reply bytes that reached the client to its reader.
func (c *conn) deliverReply(data []byte) {
	c.w.mu.Lock()
	if c.closed {
		c.w.mu.Unlock()
		return
	}
	c.rbuf = append(c.rbuf, data...)
	c.w.mu.Unlock()
	c.wakeReader()
}

// sendReset tells the client its connection was reset by the node (crash,
// restart, failover kill). It arrives after the link's latency.
func (c *conn) sendReset() {
	if c.resetSent {
		return
	}
	c.resetSent = true
	c.w.net.deliver(c.w.net.rng, c.node.addr(), c.p.id, &c.lastDown, c.p, stepReset, func() {
		c.w.mu.Lock()
		if c.rerr == nil {
			c.rerr = c.resetErr()
		}
		c.w.mu.Unlock()
		c.wakeReader()
	})
}

// dial makes a connection from p to node i (or to p's idea of the primary
// of group -1-i when i < 0). It never fails: a refused connection shows as a reset on
// first use, in virtual time.
func (p *Proc) dial(i int) net.Conn {
	w := p.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if i < 0 {
		i = p.primary[-1-i]
	}
	var n *Node
	if i >= serviceIndex {
		n = w.services[i-serviceIndex]
	} else {
		n = w.nodes[i]
	}
	return p.connectLocked(n, i, "")
}

// connectLocked makes a connection from p to n, counted under key (its
// dials and its connections' sources are key's own; label, when set, names
// the key's stream apart from the plain client's). The caller holds w.mu.
func (p *Proc) connectLocked(n *Node, key int, label string) net.Conn {
	w := p.w
	p.dials[key]++
	w.stats.Dials++
	c := &conn{
		w:      w,
		p:      p,
		node:   n,
		src:    p.src | uint64(key+1)<<24 | uint64(p.dials[key]),
		epoch:  n.epoch,
		readCh: make(chan struct{}, 1),
	}
	c.rng = w.streams.Get("conn/" + p.name + "/" + n.name + "/" + label + itoa(p.dials[key]))
	c.bw = bufio.NewWriter(&c.out)
	c.peer = server.NewPeer(c.bw)
	// Keep only live connections (bounded by the number of nodes, plus
	// those closed since the last dial).
	p.conns = append(pruneClosed(p.conns), c)
	n.conns = append(pruneClosed(n.conns), c)
	return c
}

func itoa(i int) string {
	var b [20]byte
	pos := len(b)
	if i == 0 {
		return "0"
	}
	for i > 0 {
		pos--
		b[pos] = byte('0' + i%10)
		i /= 10
	}
	return string(b[pos:])
}

// newRedisClient builds a real go-redis v9 client for p and node i (i < 0:
// the primary of group -1-i as Sentinel tells p), with the options that keep it
// deterministic: RESP2, no CLIENT SETINFO, no maintenance notifications,
// one connection, no idle reaping, fixed retry backoff.
func newRedisClient(p *Proc, i int) *redis.Client {
	rc := p.w.cfg.Redis
	name := "primary"
	if i < -1 {
		name = "primary-" + groupName(-1-i)
	}
	switch {
	case i >= serviceIndex:
		name = p.w.services[i-serviceIndex].name
	case i >= 0:
		name = p.w.nodes[i].name
	}
	maxRetries := rc.MaxRetries
	if i >= serviceIndex {
		// The protected resource's client does not retry on its own: a
		// retried write whose first attempt applied would come back fenced
		// (or apply twice), and the client would record the wrong outcome.
		maxRetries = -1
	}
	return redis.NewClient(&redis.Options{
		Addr:                     name,
		Dialer:                   func(context.Context, string, string) (net.Conn, error) { return p.dial(i), nil },
		Protocol:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		// Room for every goroutine a client runs at once (a watchdog's
		// renewal during a release): a goroutine that must wait for a pool
		// turn takes a timer from go-redis's process-wide timer pool, which
		// may belong to another bubble (fatal in synctest). Connections are
		// dialled lazily, one per concurrent user, in deterministic order.
		PoolSize: 8,
		// go-redis gives every connection 32 KiB read and write buffers:
		// two thirds of what a world allocated. Commands and replies
		// here are a few hundred bytes; anything longer still passes
		// (bufio reads and writes it in pieces).
		ReadBufferSize:  4 << 10,
		WriteBufferSize: 4 << 10,
		MinIdleConns:    0,
		ConnMaxIdleTime: -1,
		DialTimeout:     rc.DialTimeout,
		ReadTimeout:     rc.ReadTimeout,
		WriteTimeout:    rc.WriteTimeout,
		MaxRetries:      maxRetries,
		MinRetryBackoff: rc.RetryBackoff,
		MaxRetryBackoff: rc.RetryBackoff,
		PoolTimeout:     rc.ReadTimeout + rc.DialTimeout,
	})
}

var errProtocol = errors.New("sim: malformed RESP request")

func pruneClosed(cs []*conn) []*conn {
	kept := cs[:0]
	for _, c := range cs {
		if !c.closed {
			kept = append(kept, c)
		}
	}
	for i := len(kept); i < len(cs); i++ {
		cs[i] = nil
	}
	return kept
}
