package realredis

import (
	"context"
	"github.com/locksim/locksim/event"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/locksim/locksim/clock"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// proc is one client process of a real run: the same workload and lock
// code as in the simulator (scenarios.RunClient), on real go-redis clients
// that dial real servers through the run's proxies, in real time. Its
// clock is the machine's plus the scenario's offset and drift (a
// clock.Model over the run's true time).
type proc struct {
	w    *world
	id   int
	name string
	rng  *rand.Rand
	clk  *clock.Model // guarded by w.mu

	nodes   []*redis.Client
	primary *redis.Client // a replicated world's failover client
	store   *redis.Client
	members *locks.Members // a real coordination service's members (consensus.go)
	arms    faults.Arms    // pauses and other faults armed at a point of this process; guarded by w.mu
	paused  int64          // true time until which the process is stopped; guarded by w.mu
	wake    chan struct{}  // closed and replaced at the heal; guarded by w.mu
	started sync.WaitGroup
	drv     *driverClient // a driver client's (driver.go), started before true time 0
	// A replicated world's addresses for a driver (driverclient.go): this
	// client's links to each Sentinel, and each node's announced address
	// (the gateway Sentinel names) to this client's link to that node.
	drvSentinels []string
	drvRoutes    map[string]string
	// A cluster world's ClusterClient and its slot-map loaders (cluster.go).
	cluster      *redis.ClusterClient   // cluster 0's
	clusters     []*redis.ClusterClient // one a cluster (clusters.go)
	slotsClients []*redis.Client
	// 1 + the last true time in the safety phase the lock read its clock's
	// wall time (lockClock's Now), and its monotonic reading or a sleep on
	// it; 0: never (effects.go).
	lockClock, lockMono atomic.Int64
}

func (p *proc) Name() string             { return p.name }
func (p *proc) Context() context.Context { return p.w.ctx }
func (p *proc) Rand() *rand.Rand         { return p.rng }
func (p *proc) Stopping() bool           { return p.w.stopping() }
func (p *proc) TrueNow() int64           { return p.w.now() }
func (p *proc) Nodes() []*redis.Client   { return p.nodes }
func (p *proc) Primary() *redis.Client   { return p.primary }
func (p *proc) Primaries() []*redis.Client {
	if p.primary == nil {
		return nil
	}
	return []*redis.Client{p.primary}
}
func (p *proc) Service(i int) *redis.Client { return p.store }

// GoTimeToTrue converts a time read from time.Now (libraries) to true time.
func (p *proc) GoTimeToTrue(t time.Time) int64 { return int64(t.Sub(p.w.start)) }

// Now is the process's local clock.
func (p *proc) Now() time.Time {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.w.start.Add(time.Duration(p.clk.Local(p.w.now())))
}

// Mono is the process's monotonic reading (clock.Monotonic): it runs at
// the local clock's drifted rate and is never stepped by its jumps.
func (p *proc) Mono() time.Duration {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return time.Duration(p.clk.Mono(p.w.now()))
}

// TrueDeadline converts a deadline on the local clock to true time.
func (p *proc) TrueDeadline(local time.Time) int64 {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	now := p.w.now()
	d := local.Sub(p.w.start.Add(time.Duration(p.clk.Local(now))))
	if d <= 0 {
		return now + int64(d)
	}
	return now + int64(p.clk.TrueAfter(d))
}

// Sleep blocks for d of local time, then while the process is paused.
// When the run stops it ends the goroutine, as the simulator's does.
func (p *proc) Sleep(d time.Duration) {
	p.w.mu.Lock()
	td := p.clk.TrueAfter(d)
	p.w.mu.Unlock()
	t := time.NewTimer(td)
	select {
	case <-t.C:
	case <-p.w.stop:
		t.Stop()
		runtime.Goexit()
	}
	p.gate()
}

// gate blocks while the process is paused (until the pause ends, the
// heal, or the stop); at the stop it ends the calling goroutine.
func (p *proc) gate() {
	if p.waitPaused() {
		runtime.Goexit()
	}
}

// Record stamps ev with true and local time and adds it to the history.
func (p *proc) Record(ev sim.Event) {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	ev.T = p.w.now()
	ev.Proc = p.name
	ev.Local = p.clk.Local(ev.T)
	p.w.addLocked(ev)
}

// LockClock is the process's own clock as its lock gets it: the world
// notes when the lock reads it (effects.go), so that a clock fault on a
// client whose lock never reads its clock (a library reading time.Now)
// is reported as not reaching it, as in the simulator.
func (p *proc) LockClock() clock.Clock { return lockClock{p} }

// Point begins the faults armed on the process at point and pauses it if
// a pause is armed there (faults.Arms.Reach, the simulator's rule: the
// first time the process reaches the point at or after the fault's start,
// in the safety phase).
func (p *proc) Point(point string) {
	w := p.w
	w.mu.Lock()
	if w.healed || w.stopped {
		w.mu.Unlock()
		return
	}
	// Faults armed here begin now, before the process goes on (the
	// simulator's rule: sim.Proc.Point).
	fire, a := p.arms.Reach(point)
	if len(fire) > 0 {
		w.mu.Unlock()
		for _, af := range fire {
			f := af.F
			f.Start = time.Duration(w.now())
			w.beginFault(af.I, f, true)
		}
		w.mu.Lock()
	}
	if a == nil || w.healed || w.stopped {
		w.mu.Unlock()
		return
	}
	now := w.now()
	p.paused = max(p.paused, now+a.D)
	w.addLocked(sim.Event{T: now, Proc: p.name, Kind: event.KindPause, Local: p.clk.Local(now), Detail: a.Desc, Fault: a.Fault})
	w.mu.Unlock()
	p.gate()
}

// Go starts f on a goroutine of the process.
func (p *proc) Go(f func()) {
	if p.w.stopping() {
		return
	}
	p.w.goroutines.Add(1)
	go func() {
		defer p.w.goroutines.Done()
		f()
	}()
}

// client makes a go-redis client as the simulator configures its own
// (RESP2, no CLIENT SETINFO, no maintenance notifications, the world's
// timeouts and retries), dialling addr through the pause gate.
func (p *proc) client(addr string, store bool) *redis.Client {
	rc := p.w.cfg.Redis
	retries := rc.MaxRetries
	if store {
		retries = -1 // as the simulator: a retried storage write could apply twice
	}
	dial := loopbackDialer(p.w.sawDial)
	return redis.NewClient(&redis.Options{
		Addr: addr, Protocol: 2, DisableIdentity: true, ClientName: p.name,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PoolSize:                 8, ConnMaxIdleTime: -1,
		DialTimeout: rc.DialTimeout, ReadTimeout: rc.ReadTimeout, WriteTimeout: rc.WriteTimeout,
		MaxRetries: retries, PoolTimeout: rc.ReadTimeout + rc.DialTimeout, MinRetryBackoff: rc.RetryBackoff, MaxRetryBackoff: rc.RetryBackoff,
		Dialer: func(ctx context.Context, network, a string) (net.Conn, error) {
			c, err := dial(ctx, network, a)
			if err != nil {
				return nil, err
			}
			return &gatedConn{Conn: c, p: p}, nil
		},
	})
}

// gatedConn holds a paused process's network I/O: it sends nothing and
// handles no reply while paused.
type gatedConn struct {
	net.Conn
	p *proc
}

func (c *gatedConn) Write(b []byte) (int, error) {
	c.p.gateIO()
	return c.Conn.Write(b)
}

func (c *gatedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.p.gateIO()
	return n, err
}

// gateIO is gate for I/O paths (which must not Goexit a library's
// goroutine): it returns at the stop.
func (p *proc) gateIO() { p.waitPaused() }

// waitPaused blocks while the process is paused, and reports whether it
// returned because the run stopped.
func (p *proc) waitPaused() (stopped bool) {
	for {
		p.w.mu.Lock()
		until, wake := p.paused, p.wake
		now := p.w.now()
		p.w.mu.Unlock()
		if until <= now {
			return false
		}
		t := time.NewTimer(time.Duration(until - now))
		select {
		case <-t.C:
		case <-wake:
			t.Stop()
		case <-p.w.stop:
			t.Stop()
			return true
		}
	}
}

// startFault carries out fault i at its start, and schedules its end; a
// fault armed at a point (At, On; not a client pause) is armed on its
// client instead, counted as a targeted pause is, and begins when that
// client reaches the point (proc.Point).
func (w *world) startFault(i int, f faults.Fault) {
	if f.At != "" && f.Kind != faults.ClientPause {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.healed || w.stopped {
			return
		}
		w.stats.Faults++
		if e := w.effectLocked(i); e != nil {
			e.Armed = true
		}
		for _, p := range w.faultProcs([]string{f.On}) {
			p.arms.ArmFault(i, f)
		}
		return
	}
	w.beginFault(i, f, false)
}
