package realredis

import (
	"context"
	"fmt"
	"io"
	"log"
	"path"
	"slices"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/internal/realarm/realcoord"
	"github.com/locksim/locksim/sim"
)

// watchSessions records, from the servers' side, when a holder's session
// (ZooKeeper) or lease (etcd) expired: a watcher of the harness's own,
// connected straight to the members (no proxy: the scenario's partitions
// never cut it), sees the lock's nodes or keys go; a holder's node deleted
// while its holder had not called release went with its session or lease.
// It records a zk-expire event as the holder at the time the watcher
// heard of it (the story tells it: run/explain.go). The simulator records
// the same kind from its leader; the holder itself learns of it only when
// it reconnects, after the run's story is over.
func (w *world) watchSessions() {
	if w.coord == nil {
		return
	}
	var addrs []string
	for _, m := range w.coord.ens.Members {
		addrs = append(addrs, m.Addr())
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.goroutines.Add(1)
	go func() {
		defer w.goroutines.Done()
		defer w.expiries()
		defer cancel()
		go func() {
			select {
			case <-w.stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		root := "/locks/" + w.job.Parts.Workload.Key
		if w.coord.ens.Kind == realcoord.Etcd {
			w.goroutines.Add(1)
			go func() { defer w.goroutines.Done(); w.watchLeaders(ctx) }() // consensus_leader.go
			w.watchEtcd(ctx, addrs, root+"/")
			return
		}
		w.watchZK(ctx, addrs, root)
	}()
}

// goneNode is a node or key the watcher saw go, and when.
type goneNode struct {
	t          int64
	name, what string
}

// gone notes that a node or key (its full name) went at true time now;
// expiries decides at the run's end which were a holder's session.
func (w *world) gone(name, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.coord.gone) >= maxGone {
		w.coord.goneCapped = true // expiries says so
		return
	}
	w.coord.gone = append(w.coord.gone, goneNode{t: w.now(), name: name, what: what})
}

// maxGone bounds the nodes or keys the watcher keeps (one a hold at most:
// a real run of minutes makes thousands); past it, later expiries are not
// told as zk-expire events (coord.goneCapped records that it happened).
const maxGone = 100_000

// expiries adds a zk-expire event for every node or key that went while
// a client held it and had not called release on it (its session or
// lease expired), at the time the watcher saw it go, as the holder. The
// hold is the first acquire of that name after its last release call
// before it went, if that acquire was called before it went: its ok may
// be recorded after (a client paused inside Acquire at after-check), so
// this runs once the clients have returned. An etcd key's name is its
// session's lease, the same for every hold of one session; a ZooKeeper
// node's is new each time.
func (w *world) expiries() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range w.coord.gone {
		released := int64(-1)
		for _, e := range w.events {
			if e.Detail == g.name && e.Kind == event.KindCall && e.Op == event.OpRelease && e.T < g.t {
				released = max(released, e.T)
			}
		}
		var ok *sim.Event
		for i, e := range w.events {
			if e.Detail == g.name && e.Kind == event.KindOK && e.Op == event.OpAcquire && e.T > released {
				ok = &w.events[i]
				break
			}
		}
		if ok == nil || !w.calledBefore(ok, g.t) {
			continue
		}
		ev := sim.Event{T: g.t, Proc: ok.Proc, Kind: event.KindZKExpire,
			Detail: fmt.Sprintf("%s: the servers deleted its %s without a release", g.what, path.Base(g.name))}
		i := sort.Search(len(w.events), func(i int) bool { return w.events[i].T > ev.T })
		w.events = slices.Insert(w.events, i, ev)
	}
}

// calledBefore reports whether the call of ok's operation was made
// before t.
func (w *world) calledBefore(ok *sim.Event, t int64) bool {
	for _, e := range w.events {
		if e.Proc == ok.Proc && e.OpID == ok.OpID && e.Kind == event.KindCall {
			return e.T < t
		}
	}
	return false
}

// watchZK lists the lock's children on every change, from a session of
// its own (20 ticks: the longest the servers allow).
func (w *world) watchZK(ctx context.Context, addrs []string, parent string) {
	c, _, err := zk.Connect(addrs, 20*w.coord.ens.SessionTimeout, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		return
	}
	defer c.Close()
	go func() { <-ctx.Done(); c.Close() }() // a request in flight returns at the run's end
	var prev []string
	for ctx.Err() == nil {
		kids, _, ch, err := c.ChildrenW(parent)
		if err != nil {
			// No parent yet, or no quorum now: look again shortly.
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		for _, k := range prev {
			if !slices.Contains(kids, k) {
				w.gone(parent+"/"+k, "session expired")
			}
		}
		prev = kids
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// watchEtcd watches the lock's prefix; a key deleted without its
// holder's release went with its lease.
func (w *world) watchEtcd(ctx context.Context, addrs []string, prefix string) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: addrs, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return
	}
	defer cli.Close()
	for ctx.Err() == nil {
		for resp := range cli.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix()) {
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypeDelete {
					w.gone(string(ev.Kv.Key), "lease expired")
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
