package realcoord

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"
)

// etcd's members must agree on one peer URL per member (the member IDs,
// and from them the cluster ID, are hashed from the URLs), so the
// per-link proxies ZooKeeper's members use (each server's zoo.cfg names
// the others by addresses of its own) cannot be had. Instead each etcd
// member's advertised peer URL is one proxy of the ensemble's own, in
// front of its real peer listener, and the proxy tells which member
// dialled each connection it accepts by the dialling socket's owner
// (connOwner): every member dials from 127.0.0.1. A cut link's
// connections are closed when the cut starts and new ones are closed as
// they are accepted, in both directions; the members' raft streams,
// pipelines, snapshots, probes and lease-renewal forwarding all go
// through these connections (etcd 3.4: rafthttp's stream reader and
// pipeline, lease/leasehttp's RenewHTTP over the peer round tripper).

// PeerStats counts what the peer proxies did.
type PeerStats struct {
	Accepted     int // connections accepted and attributed to a member
	Refused      int // accepted while their link was cut: closed at once
	Severed      int // open when their link's cut began: closed
	Unattributed int // no member's socket (passed through unless a link into its member is cut: see serve)
}

type peerConn struct {
	from, to int
	a, b     net.Conn // accepted, upstream
}

type peerNet struct {
	pids    func() []int // the members' process ids now (0: down)
	mu      sync.Mutex
	lns     []net.Listener
	conns   map[*peerConn]struct{}
	cut     map[[2]int]int // cuts in force of the link {lo, hi}
	stats   PeerStats
	closed  bool
	serving sync.WaitGroup
}

func link(a, b int) [2]int { return [2]int{min(a, b), max(a, b)} }

// cutInto reports whether some link into member to is cut (pn.mu held).
func (pn *peerNet) cutInto(to int) bool {
	for l, n := range pn.cut {
		if n > 0 && (l[0] == to || l[1] == to) {
			return true
		}
	}
	return false
}

// startPeerProxies listens on each member's IP at a free port (its
// PeerProxy), in front of its Peer port.
func (e *Ensemble) startPeerProxies() error {
	pn := &peerNet{conns: map[*peerConn]struct{}{}, cut: map[[2]int]int{}, pids: e.pids}
	e.peers = pn
	for i, m := range e.Members {
		ln, err := net.Listen("tcp", net.JoinHostPort(m.IP, "0"))
		if err != nil {
			return fmt.Errorf("%s: peer proxy on %s: %w", m.Name, m.IP, err)
		}
		m.PeerProxy = ln.Addr().(*net.TCPAddr).Port
		pn.lns = append(pn.lns, ln)
		upstream := net.JoinHostPort(m.IP, strconv.Itoa(m.Peer))
		pn.serving.Add(1)
		go pn.accept(ln, i, upstream)
	}
	return nil
}

// pids is each member's process id (0 when it is down).
func (e *Ensemble) pids() []int {
	out := make([]int, len(e.Members))
	for i, m := range e.Members {
		m.mu.Lock()
		if m.cmd != nil && m.cmd.Process != nil {
			out[i] = m.cmd.Process.Pid
		}
		m.mu.Unlock()
	}
	return out
}

func (pn *peerNet) accept(ln net.Listener, to int, upstream string) {
	defer pn.serving.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		pn.serving.Add(1)
		go pn.serve(c, to, upstream)
	}
}

// serve attributes an accepted connection to the member that dialled it
// and pipes it to upstream unless its link is cut. A connection no
// member owns (its dialler closed it already, or the lookup failed) is
// counted (the tests require none) and passed through only while no link
// into its member is cut: a cut must not leak through a connection the
// proxy cannot place (this may refuse one from a member not cut off).
func (pn *peerNet) serve(c net.Conn, to int, upstream string) {
	defer pn.serving.Done()
	from := -1
	if la, ra, ok := addrPorts(c); ok {
		from, _ = connOwner(ra, la, pn.pids())
	}
	pn.mu.Lock()
	switch {
	case pn.closed:
		pn.mu.Unlock()
		c.Close()
		return
	case from < 0 && pn.cutInto(to):
		pn.stats.Unattributed++
		pn.stats.Refused++
		pn.mu.Unlock()
		c.Close()
		return
	case from < 0:
		pn.stats.Unattributed++
	case pn.cut[link(from, to)] > 0:
		pn.stats.Refused++
		pn.mu.Unlock()
		c.Close()
		return
	default:
		pn.stats.Accepted++
	}
	pn.mu.Unlock()

	u, err := net.DialTimeout("tcp", upstream, time.Second)
	if err != nil {
		c.Close()
		return // the member is down: the dialler sees its connection close
	}
	pc := &peerConn{from: from, to: to, a: c, b: u}
	pn.mu.Lock()
	if pn.closed || (from >= 0 && pn.cut[link(from, to)] > 0) || (from < 0 && pn.cutInto(to)) {
		pn.mu.Unlock() // cut (or closed) while dialling
		c.Close()
		u.Close()
		return
	}
	pn.conns[pc] = struct{}{}
	pn.mu.Unlock()

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	<-done
	c.Close()
	u.Close()
	pn.mu.Lock()
	delete(pn.conns, pc)
	pn.mu.Unlock()
}

