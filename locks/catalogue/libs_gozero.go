//go:build gozero

// The go-zero adapter is built only with -tags gozero: linking go-zero
// changes the whole process (its init catches SIGINT/SIGTERM, sets
// GOMAXPROCS, starts a /proc ticker, and keeps every redis client it builds
// for the life of the process), which the CLI and other locks must not pay
// for. Without the tag, libs_gozero_stub.go registers the id with an error
// that says how to build it in.

package catalogue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/breaker"
	"github.com/zeromicro/go-zero/core/logx"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/core/stringx"

	"github.com/locksim/locksim/locks"
)

// goZeroSeconds is what the adapter passes to RedisLock.SetExpire; go-zero
// turns it into a PX of seconds×1000 + 500 ms (redislock.go: tolerance).
const goZeroSeconds = 3

const goZeroTTL = goZeroSeconds*time.Second + 500*time.Millisecond

func init() {
	Register(locks.Info{
		ID:       goZeroID,
		Design:   goZeroDesign,
		Source:   "library (single node)",
		Weakness: goZeroWeakness,
		Topology: locks.Single,
		TTL:      goZeroTTL,
		New:      newGoZero,
	})
	// go-zero logs acquire errors and "slowcall"s (>100 ms, common under
	// injected delays) to stdout through logx; they are not part of the
	// simulation and would mix into the CLI's output.
	logx.Disable()
}

// How go-zero is made to talk to the simulated node:
//
// go-zero's Redis builds its own go-redis client from an address
// (core/stores/redis/redisclientmanager.go getClient) and offers no way to
// pass a client or a Dialer; the only injection point is WithHook, a
// go-redis Hook added after the client is built. goZeroViaSim's ProcessHook
// forwards every command to env.Primary instead of calling next, so all of
// go-zero's own code (RedisLock, Script.Run's EVALSHA/EVAL fallback, its
// duration and breaker hooks) runs unmodified, while the transport is the
// simulated client. go-zero's own pool is never used, but go-zero hard-codes
// MinIdleConns 8, so go-redis starts up to 8 goroutines that pre-dial idle
// connections as the client is built, before the hook is added. The address
// has no port, so a dial that misses the hook fails while parsing it (no
// socket, no DNS) and retries after 100 ms; dials that see the hook get an
// inert net.Conn that is never read or written. Neither touches the
// simulation.
//
// go-zero keeps every client it built for the life of the process, so each
// instance costs about 0.5 MB that is never freed (the 8 idle connections'
// buffers); the hook holds env.Primary weakly so that a finished world is
// not kept alive as well.
type goZeroViaSim struct{ w weak.Pointer[redis.Client] }

func (h goZeroViaSim) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) { return inertConn{}, nil }
}

func (h goZeroViaSim) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { return h.w.Value().Process(ctx, cmd) }
}

func (h goZeroViaSim) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		_, err := h.w.Value().Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, cmd := range cmds {
				_ = p.Process(ctx, cmd)
			}
			return nil
		})
		return err
	}
}

// inertConn is what go-zero's idle-connection pre-warm gets: never used.
type inertConn struct{}

func (inertConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (inertConn) Write([]byte) (int, error)        { return 0, net.ErrClosed }
func (inertConn) Close() error                     { return nil }
func (inertConn) LocalAddr() net.Addr              { return inertAddr{} }
func (inertConn) RemoteAddr() net.Addr             { return inertAddr{} }
func (inertConn) SetDeadline(time.Time) error      { return nil }
func (inertConn) SetReadDeadline(time.Time) error  { return nil }
func (inertConn) SetWriteDeadline(time.Time) error { return nil }

type inertAddr struct{}

func (inertAddr) Network() string { return "locksim" }
func (inertAddr) String() string  { return "inert" }

var (
	// goZeroRand serialises every draw from go-zero's process-wide
	// stringx source (seeded from the wall clock at init; the only entry
	// point is the global stringx.Seed). RedisLock's id goes into its Redis
	// commands, so it is drawn right after a Seed from the client's own
	// stream; the breaker's name (never on the wire) is drawn under the
	// same lock so that it cannot slip in between. The breaker's other
	// random source (mathx.NewProba) is seeded from time.Now, which in the
	// bubble is virtual time, so its drop decisions repeat too.
	goZeroRand sync.Mutex
	// goZeroAddrs makes each instance's address unique: go-zero caches
	// clients by address for the life of the process (clientManager), and
	// a client built in one run must never serve another.
	goZeroAddrs atomic.Uint64
)

type goZeroLock struct {
	env    locks.Env
	store  *zredis.Redis
	points *libPoints
}

func newGoZero(env locks.Env) (locks.Lock, error) {
	addr := fmt.Sprintf("locksim-go-zero-%d", goZeroAddrs.Add(1))
	goZeroRand.Lock() // NewRedis draws the breaker's name
	defer goZeroRand.Unlock()
	store, err := zredis.NewRedis(zredis.RedisConf{Host: addr, Type: zredis.NodeType, NonBlock: true},
		zredis.WithHook(goZeroViaSim{w: weak.Make(env.Primary)}))
	if err != nil {
		return nil, err
	}
	// go-zero's commands reach env.Primary through goZeroViaSim, so its
	// hooks see them.
	return &goZeroLock{env: env, store: store, points: hookLibPoints(env, env.Primary)}, nil
}

// newLock makes a RedisLock (one per acquisition, as go-zero's examples do)
// and returns the random id it will write: NewRedisLock draws exactly
// stringx.Randn(16) from the seeded source, so the same draw after the same
// seed is its id.
func (l *goZeroLock) newLock() (*zredis.RedisLock, string) {
	goZeroRand.Lock()
	defer goZeroRand.Unlock()
	seed := l.env.Rand.Int64()
	stringx.Seed(seed)
	id := stringx.Randn(16)
	stringx.Seed(seed)
	return zredis.NewRedisLock(l.store, l.env.Key), id
}

func (l *goZeroLock) Acquire(ctx context.Context) (locks.Lease, error) {
	lk, id := l.newLock()
	lk.SetExpire(goZeroSeconds)
	start := time.Now()
	l.points.arm()
	ok, err := lk.AcquireCtx(ctx)
	l.points.disarm()
	if err != nil {
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			// go-zero's breaker refused before sending anything.
			return locks.Lease{}, fmt.Errorf("%w: %v", locks.ErrNotAcquired, err)
		}
		return locks.Lease{}, err
	}
	if !ok {
		return locks.Lease{}, locks.ErrNotAcquired
	}
	l.env.At(locks.PointAfterCheck)
	// go-zero gives no validity signal: the honest belief is start+TTL.
	return locks.Lease{Value: id, Start: start, ValidUntil: start.Add(goZeroTTL), OnGoClock: true, Handle: lk}, nil
}

func (l *goZeroLock) Release(ctx context.Context, lease locks.Lease) error {
	lk := lease.Handle.(*zredis.RedisLock)
	ok, err := lk.ReleaseCtx(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return locks.ErrNotOwner
	}
	return nil
}
