package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/clock"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/resource"
	"github.com/locksim/locksim/sim"
)

// Resources a workload can protect.
const (
	ResourceNone    = ""        // the critical section only takes time
	ResourcePool    = "pool"    // “Redis + RedLock” (yield-bytes)'s bonus pool: read, write minus one while > 0
	ResourceCounter = "counter" // read, write plus one
)

// PoolKey is the storage object of the bonus pool and the counter.
const PoolKey = "bonus-pool"

// Section is a user-provided critical section: it runs while the client
// believes it holds the lock, with the storage client and the fence its
// writes must carry.
type Section func(ctx context.Context, s SectionEnv) error

// SectionEnv is what a user's critical section gets.
type SectionEnv struct {
	Store resource.Client
	Fence resource.Fence // fill ExpectOwner/ExpectVersion from a read
	Lease locks.Lease
	Clock interface{ Sleep(time.Duration) }
}

// maxVersionRetries bounds version-cas's optimistic retry loop.
const maxVersionRetries = 16

// Program returns the client program: acquire → critical section → release
// → think, until the run stops. Every step is recorded in the history:
//
//	Op acquire/release: call, then ok | fail | unknown. An acquire's ok
//	    carries Until (the true time the holder's own clock reaches the
//	    lease's validity; 0: until release), Token, and Result "read" for
//	    a read-write lock's shared (read) hold.
//	Kind renew / renew-fail, Op acquire: the lock's Env.Renewed (Until:
//	    the new deadline in true time, 0: until release) and
//	    Env.RenewFailed (the holder stopped believing) for the
//	    acquisition OpID.
//	Op read/write (storage): call, then ok | fail (fenced) | unknown, with
//	    Value (read result or value written) and Token.
//
// Designs that exclude nothing (version-cas) record no acquire/release.
func Program(info locks.Info, wl Workload) sim.Program {
	return func(p *sim.Proc) { RunClient(p, info, wl) }
}

// Proc is what the client program needs from its process: *sim.Proc in
// the simulator, a real process in the real-Redis arm.
type Proc interface {
	// Now and Sleep are the process's own clock (clock.Clock).
	Now() time.Time
	Sleep(d time.Duration)
	Name() string
	Context() context.Context
	Rand() *rand.Rand
	Stopping() bool
	TrueNow() int64
	TrueDeadline(local time.Time) int64
	GoTimeToTrue(t time.Time) int64
	Record(ev sim.Event)
	Point(point string)
	// LockClock is the clock handed to the lock (locks.Env.Clock): the
	// process's own; the simulator notes when the lock reads it.
	LockClock() clock.Clock
	Go(f func())
	Nodes() []*redis.Client
	Primary() *redis.Client
	// Primaries are the clients that follow each primary/replica group's
	// primary (nil unless the world is replicated).
	Primaries() []*redis.Client
	Service(i int) *redis.Client
}