func addrPorts(c net.Conn) (local, remote netip.AddrPort, ok bool) {
	la, ok1 := c.LocalAddr().(*net.TCPAddr)
	ra, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return local, remote, false
	}
	return la.AddrPort(), ra.AddrPort(), true
}

// cutLinks cuts every link in pairs (both directions) until the returned
// heal is called; cuts of one link combine.
func (pn *peerNet) cutLinks(pairs [][2]int) (heal func()) {
	var links [][2]int
	for _, p := range pairs {
		if l := link(p[0], p[1]); p[0] != p[1] && !slices.Contains(links, l) {
			links = append(links, l)
		}
	}
	var sever []*peerConn
	pn.mu.Lock()
	for _, l := range links {
		pn.cut[l]++
	}
	for pc := range pn.conns {
		if (pc.from >= 0 && slices.Contains(links, link(pc.from, pc.to))) || (pc.from < 0 && pn.cutInto(pc.to)) {
			sever = append(sever, pc)
		}
	}
	pn.stats.Severed += len(sever)
	pn.mu.Unlock()
	for _, pc := range sever {
		pc.a.Close() // its pipes end and serve drops it
		pc.b.Close()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pn.mu.Lock()
			for _, l := range links {
				if pn.cut[l]--; pn.cut[l] <= 0 {
					delete(pn.cut, l)
				}
			}
			pn.mu.Unlock()
		})
	}
}

// close stops the proxies and closes every connection, and waits until
// every goroutine of theirs has returned.
func (pn *peerNet) close() {
	pn.mu.Lock()
	if pn.closed {
		pn.mu.Unlock()
		return
	}
	pn.closed = true
	for _, ln := range pn.lns {
		ln.Close()
	}
	for pc := range pn.conns {
		pc.a.Close()
		pc.b.Close()
	}
	pn.mu.Unlock()
	pn.serving.Wait()
}

// CutPeers cuts the peer links between the named members (each pair
// both ways) until heal is called: etcd only, started with peer proxies
// (StartWith with a PeerFunc). Names are the members' (zk0, zk1, zk2).
func (e *Ensemble) CutPeers(pairs [][2]string) (heal func(), err error) {
	if e.peers == nil {
		return nil, errors.New("this ensemble's peer links run through no proxy of the ensemble's (etcd started without peer proxies, or ZooKeeper: cut its links through the caller's PeerFunc)")
	}
	var idx [][2]int
	for _, p := range pairs {
		a, b := e.member(p[0]), e.member(p[1])
		if a < 0 || b < 0 {
			return nil, fmt.Errorf("cut %s<->%s: no such member (members: zk0, zk1, zk2)", p[0], p[1])
		}
		idx = append(idx, [2]int{a, b})
	}
	return e.peers.cutLinks(idx), nil
}

// PeerStats is what the peer proxies did so far (zero without them).
func (e *Ensemble) PeerStats() PeerStats {
	if e.peers == nil {
		return PeerStats{}
	}
	e.peers.mu.Lock()
	defer e.peers.mu.Unlock()
	return e.peers.stats
}

// HasPeerProxies reports whether CutPeers can cut this ensemble's links.
func (e *Ensemble) HasPeerProxies() bool { return e.peers != nil }

func (e *Ensemble) member(name string) int {
	for i, m := range e.Members {
		if m.Name == name {
			return i
		}
	}
	return -1
}
