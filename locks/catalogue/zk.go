package catalogue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/clock"
	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:        "zk-lock",
		Design:    "ZooKeeper's lock recipe on a 3-member raft-replicated store (package zk): a session kept alive by heartbeats (timeout 3 s, one every 1 s), an ephemeral sequential node under the lock's path, the lowest node holds; the others wait for their predecessor to go (by polling EXISTS every 50 ms: the simulator delivers no watches), release deletes the node",
		Source:    "“Redis and ZooKeeper locks” (CSDN) and “Practice: a Redis lock” (Tencent Cloud) (ZooKeeper's ephemeral sequential nodes, a watch on the predecessor); Apache Curator InterProcessMutex; Kleppmann: use ZooKeeper",
		Weakness:  "the store is consensus-backed, but the holder learns nothing when its session expires: a holder paused longer than the session timeout loses its node, the next waiter takes the lock, and the paused holder resumes inside its critical section (no fencing token reaches the storage)",
		Topology:  locks.Consensus,
		Real:      "zookeeper",
		Params:    zkParams(),
		Configure: configureZK(false),
	})
	Register(locks.Info{
		ID:        "zk-fencing",
		Design:    "zk-lock, and the holder passes its node's creation revision (the raft index of the entry that created it: ZooKeeper's czxid) to the storage as its fencing token; the storage rejects a token lower than the highest it has seen",
		Source:    "Kleppmann, \"How to do distributed locking\" (use ZooKeeper, the zxid as the fencing token)",
		Weakness:  "none for writes the storage checks: consensus mints the token, so it never repeats or goes back; the session can still expire under a paused holder (overlaps of belief happen, stale writes are refused)",
		Topology:  locks.Consensus,
		Fencing:   locks.FenceMaxToken,
		Real:      "zookeeper",
		Params:    zkParams(),
		Configure: configureZK(true),
	})
}

// zkParams is the zk designs' table: the session timeout (the lease),
// the wait for the predecessor and the simulator's poll of it.
func zkParams() []locks.Param {
	return []locks.Param{
		durParam("ttl", 3*time.Second, true, "the session timeout: a session without a heartbeat for this long expires, and its ephemeral node with it"),
		durParam("wait", 5*time.Second, true, "give up waiting for the predecessor after this"),
		durParam("poll", 50*time.Millisecond, true, "the simulator's poll of the predecessor (real ZooKeeper watches it)"),
	}
}

func configureZK(fenced bool) func(locks.Values) (locks.Configured, error) {
	return func(v locks.Values) (locks.Configured, error) {
		ttl, wait, poll := v.Duration("ttl"), v.Duration("wait"), v.Duration("poll")
		return locks.Configured{TTL: ttl, New: func(env locks.Env) (locks.Lock, error) {
			if env.Members != nil {
				// The real arm: real ZooKeeper servers (zkreal.go).
				return &RealZKLock{Env: env, Fenced: fenced, SessionTimeout: ttl, Wait: wait}, nil
			}
			if len(env.Coord) == 0 {
				return nil, errors.New("zk-lock needs a coordination service (topology consensus)")
			}
			return &ZKLock{Env: env, Fenced: fenced, SessionTimeout: ttl, Wait: wait, Poll: poll}, nil
		}}, nil
	}
}

// ZKClient sends RESP commands to a coordination service's members: it
// keeps to one member while that answers, and moves to the next when one
// answers NOTLEADER or fails, sleeping Backoff between tries.
type ZKClient struct {
	Members []*redis.Client
	Clock   clock.Clock
	Tries   int           // per call; 3 rounds of the members when 0
	Backoff time.Duration // 50 ms when 0
	cur     int
}

// ErrSessionExpired is the service's answer for a session it no longer has.
var ErrSessionExpired = errors.New("zk: session expired")

// ErrNoLeader: every try was answered NOTLEADER, so the command was never
// proposed (a definite failure, unlike a timeout).
var ErrNoLeader = errors.New("zk: no member knew a leader")

// ErrGone is the service's answer to a create whose tag's node was
// already deleted (a late retry).
var ErrGone = errors.New("zk: node of this tag was deleted")

