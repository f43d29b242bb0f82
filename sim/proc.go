package sim

import (
	"cmp"
	"context"
	"fmt"
	evt "github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locksim/locksim/clock"
	"github.com/redis/go-redis/v9"
)

// Proc is a client process: a goroutine running a Program, its own clock,
// its own random stream and one go-redis client per node.
type Proc struct {
	lockClock atomic.Int64 // 1 + the last safety-phase read of LockClock's wall clock (Now); 0: never
	lockMono  atomic.Int64 // 1 + the last safety-phase read of LockClock's monotonic reading or a Sleep on it; 0: never
	w         *World
	id        int
	name      string
	src       uint64
	seq       uint64
	clk       *clock.Model
	rng       *rand.Rand
	ctx       context.Context
	cancel    context.CancelFunc
	clients   []*redis.Client
	services  []*redis.Client
	// primaryClients, primary and sentinelEpoch have one entry a
	// primary/replica group (replicated topology; nil otherwise): the
	// client that follows the group's primary, the node this client
	// believes is that primary, the newest failover of the group it heard of.
	primaryClients []*redis.Client
	primary        []int
	sentinelEpoch  []int
	// cluster is the ClusterClient of a cluster world (cluster.go), with
	// the clients that load its slot map and their one-at-a-time token.
	cluster      *redis.ClusterClient
	clusters     []*redis.ClusterClient // one a cluster (clusters.go); cluster is the first
	slotsClients []*redis.Client
	slotsSems    []chan struct{} // one a cluster

	pausedUntil int64
	arms        faults.Arms                // pauses and other faults waiting for this process at a point (guarded by w.mu)
	sleepers    map[chan struct{}]struct{} // goroutines blocked in Sleep
	starts      map[chan bool]struct{}     // goroutines started by Go, not yet begun
	goroutines  sync.WaitGroup             // goroutines started by Go
	exited      chan struct{}
	records     []Event // appended by the client goroutine, drained by the scheduler
	conns       []*conn
	dials       map[int]int
}