// RunClient is one client's program (Program's body) on process p: it
// returns when p is stopping.
func RunClient(p Proc, info locks.Info, wl Workload) {
	c := &client{p: p, info: info, wl: wl}
	believe := RenewRecorder(p, info.ID, &c.holding)
	lost := RenewFailRecorder(p, info.ID, &c.holding)
	if wl.Careful {
		rec, recLost := believe, lost
		believe = func(validUntil time.Time) {
			c.renewed.Store(&renewal{until: validUntil})
			c.beliefs.Add(1)
			rec(validUntil)
		}
		lost = func() {
			c.renewed.Store(&renewal{lost: true})
			c.beliefs.Add(1)
			recLost()
		}
	}
	env := locks.Env{Nodes: locks.UniversalClients(p.Nodes()), Primary: p.Primary(), Clock: p.LockClock(), Rand: p.Rand(), Client: p.Name(), Key: wl.Key, TTL: info.TTL,
		Hooks: locks.Hooks{At: func(pt locks.PausePoint) { p.Point(string(pt)) }, Go: p.Go, Renewed: believe, RenewFailed: lost}}
	if env.Primary == nil {
		env.Primary = p.Nodes()[0]
	}
	if info.Topology == locks.Groups {
		env.Groups = p.Primaries()
	}
	if cp, ok := p.(interface{ Cluster() *redis.ClusterClient }); ok && info.Topology == locks.Cluster {
		env.Cluster = cp.Cluster() // a cluster world (sim.Proc.Cluster)
	}
	if cp, ok := p.(interface{ Clusters() []*redis.ClusterClient }); ok && info.Topology == locks.Cluster && info.Clusters > 1 {
		env.Clusters = cp.Clusters() // independent clusters (sim.Proc.Clusters)
	}
	if mp, ok := p.(interface{ Members() *locks.Members }); ok && mp.Members() != nil {
		env.Members = mp.Members() // the real arm: a real coordination service
	} else if info.Topology == locks.Consensus {
		coord, ok := lookupCoordination()
		if !ok {
			p.Record(sim.Event{Kind: event.KindError, Lock: info.ID, Detail: noCoordination(info.ID)})
			return
		}
		for i := range coord.Members {
			env.Coord = append(env.Coord, p.Service(1+i)) // after the storage
		}
	}
	lk, err := info.New(env)
	if err != nil {
		p.Record(sim.Event{Kind: event.KindError, Lock: info.ID, Detail: err.Error()})
		return
	}
	c.env = env
	if wl.Resource != ResourceNone || wl.Section != nil {
		c.store = resource.Client{C: p.Service(0)}
	}
	for !p.Stopping() {
		c.round(lk)
		p.Sleep(c.uniform(wl.ThinkMin, wl.ThinkMax))
	}
}

type client struct {
	p     Proc
	env   locks.Env
	info  locks.Info
	wl    Workload
	store resource.Client
	op    int64
	// holding is the OpID of the acquisition a renewal extends (a
	// watchdog goroutine reads it).
	holding atomic.Int64
	// renewed is the latest belief change the lock reported after Acquire
	// (Workload.Careful), and beliefs counts the reports.
	renewed atomic.Pointer[renewal]
	beliefs atomic.Int64
}

// renewal is a belief change a lock reported: Env.Renewed (until; zero:
// until release) or Env.RenewFailed (lost).
type renewal struct {
	until time.Time
	lost  bool
}

func (c *client) uniform(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(c.p.Rand().Int64N(int64(hi-lo)))
}

func (c *client) call(op event.Op, ev sim.Event) int64 {
	c.op++
	ev.Kind, ev.Op, ev.OpID, ev.Lock = "call", op, c.op, c.info.ID
	c.p.Record(ev)
	return c.op
}

func (c *client) ret(op event.Op, id int64, err error, ev sim.Event) {
	ev.Kind, ev.Op, ev.OpID, ev.Lock = "ok", op, id, c.info.ID
	if err != nil {
		ev.Kind, ev.Detail = classify(err), err.Error()
	}
	c.p.Record(ev)
}

func (c *client) round(lk locks.Lock) {
	ctx := c.p.Context()
	var id int64
	read := false
	if rw, ok := lk.(locks.ReadWriteLock); ok && c.info.ReadWrite && c.wl.ReadFraction > 0 {
		read = c.p.Rand().Float64() < c.wl.ReadFraction
		acquire := lk.Acquire
		if read {
			acquire = rw.AcquireRead
		}
		lk = modeLock{ReadWriteLock: rw, acquire: acquire}
	}
	if c.info.Fencing != locks.FenceVersion {
		id = c.call("acquire", sim.Event{})
		c.holding.Store(id)
	}
	c.p.Point(pointAcquire)
	lease, err := lk.Acquire(ctx)
	if lease.NoMutex {
		c.section(lease)
		return
	}
	if err != nil {
		c.ret("acquire", id, err, sim.Event{})
		return
	}
	c.ret("acquire", id, nil, sim.Event{Until: c.until(lease), Token: lease.FencingToken, Detail: lease.Value, Result: mode(lease)})
	c.renewed.Store(nil)
	if c.wl.Reentrant && c.info.Reentrant {
		c.nested(lk)
	}
	if read {
		c.readSection(lease)
	} else {
		c.section(lease)
	}
	id = c.call("release", sim.Event{Detail: lease.Value})
	c.p.Point(pointReleasing)
	c.ret("release", id, lk.Release(ctx, lease), sim.Event{})
}

