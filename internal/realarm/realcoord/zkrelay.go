package realcoord

import (
	"io"
	"net"
	"sync"
	"time"
)

// A ZooKeeper follower that finds its leader's quorum port closed (the
// leader is elected but has not bound it yet, or is restarting) retries
// the connect until initLimit ticks have passed (ZooKeeper 3.8's
// Learner.LeaderConnector: sleep leaderConnectDelayDuringRetryMs, 100 ms,
// and try again). The real arm's per-link proxies (toxiproxy) always
// accept, then dial the member and, when that is refused, close the
// accepted connection: the follower sees its leader close the link in
// registerWithLeader (EOFException, or a reset), leaves FOLLOWING for a
// new election, and the leader waits initLimit ticks for followers that
// never come (measured, member-crashes × zk-lock at a 1 s TTL:
// 16.7 s with no quorum, the whole liveness phase; docs/FINDINGS.md,
// the consensus tables' "Fourth table"; docs/PARITY.md section 7).
//
// A relay sits between such a proxy and a member's quorum port and
// turns a refused dial into the wait a real network gives ZooKeeper: it
// accepts, dials the member every retryEvery until it answers or patience
// has passed (then closes, as the proxy did), and copies both ways.

// relay forwards connections from its listener to upstream, retrying a
// dial that fails for up to patience.
type relay struct {
	ln       net.Listener
	upstream string
	patience time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
	done   chan struct{}
}

// retryEvery is the relay's pause between dials (ZooKeeper's own
// leaderConnectDelayDuringRetryMs default).
const retryEvery = 100 * time.Millisecond

// newRelay listens on ip at a free port in front of upstream.
func newRelay(ip, upstream string, patience time.Duration) (*relay, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, upstream: upstream, patience: patience, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

// Addr is the address the relay listens on.
func (r *relay) Addr() string { return r.ln.Addr().String() }

func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

func (r *relay) serve() {
	defer r.wg.Done()
	for {
		a, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		if !r.track(a) {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.untrack(a)
			b := r.dial()
			if b == nil {
				return // refused for patience: close, as a proxy does
			}
			if !r.track(b) {
				return
			}
			defer r.untrack(b)
			var pipes sync.WaitGroup
			pipes.Add(2)
			pipe := func(dst, src net.Conn) {
				defer pipes.Done()
				_, _ = io.Copy(dst, src)
				// one direction ended: end both (a member's link is
				// one conversation)
				dst.Close()
				src.Close()
			}
			go pipe(a, b)
			go pipe(b, a)
			pipes.Wait()
		}()
	}
}

// dial dials upstream until it answers or patience has passed (nil).
func (r *relay) dial() net.Conn {
	deadline := time.Now().Add(r.patience)
	for {
		c, err := net.DialTimeout("tcp", r.upstream, time.Second)
		if err == nil {
			return c
		}
		if time.Now().Add(retryEvery).After(deadline) {
			return nil
		}
		select {
		case <-r.done:
			return nil
		case <-time.After(retryEvery):
		}
	}
}

// Close stops the relay and closes every connection through it; it
// returns once its goroutines are gone.
func (r *relay) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.done)
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.ln.Close()
	r.wg.Wait()
}