func newProc(w *World, id int, cfg Config) *Proc {
	clk, _ := clock.NewModel(0, cfg.ClientClockOffset(id), cfg.ClientDriftPPM(id))
	p := &Proc{
		w:        w,
		id:       id,
		name:     fmt.Sprintf("c%d", id),
		src:      uint64(id+1) << 40,
		clk:      clk,
		rng:      w.streams.Get(fmt.Sprintf("client/%d", id)),
		sleepers: map[chan struct{}]struct{}{},
		starts:   map[chan bool]struct{}{},
		exited:   make(chan struct{}),
		dials:    map[int]int{},
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

func (p *Proc) start() {
	p.clients = make([]*redis.Client, len(p.w.nodes))
	for i := range p.w.nodes {
		p.clients[i] = newRedisClient(p, i)
	}
	for i := range p.w.services {
		p.services = append(p.services, newRedisClient(p, serviceIndex+i))
	}
	if p.w.cfg.Topology.Replicated {
		for g := 0; g < p.w.groupCount(); g++ {
			p.primary = append(p.primary, p.w.groupFirst(g))
			p.sentinelEpoch = append(p.sentinelEpoch, 0)
			p.primaryClients = append(p.primaryClients, newRedisClient(p, -1-g))
		}
	}
	p.startCluster()
	go func() {
		defer close(p.exited)
		defer func() { p.Record(Event{Kind: evt.KindExit}) }()
		p.w.cfg.Program(p)
	}()
}

// Name is the process's name ("c0", "c1", ...).
func (p *Proc) Name() string { return p.name }

// ID is the process's index.
func (p *Proc) ID() int { return p.id }

// Context is cancelled when the run stops.
func (p *Proc) Context() context.Context { return p.ctx }

// Rand is the process's own random stream.
func (p *Proc) Rand() *rand.Rand { return p.rng }

// Stopping reports whether the run is over; a Program returns when it is.
func (p *Proc) Stopping() bool {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.w.stopping
}

// Phase is "safety" while faults may be active and "liveness" after the heal.
func (p *Proc) Phase() string {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return string(p.w.phase)
}

// TrueNow is the world's true time in nanoseconds. Lock code must not use it
// (it sees only its own clock); workloads use it to stamp history.
func (p *Proc) TrueNow() int64 { return p.w.now() }

// Now is the process's local wall-clock time (it implements clock.Clock).
func (p *Proc) Now() time.Time {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.w.bc.at(p.clk.Local(p.w.now()))
}

// Mono is the process's monotonic reading (it implements
// clock.Monotonic): it runs at the process clock's drifted rate and is
// never stepped by clock jumps or the heal's resync.
func (p *Proc) Mono() time.Duration {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return time.Duration(p.clk.Mono(p.w.now()))
}

// Mono is the lock's monotonic reading (clock.Monotonic), noted apart
// from Now, with Sleep: a drift reaches it, a jump or an offset never does
// (Result.LockMono).
func (c lockClock) Mono() time.Duration {
	c.p.noteLockMono()
	return c.p.Mono()
}

// Sleep blocks for d of local time (it implements clock.Clock). When the run
// stops, Sleep ends the calling goroutine (runtime.Goexit), running its
// deferred calls. Several goroutines of one process may sleep at once.
func (p *Proc) Sleep(d time.Duration) {
	w := p.w
	w.mu.Lock()
	if w.stopping {
		w.mu.Unlock()
		runtime.Goexit()
	}
	p.blockUntilLocked(w.now()+int64(p.clk.TrueAfter(d)), 0, stepWake)
}

// blockUntilLocked blocks the calling goroutine of p until true time at (a
// scheduler event wakes it; deferred while p is paused). The caller holds
// w.mu; it is released while blocked. When the run stops, it ends the
// goroutine (runtime.Goexit).
//
// hold, when set, marks the wake as put off by a pause ending then: the
// heal brings it forward.
func (p *Proc) blockUntilLocked(at, hold int64, kind stepKind) {
	w := p.w
	ch := make(chan struct{}, 1)
	p.sleepers[ch] = struct{}{}
	p.seq++
	ev := w.scheduleHeldLocked(at, hold, p.src, p.seq, p, kind, nil)
	ev.op, ev.ch = opWake, ch
	w.mu.Unlock()
	<-ch
	w.mu.Lock()
	stop := w.stopping
	w.mu.Unlock()
	if stop {
		runtime.Goexit()
	}
}

// Go starts f on a new goroutine of this process. The goroutine begins only
// when the scheduler reaches its start event, after the caller has blocked,
// so the two never run at the same time: lock code that needs a background
// goroutine (a watchdog) must start it with Go, not the go statement. When
// the run stops, a goroutine that has not begun never does.
func (p *Proc) Go(f func()) {
	w := p.w
	start := make(chan bool, 1)
	w.mu.Lock()
	if w.stopping {
		w.mu.Unlock()
		return
	}
	p.starts[start] = struct{}{}
	p.seq++
	w.scheduleFromLocked(w.now(), p.src, p.seq, p, stepGo, func() {
		w.mu.Lock()
		delete(p.starts, start)
		w.mu.Unlock()
		start <- true
	})
	p.goroutines.Add(1)
	w.mu.Unlock()
	go func() {
		defer p.goroutines.Done()
		if <-start {
			f()
		}
	}()
}

func (p *Proc) wakeAll() {
	p.w.mu.Lock()
	var chans []chan struct{}
	for ch := range p.sleepers {
		chans = append(chans, ch)
	}
	p.sleepers = map[chan struct{}]struct{}{}
	var starts []chan bool
	for ch := range p.starts {
		starts = append(starts, ch)
	}
	p.starts = map[chan bool]struct{}{}
	conns := append([]*conn(nil), p.conns...)
	p.w.mu.Unlock()
	// Shutdown only: the order of these wakes does not reach the trace.
	for _, ch := range chans {
		ch <- struct{}{}
	}
	for _, ch := range starts {
		ch <- false
	}
	for _, c := range conns {
		c.abort()
	}
}

// Record appends an event to the trace on behalf of the process, stamped
// with true time and the process's local time.
func (p *Proc) Record(ev Event) {
	w := p.w
	w.mu.Lock()
	ev.T = w.now()
	ev.Proc = p.name
	ev.Local = p.clk.Local(ev.T)
	p.addRecordLocked(ev)
	w.mu.Unlock()
}

// addRecordLocked queues ev for the trace. The caller holds w.mu.
func (p *Proc) addRecordLocked(ev Event) {
	if len(p.records) == 0 {
		p.w.dirty = append(p.w.dirty, p)
	}
	p.records = append(p.records, ev)
}

// flushRecords moves records made by client goroutines into the trace, in
// process order, so two goroutines that ran at the same instant cannot
// reorder the trace.
func (w *World) flushRecords() {
	w.mu.Lock()
	if len(w.dirty) == 0 {
		w.mu.Unlock()
		return
	}
	slices.SortFunc(w.dirty, func(a, b *Proc) int { return a.id - b.id })
	recs := w.flushBuf[:0]
	for _, p := range w.dirty {
		recs = append(recs, p.records...)
		clear(p.records)
		p.records = p.records[:0]
	}
	clear(w.dirty)
	w.dirty = w.dirty[:0]
	w.mu.Unlock()
	// Records of several instants (a goroutine an event woke, then one a
	// library timer woke before the next event) go in time order; at one
	// instant, in process order.
	if !slices.IsSortedFunc(recs, cmpRecordTime) {
		slices.SortStableFunc(recs, cmpRecordTime)
	}
	for i := range recs {
		w.trace.add(recs[i])
		w.noteLive(&recs[i])
	}
	clear(recs)
	w.flushBuf = recs[:0]
}

func cmpRecordTime(a, b Event) int { return cmp.Compare(a.T, b.T) }

// record adds an engine event to the trace at the current true time.
func (w *World) record(ev Event) {
	w.flushRecords()
	ev.T = w.now()
	w.trace.add(ev)
}

type clockModel = *clock.Model

// Nodes returns p's go-redis clients, one per node, in node order.
func (p *Proc) Nodes() []*redis.Client { return p.clients }

// Service returns p's go-redis client for service i (Config.Services order).
func (p *Proc) Service(i int) *redis.Client { return p.services[i] }

// Primary returns p's go-redis client for the primary of a replicated
// topology: it dials whichever node Sentinel last told p is the primary.
// It is nil for independent nodes.
func (p *Proc) Primary() *redis.Client {
	if len(p.primaryClients) == 0 {
		return nil
	}
	return p.primaryClients[0]
}

// Primaries returns p's go-redis clients for the primary of each
// primary/replica group (Topology.Groups), in group order: each dials
// whichever node Sentinel last told p is its group's primary. nil for a
// topology that is not replicated.
func (p *Proc) Primaries() []*redis.Client { return p.primaryClients }

// TrueDeadline converts a deadline on p's local clock to the true time at
// which p's clock will read it, assuming no jumps in between.
func (p *Proc) TrueDeadline(local time.Time) int64 {
	w := p.w
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	d := local.Sub(w.bc.at(p.clk.Local(now)))
	if d <= 0 {
		return now + int64(d)
	}
	return now + int64(p.clk.TrueAfter(d))
}

// GoTimeToTrue converts a time read from Go's clock (time.Now inside the
// bubble, as libraries do) to true time.
func (p *Proc) GoTimeToTrue(t time.Time) int64 { return p.w.bc.fromTime(t) }