// The workload's own points (faults.HarnessPoints): an armed fault or a
// targeted pause can wait for them whatever the lock marks. Each is marked
// after the operation's call is in the history, just before the lock is
// called.
const (
	pointAcquire   = "acquire"
	pointReleasing = "releasing"
)

// until is the true time at which the holder's own clock reaches lease's
// validity (0: until release).
func (c *client) until(lease locks.Lease) int64 {
	switch {
	case lease.MonoUntil != 0:
		return c.p.TrueDeadline(c.monoDeadline(lease))
	case lease.ValidUntil.IsZero():
		return 0
	case lease.OnGoClock:
		return c.p.GoTimeToTrue(lease.ValidUntil)
	default:
		return c.p.TrueDeadline(lease.ValidUntil)
	}
}

// nested is Workload.Reentrant's inner level: acquire again while holding,
// run the section, release the inner acquisition. Renewals keep naming the
// outer acquisition (the one the checker's hold is keyed by).
func (c *client) nested(lk locks.Lock) {
	ctx := c.p.Context()
	id := c.call("acquire", sim.Event{})
	c.p.Point(pointAcquire)
	inner, err := lk.Acquire(ctx)
	if err != nil {
		c.ret("acquire", id, err, sim.Event{})
		return
	}
	c.ret("acquire", id, nil, sim.Event{Until: c.until(inner), Token: inner.FencingToken, Detail: inner.Value, Result: mode(inner)})
	if inner.Read {
		c.readSection(inner)
	} else {
		c.section(inner)
	}
	id = c.call("release", sim.Event{Detail: inner.Value})
	c.p.Point(pointReleasing)
	c.ret("release", id, lk.Release(ctx, inner), sim.Event{})
}

// modeLock is a read-write lock whose Acquire takes this round's mode (a
// nested acquisition then takes the same mode as the outer one).
type modeLock struct {
	locks.ReadWriteLock
	acquire func(context.Context) (locks.Lease, error)
}

func (m modeLock) Acquire(ctx context.Context) (locks.Lease, error) { return m.acquire(ctx) }

// mode is an acquire ok's Result: "read" (checker.ModeRead) for a shared
// hold, "" (exclusive) else.
func mode(l locks.Lease) event.Result {
	if l.Read {
		return event.ResultRead
	}
	return ""
}

// readSection is a read section (Workload.ReadFraction): read the object
// and take the section's time; nothing is written. With no resource it
// only takes the time.
func (c *client) readSection(lease locks.Lease) {
	p, ctx := c.p, c.p.Context()
	hold := c.uniform(c.wl.HoldMin, c.wl.HoldMax)
	if c.wl.Section != nil || c.wl.Resource == ResourceNone {
		p.Sleep(hold)
		return
	}
	owner := lease.Value
	fence := resource.Fence{Token: lease.FencingToken, Owner: owner}
	id := c.call("read", sim.Event{})
	st, err := c.store.Read(ctx, PoolKey, fence)
	c.ret("read", id, err, sim.Event{Value: st.Value})
	if err != nil {
		return
	}
	p.Sleep(hold)
}