// Do runs one command, retrying on another member when the outcome is a
// transport error or NOTLEADER; ErrSessionExpired and other server errors
// return at once.
func (c *ZKClient) Do(ctx context.Context, args ...any) (any, error) {
	tries := c.Tries
	if tries == 0 {
		tries = 3 * len(c.Members)
	}
	backoff := c.Backoff
	if backoff == 0 {
		backoff = 50 * time.Millisecond
	}
	var last error
	definite := true // every failure so far was NOTLEADER
	for try := 0; try < tries; try++ {
		if try > 0 {
			c.Clock.Sleep(backoff)
		}
		v, err := c.Members[c.cur].Do(ctx, args...).Result()
		if err == nil {
			return v, nil
		}
		msg := err.Error()
		switch {
		case strings.HasPrefix(msg, "SESSIONEXPIRED"):
			return nil, ErrSessionExpired
		case strings.HasPrefix(msg, "GONE"):
			return nil, ErrGone
		case strings.HasPrefix(msg, "ERR"):
			return nil, err
		}
		last = err
		definite = definite && strings.HasPrefix(msg, "NOTLEADER")
		c.cur = (c.cur + 1) % len(c.Members)
	}
	if definite {
		return nil, fmt.Errorf("%w: %v", ErrNoLeader, last)
	}
	return nil, last
}

// ZKLock is ZooKeeper's lock recipe (Curator's InterProcessMutex, seeds
// 003 and 004):
//
//	ZK.SESSION 3000                          once per session (then ZK.HEARTBEAT sid every 1 s, from a goroutine started with Env.Go)
//	ZK.CREATE /locks/<key> sid <tag>         an ephemeral sequential node; the tag makes a retried create find its node
//	ZK.CHILDREN /locks/<key>                 lowest node holds
//	ZK.EXISTS <predecessor>                  every Poll until it is gone (ZooKeeper would watch it), then list again
//	ZK.DELETE <node>                         release (and on giving up after Wait)
//
// The lease has no validity: the holder believes it holds until it
// releases (ZooKeeper tells a client its session expired only when it
// talks to the service again, and the recipe does not stop the holder).
// With Fenced, the node's creation revision is the lease's fencing token.
type ZKLock struct {
	Env            locks.Env
	Fenced         bool
	SessionTimeout time.Duration
	Wait           time.Duration // give up waiting for the predecessor after this
	Poll           time.Duration

	c       *ZKClient
	session atomic.Int64 // 0: none (or expired)
	tags    int
}

func (l *ZKLock) client() *ZKClient {
	if l.c == nil {
		l.c = &ZKClient{Members: l.Env.Coord, Clock: l.Env.Clock}
	}
	return l.c
}

// ensureSession returns the live session, opening one (and its heartbeat)
// when there is none.
func (l *ZKLock) ensureSession(ctx context.Context) (int64, error) {
	if sid := l.session.Load(); sid != 0 {
		return sid, nil
	}
	v, err := l.client().Do(ctx, "ZK.SESSION", l.SessionTimeout.Milliseconds())
	if err != nil {
		return 0, err
	}
	sid, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("zk: session reply %v", v)
	}
	l.session.Store(sid)
	hb := &ZKClient{Members: l.Env.Coord, Clock: l.Env.Clock, cur: int(sid) % len(l.Env.Coord)}
	l.Env.Go(func() { l.heartbeat(ctx, hb, sid) })
	return sid, nil
}

// heartbeat keeps session sid alive until the service says it expired.
// When the run ends, Env.Clock.Sleep does not return.
func (l *ZKLock) heartbeat(ctx context.Context, c *ZKClient, sid int64) {
	for {
		l.Env.Clock.Sleep(l.SessionTimeout / 3)
		if _, err := c.Do(ctx, "ZK.HEARTBEAT", sid); errors.Is(err, ErrSessionExpired) {
			l.session.CompareAndSwap(sid, 0)
			return
		}
	}
}

func (l *ZKLock) parent() string { return "/locks/" + l.Env.Key }

