package catalogue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/locksim/locksim/locks"
)

// etcdRealOnly is why the simulator does not run the etcd designs.
const etcdRealOnly = "real arm only (--backend real): the simulator's coordination service is ZooKeeper-like (sessions, sequential nodes); the etcd designs run etcd's own concurrency package against three real etcd members"

func init() {
	Register(locks.Info{
		ID:        "etcd-mutex",
		Design:    "etcd's own concurrency.Mutex (go.etcd.io/etcd/client/v3) on a concurrency.Session whose lease is the lock's TTL (kept alive by the client's keepalive goroutine): the holder's key <prefix>/<lease> is the one with the lowest create revision; waiters watch the next-lower key; release deletes the key",
		Source:    "etcd concurrency package docs; Jepsen, \"etcd 3.4.3\" (2020): etcd locks are unsafe under process pauses without fencing",
		Weakness:  "a holder paused longer than the lease loses its key (its keepalive stops with it), the next waiter takes the lock, and the paused holder resumes inside its section: Mutex gives no signal (Jepsen 3.4.3)",
		Topology:  locks.Consensus,
		Real:      "etcd",
		RealOnly:  etcdRealOnly,
		Params:    etcdParams(),
		Configure: configureEtcd(false),
	})
	Register(locks.Info{
		ID:        "etcd-fencing",
		Design:    "etcd-mutex, and the holder passes its lock key's create revision to the storage as its fencing token; the storage rejects a token lower than the highest it has seen",
		Source:    "Jepsen, \"etcd 3.4.3\" (2020): the lock key's revision as a fencing token; Kleppmann, \"How to do distributed locking\"",
		Weakness:  "none for writes the storage checks: the revision is minted by raft and only grows; the lease can still expire under a paused holder (overlaps of belief, stale writes refused)",
		Topology:  locks.Consensus,
		Fencing:   locks.FenceMaxToken,
		Real:      "etcd",
		RealOnly:  etcdRealOnly,
		Params:    etcdParams(),
		Configure: configureEtcd(true),
	})
}

// etcdParams is the etcd designs' table: the session's lease (whole
// seconds on the server: LeaseSeconds) and the wait for the lock.
func etcdParams() []locks.Param {
	return []locks.Param{
		durParam("ttl", 3*time.Second, true, "the session's lease (etcd grants whole seconds: rounded up)"),
		durParam("wait", 5*time.Second, true, "give up waiting for the lock after this"),
	}
}

func configureEtcd(fenced bool) func(locks.Values) (locks.Configured, error) {
	return func(v locks.Values) (locks.Configured, error) {
		ttl, wait := v.Duration("ttl"), v.Duration("wait")
		return locks.Configured{TTL: ttl, New: func(env locks.Env) (locks.Lock, error) {
			if env.Members == nil || len(env.Members.Addrs) == 0 {
				return nil, errors.New("etcd-mutex: " + etcdRealOnly)
			}
			return &EtcdMutex{Env: env, Fenced: fenced, TTL: ttl, Wait: wait}, nil
		}}, nil
	}
}

// EtcdMutex is etcd's concurrency.Mutex run as a locksim lock: one client
// and one session per process, a new session when the old one's lease
// expired (Session.Done closed).
type EtcdMutex struct {
	Env    locks.Env
	Fenced bool
	TTL    time.Duration // the session lease, whole seconds (rounded up)
	Wait   time.Duration // give up waiting for the lock after this

	mu   sync.Mutex
	cli  *clientv3.Client
	sess *concurrency.Session
}

type etcdHold struct{ m *concurrency.Mutex }

// LeaseSeconds is the lease an etcd session gets for ttl: etcd's leases
// are whole seconds.
func LeaseSeconds(ttl time.Duration) int { return max(1, int(math.Ceil(ttl.Seconds()))) }

func (l *EtcdMutex) client(ctx context.Context) (*clientv3.Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cli != nil {
		return l.cli, nil
	}
	dial := l.Env.Members.Dial
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   l.Env.Members.Addrs,
		DialTimeout: l.TTL,
		Logger:      zap.NewNop(),
		Context:     ctx,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		})},
	})
	if err != nil {
		return nil, err
	}
	l.cli = cli
	go func() { <-ctx.Done(); _ = cli.Close() }() // the run's end closes it
	return cli, nil
}

// session returns the live session, opening one when there is none or
// the last one's lease is gone.
func (l *EtcdMutex) session(ctx, octx context.Context, cli *clientv3.Client) (*concurrency.Session, error) {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	if s != nil {
		select {
		case <-s.Done():
		default:
			return s, nil
		}
	}
	// The grant is bounded by the acquisition's deadline (octx); the
	// session's keepalive runs on the run's context: a session on octx
	// would stop its keepalive when Acquire returns (WithContext's ctx is
	// the keepalive's), and the lease would die under its holder.
	g, err := cli.Grant(octx, int64(LeaseSeconds(l.TTL)))
	if err != nil {
		return nil, err
	}
	s, err = concurrency.NewSession(cli, concurrency.WithLease(g.ID), concurrency.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.sess = s
	l.mu.Unlock()
	return s, nil
}

func (l *EtcdMutex) key() string { return "/locks/" + l.Env.Key }

// Acquire implements Lock: Mutex.Lock with a deadline of Wait.
func (l *EtcdMutex) Acquire(ctx context.Context) (locks.Lease, error) {
	start := l.Env.Clock.Now()
	cli, err := l.client(ctx)
	if err != nil {
		return locks.Lease{}, err
	}
	octx, cancel := context.WithTimeout(ctx, l.Wait)
	defer cancel()
	s, err := l.session(ctx, octx, cli)
	if err != nil {
		return locks.Lease{}, locks.ErrNotAcquired // no lease, no key: nothing held
	}
	m := concurrency.NewMutex(s, l.key())
	l.Env.At(locks.PointAcquiring)
	if err := m.Lock(octx); err != nil {
		// Lock deletes its key when it gives up (ctx done); an unknown
		// outcome leaves at most a key that dies with the lease.
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, concurrency.ErrSessionExpired) {
			return locks.Lease{}, locks.ErrNotAcquired
		}
		return locks.Lease{}, err
	}
	lease := locks.Lease{Value: m.Key(), Start: start, Handle: etcdHold{m}}
	if l.Fenced {
		r, err := cli.Get(octx, m.Key())
		if err != nil || len(r.Kvs) == 0 {
			_ = m.Unlock(ctx)
			return locks.Lease{}, fmt.Errorf("etcd-fencing: reading the key's create revision: %v", err)
		}
		lease.FencingToken = r.Kvs[0].CreateRevision
	}
	l.Env.At(locks.PointAfterCheck)
	return lease, nil
}

// Release implements Lock: delete the holder's key (Mutex.Unlock's
// delete, with ErrNotOwner when the key is already gone).
func (l *EtcdMutex) Release(ctx context.Context, lease locks.Lease) error {
	h, ok := lease.Handle.(etcdHold)
	if !ok {
		return locks.ErrNotOwner
	}
	cli, err := l.client(ctx)
	if err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, l.Wait)
	defer cancel()
	// The key is <prefix>/<lease id>: while it exists it is this
	// session's, so delete it if it is there; gone, the lease took it.
	key := h.m.Key()
	r, err := cli.Txn(octx).If(clientv3.Compare(clientv3.CreateRevision(key), ">", 0)).Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return err
	}
	if !r.Succeeded {
		return locks.ErrNotOwner
	}
	return nil
}
