package catalogue

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locksim/locksim/locks"
)

// RealZKLock is zk-lock (and zk-fencing) on the real arm: ZooKeeper's lock
// recipe against real ZooKeeper servers with the Go client
// github.com/go-zookeeper/zk, as ZooKeeper's recipes page writes it:
//
//	create <parent>/_c_<guid>-lock- ephemeral sequential (protected: after an error the node is found by its GUID)
//	children <parent>; the lowest sequence number holds
//	otherwise exists+watch on the next-lower node, wait for its event, list again
//	delete the node to release; a delete that fails is retried in the background (guaranteed delete)
//
// One connection (one session) per process; the client library pings the
// session and, after an expiry, opens a new session on its own (the
// ephemeral node is gone with the old one). The holder gets no signal that
// its session expired: like the simulated store's zk-lock, the lease has no
// validity and is believed until release. With Fenced, the node's czxid is
// the token.
type RealZKLock struct {
	Env            locks.Env
	Fenced         bool
	SessionTimeout time.Duration
	Wait           time.Duration

	mu   sync.Mutex
	conn *zk.Conn
}

var zkACL = zk.WorldACL(zk.PermAll)

func (l *RealZKLock) client(ctx context.Context) (*zk.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		return l.conn, nil
	}
	dial := l.Env.Members.Dial
	c, _, err := zk.Connect(l.Env.Members.Addrs, l.SessionTimeout,
		zk.WithLogger(log.New(io.Discard, "", 0)),
		zk.WithDialer(func(network, addr string, timeout time.Duration) (net.Conn, error) {
			dctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return dial(dctx, network, addr)
		}))
	if err != nil {
		return nil, err
	}
	l.conn = c
	go func() { <-ctx.Done(); c.Close() }() // the run's end closes it
	return c, nil
}

func (l *RealZKLock) parent() string { return "/locks/" + l.Env.Key }

// ensureParent creates /locks and the lock's parent node if absent.
func ensureParent(c *zk.Conn, path string) error {
	p := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		p += "/" + part
		if _, err := c.Create(p, nil, 0, zkACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// seq is a sequential node's sequence number (its last 10 digits).
func seq(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

// Acquire implements Lock.
func (l *RealZKLock) Acquire(ctx context.Context) (locks.Lease, error) {
	env := l.Env
	start := env.Clock.Now()
	c, err := l.client(ctx)
	if err != nil {
		return locks.Lease{}, err
	}
	if err := ensureParent(c, l.parent()); err != nil {
		return locks.Lease{}, locks.ErrNotAcquired
	}
	// A protected create (Curator's): the node's name carries a GUID, so
	// that after an error the client can find the node if the create did
	// happen, and delete it: a node left behind would hold every waiter
	// back for as long as this session lives.
	guid := randomValue(env.Rand)
	node, err := c.Create(l.parent()+"/_c_"+guid+"-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zkACL)
	env.At(locks.PointAcquiring)
	if err != nil {
		l.guaranteedDelete(ctx, c, guid, "")
		return locks.Lease{}, locks.ErrNotAcquired
	}
	mine := strings.TrimPrefix(node, l.parent()+"/")
	deadline := time.Now().Add(l.Wait)
	giveUp := func(err error) (locks.Lease, error) {
		if derr := c.Delete(node, -1); derr != nil && !errors.Is(derr, zk.ErrNoNode) {
			l.guaranteedDelete(ctx, c, guid, node)
		}
		return locks.Lease{}, err
	}
	for {
		kids, _, err := c.Children(l.parent())
		if err != nil {
			return giveUp(locks.ErrNotAcquired)
		}
		sort.Slice(kids, func(a, b int) bool { return seq(kids[a]) < seq(kids[b]) })
		pred, found := "", false
		for _, k := range kids {
			if k == mine {
				found = true
				break
			}
			pred = k
		}
		if !found {
			return locks.Lease{}, locks.ErrNotAcquired // the session expired while we waited
		}
		if pred == "" {
			lease := locks.Lease{Value: node, Start: start, Handle: guid}
			if l.Fenced {
				_, st, err := c.Get(node)
				if err != nil {
					return giveUp(locks.ErrNotAcquired)
				}
				lease.FencingToken = st.Czxid
			}
			env.At(locks.PointAfterCheck)
			return lease, nil
		}
		ok, _, ch, err := c.ExistsW(l.parent() + "/" + pred)
		if err != nil {
			return giveUp(locks.ErrNotAcquired)
		}
		if !ok {
			continue
		}
		left := time.Until(deadline)
		if left <= 0 {
			return giveUp(locks.ErrNotAcquired)
		}
		t := time.NewTimer(left)
		select {
		case <-ch:
			t.Stop()
		case <-t.C:
			return giveUp(locks.ErrNotAcquired)
		case <-ctx.Done():
			t.Stop()
			return locks.Lease{}, ctx.Err()
		}
	}
}

// Release implements Lock: delete the node (ErrNotOwner when it is gone:
// the session expired).
func (l *RealZKLock) Release(ctx context.Context, lease locks.Lease) error {
	c, err := l.client(ctx)
	if err != nil {
		return err
	}
	err = c.Delete(lease.Value, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return locks.ErrNotOwner
	}
	if err != nil {
		guid, _ := lease.Handle.(string)
		l.guaranteedDelete(ctx, c, guid, lease.Value)
	}
	return err
}

// guaranteedDelete deletes this client's node (node, or when "" the
// child whose name carries guid) from a goroutine that retries until
// ZooKeeper answers (Curator's guaranteed delete), or the run ends.
func (l *RealZKLock) guaranteedDelete(ctx context.Context, c *zk.Conn, guid, node string) {
	l.Env.Go(func() {
		for try := 0; ctx.Err() == nil; try++ {
			if try > 0 {
				t := time.NewTimer(l.SessionTimeout / 10)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
			}
			if node == "" {
				// The create's answer was lost: the member this session
				// reconnected to may not have applied it yet, and a list
				// that lacks the node would leave it behind, owned by a
				// live session, ahead of every waiter. A sync first
				// brings the member up to the leader (ZooKeeper's
				// programmer's guide: sync, then read).
				if _, err := c.Sync(l.parent()); err != nil {
					continue
				}
				kids, _, err := c.Children(l.parent())
				if err != nil {
					continue
				}
				for _, k := range kids {
					if strings.HasPrefix(k, "_c_"+guid+"-") {
						node = l.parent() + "/" + k
					}
				}
				if node == "" {
					return // the create did not happen (or the session took it)
				}
			}
			if err := c.Delete(node, -1); err == nil || errors.Is(err, zk.ErrNoNode) {
				return
			}
		}
	})
}