// Acquire implements Lock.
func (l *ZKLock) Acquire(ctx context.Context) (locks.Lease, error) {
	env := l.Env
	c := l.client()
	start := env.Clock.Now()
	sid, err := l.ensureSession(ctx)
	if err != nil {
		// No session, no node: whatever happened, this client holds
		// nothing (a session a timed-out try opened expires unused).
		return locks.Lease{}, locks.ErrNotAcquired
	}
	l.tags++
	tag := fmt.Sprintf("%s-%d", env.Client, l.tags)
	v, err := c.Do(ctx, "ZK.CREATE", l.parent(), sid, tag)
	env.At(locks.PointAcquiring)
	if errors.Is(err, ErrSessionExpired) {
		l.session.CompareAndSwap(sid, 0)
		return locks.Lease{}, locks.ErrNotAcquired
	}
	if errors.Is(err, ErrGone) || errors.Is(err, ErrNoLeader) {
		return locks.Lease{}, locks.ErrNotAcquired
	}
	if err != nil {
		// The create may have happened: find the node by its tag and
		// delete it, in the background (Curator's protected mode).
		l.guaranteedDelete(ctx, sid, tag, "")
		return locks.Lease{}, err
	}
	created, ok := v.([]any)
	if !ok || len(created) != 2 {
		return locks.Lease{}, fmt.Errorf("zk: create reply %v", v)
	}
	node, _ := created[0].(string)
	czxid, _ := created[1].(int64)
	mine := strings.TrimPrefix(node, l.parent()+"/")
	giveUp := func(err error) (locks.Lease, error) {
		if _, derr := c.Do(ctx, "ZK.DELETE", node); derr != nil && !errors.Is(derr, ErrSessionExpired) {
			l.guaranteedDelete(ctx, sid, tag, node)
		}
		return locks.Lease{}, err
	}
	for {
		v, err := c.Do(ctx, "ZK.CHILDREN", l.parent())
		if err != nil {
			return giveUp(err)
		}
		kids, _ := v.([]any)
		pred := ""
		found := false
		for _, k := range kids {
			name, _ := k.(string)
			if name == mine {
				found = true
				break
			}
			pred = name
		}
		if !found {
			// Our node is gone: the session expired while we waited.
			l.session.CompareAndSwap(sid, 0)
			return locks.Lease{}, locks.ErrNotAcquired
		}
		if pred == "" {
			env.At(locks.PointAfterCheck)
			lease := locks.Lease{Value: node, Start: start, Handle: zkNode{sid: sid, tag: tag}}
			if l.Fenced {
				lease.FencingToken = czxid
			}
			return lease, nil
		}
		for {
			if env.Clock.Now().Sub(start) > l.Wait {
				return giveUp(locks.ErrNotAcquired)
			}
			env.Clock.Sleep(l.Poll)
			v, err := c.Do(ctx, "ZK.EXISTS", l.parent()+"/"+pred)
			if err != nil {
				return giveUp(err)
			}
			if n, _ := v.(int64); n == 0 {
				break
			}
		}
	}
}

type zkNode struct {
	sid int64
	tag string
}

// guaranteedDelete deletes the node of session sid made with tag (node,
// when known, is its path) from a goroutine that retries until the
// service answers (Curator's guaranteed delete): a node left behind by a
// failed release or acquire would otherwise hold every waiter back for as
// long as the session's heartbeats keep it alive. Finding the node by tag
// is a create with the same tag (it returns the node if it exists); then
// delete it. An expired session took the node with it.
func (l *ZKLock) guaranteedDelete(ctx context.Context, sid int64, tag, node string) {
	c := &ZKClient{Members: l.Env.Coord, Clock: l.Env.Clock, cur: l.client().cur}
	l.Env.Go(func() {
		for try := 0; try < 100; try++ {
			if try > 0 {
				l.Env.Clock.Sleep(l.Poll)
			}
			if node == "" {
				v, err := c.Do(ctx, "ZK.CREATE", l.parent(), sid, tag)
				if errors.Is(err, ErrSessionExpired) || errors.Is(err, ErrGone) {
					return
				}
				r, ok := v.([]any)
				if err != nil || !ok || len(r) != 2 {
					continue
				}
				node, _ = r[0].(string)
			}
			if _, err := c.Do(ctx, "ZK.DELETE", node); err == nil || errors.Is(err, ErrSessionExpired) {
				return
			}
		}
	})
}

// Release implements Lock: delete the node (on an unknown outcome, keep
// deleting it in the background).
func (l *ZKLock) Release(ctx context.Context, lease locks.Lease) error {
	v, err := l.client().Do(ctx, "ZK.DELETE", lease.Value)
	if err != nil {
		if n, ok := lease.Handle.(zkNode); ok && !errors.Is(err, ErrSessionExpired) {
			l.guaranteedDelete(ctx, n.sid, n.tag, lease.Value)
		}
		return err
	}
	if n, _ := v.(int64); n == 0 {
		return locks.ErrNotOwner
	}
	return nil
}