// section is the critical section: read the object, take the section's
// time, write the new value with the lease's fence.
func (c *client) section(lease locks.Lease) {
	p, ctx := c.p, c.p.Context()
	hold := c.uniform(c.wl.HoldMin, c.wl.HoldMax)
	owner := lease.Value
	if owner == "" {
		owner = fmt.Sprintf("%s/%d", p.Name(), c.op)
	}
	fence := resource.Fence{Token: lease.FencingToken, Owner: owner}
	switch {
	case c.wl.Section != nil:
		if err := c.wl.Section(ctx, SectionEnv{Store: c.store, Fence: fence, Lease: lease, Clock: p}); err != nil {
			p.Record(sim.Event{Kind: event.KindSectionError, Lock: c.info.ID, Detail: err.Error()})
		}
		return
	case c.wl.Resource == ResourceNone:
		p.Sleep(hold)
		c.env.At(locks.PointBeforeWrite)
		return
	}
	for try := 0; try < maxVersionRetries; try++ {
		id := c.call("read", sim.Event{})
		st, err := c.store.Read(ctx, PoolKey, fence)
		c.ret("read", id, err, sim.Event{Value: st.Value})
		if err != nil {
			return
		}
		next := st.Value + 1
		if c.wl.Resource == ResourcePool {
			if st.Value <= 0 {
				return // sold out
			}
			next = st.Value - 1
		}
		if c.wl.Careful {
			if try == 0 {
				c.work(hold, lease)
			}
			if c.left(lease) <= 0 {
				return // careful code: the belief ended, no write
			}
		} else if try == 0 {
			p.Sleep(hold)
		}
		c.env.At(locks.PointBeforeWrite)
		fence.ExpectOwner, fence.ExpectVersion = st.Owner, st.Version
		id = c.call("write", sim.Event{Value: next, Token: fence.Token, Detail: owner})
		err = c.store.Write(ctx, PoolKey, next, fence)
		c.ret("write", id, err, sim.Event{Value: next, Token: fence.Token})
		if !(errors.Is(err, resource.ErrFenced) && c.info.Fencing == locks.FenceVersion) {
			return
		}
	}
}

// work is a careful section's work: hold of the client's own time, in
// steps that each end at the latest when the belief does. After a step
// that a renewal reported during (Env.Renewed, Env.RenewFailed), it reads
// the belief again and works on while it holds; otherwise it stops at the
// step's end (the hold done, or the belief's deadline reached).
func (c *client) work(hold time.Duration, lease locks.Lease) {
	step := min(hold, max(c.left(lease), 0))
	for {
		seen := c.beliefs.Load()
		c.p.Sleep(step)
		hold -= step
		if hold <= 0 || c.beliefs.Load() == seen {
			return
		}
		left := c.left(lease)
		if left <= 0 {
			return
		}
		step = min(hold, left)
	}
}

// monoDeadline is lease's monotonic validity (Lease.MonoUntil) as a
// deadline on the process's own clock, read now.
func (c *client) monoDeadline(lease locks.Lease) time.Time {
	return c.p.Now().Add(lease.MonoUntil - clock.Mono(c.p))
}

// forever is a belief with no deadline (a lease held until release).
const forever = time.Duration(1<<63 - 1)

// left is how long the holder still believes it holds lease, as careful
// code reads it: on its own clock (on Go's clock for a library's
// validity), up to the latest renewal; forever for a belief until
// release; 0 once the lock reported a failed renewal.
func (c *client) left(lease locks.Lease) time.Duration {
	r := c.renewed.Load()
	switch {
	case r != nil && r.lost:
		return 0
	case r != nil && r.until.IsZero(), r == nil && lease.ValidUntil.IsZero() && lease.MonoUntil == 0:
		return forever
	case lease.MonoUntil != 0:
		left := lease.MonoUntil - clock.Mono(c.p)
		if r != nil {
			left = max(left, r.until.Sub(c.p.Now()))
		}
		return left
	}
	if lease.ValidUntil.IsZero() { // believed until release, then renewed to a deadline
		return time.Duration(c.p.TrueDeadline(r.until) - c.p.TrueNow())
	}
	if lease.OnGoClock { // renewals are on the client's clock: compare in true time
		left := time.Duration(c.p.GoTimeToTrue(lease.ValidUntil) - c.p.TrueNow())
		if r != nil {
			left = max(left, time.Duration(c.p.TrueDeadline(r.until)-c.p.TrueNow()))
		}
		return left
	}
	until := lease.ValidUntil
	if r != nil && r.until.After(until) {
		until = r.until
	}
	return until.Sub(c.p.Now())
}

// classify turns an error into an outcome: a clean refusal (lock taken,
// not the owner, write fenced) is "fail"; anything else (timeouts, resets)
// may have taken effect and is "unknown".
func classify(err error) event.Kind {
	if errors.Is(err, locks.ErrNotAcquired) || errors.Is(err, locks.ErrNotOwner) || errors.Is(err, resource.ErrFenced) {
		return event.KindFail
	}
	return event.KindUnknown
}
