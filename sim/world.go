package sim

import (
	"fmt"
	evt "github.com/locksim/locksim/event"
	"math/rand/v2"
	"sync"
	"time"
)

// Program is what a client process runs: ordinary blocking Go code that
// talks to Redis through p's go-redis clients and uses p as its clock. It
// should return when p.Stopping() reports true.
type Program func(p *Proc)

// World is one simulated run. It is built by Run and lives inside one
// synctest bubble; only the scheduler goroutine advances it.
type World struct {
	cfg     Config
	streams Streams
	bc      bubbleClock

	mu       sync.Mutex // guards the queue and state client goroutines touch
	q        eventQueue
	seq      uint64
	sleeping bool  // the scheduler waits on its timer for wakeAt
	wakeAt   int64 // what the timer is armed for while sleeping
	// pendingAcks counts replica acks kept out of the queue (Node.sendAck)
	pendingAcks int
	// cur is the queue key (at as queued, src, seq) of the event running
	cur      event
	stopping bool
	steps    int64
	lastAt   int64              // true time of the last event run
	dirty    []*Proc            // processes with records not yet in the trace
	free     []*event           // events to reuse (an event is a few per Redis command)
	cmds     map[string]cmdInfo // command names as sent, see command
	shas     map[string]string  // SHA1s of EVAL bodies, see scriptSHA
	ran      *event             // the event run last, recycled at the next step
	flushBuf []Event            // flushRecords' scratch

	procs    []*Proc
	nodes    []*Node
	services []*Node
	byName   map[string]int // process name -> endpoint
	net      *network
	sentinel *sentinel
	trace    *Trace
	faultRng *rand.Rand
	effects  []FaultEffect // one per Config.Faults entry (Result.Effects)
	keysSeen bool          // a client's write created a watched key (Result.KeysSeen)

	phase       phase
	stats       Stats
	internalErr error   // the engine broke an invariant (see fail)
	keyLog      keyLog  // what clients' writes did to the lock keys (Result.KeyLog)
	live        liveEnd // Config.EndWhenLive (live_end.go)
	// clusterMoved counts the -MOVED replies of a cluster world (cluster.go)
	clusterMoved int64
	// slots and migrations: a cluster world's slot configuration and its
	// slot migrations (cluster_migrate.go); cfail its own failure
	// detection (cluster_failover.go).
	slots      *clusterSlots
	migrations []*migration
	cfail      *clusterFailure
	gossipRng  *rand.Rand // a restarted cluster node's first gossip (cluster_gossip.go)
}

// Stats counts what happened in a run.
type Stats struct {
	Events      int64 `json:"events"`
	Commands    int64 `json:"commands"`
	NativeEvals int64 `json:"native_evals"`
	LuaEvals    int64 `json:"lua_evals"`
	Faults      int   `json:"faults"`
	Failovers   int   `json:"failovers"`
	Crashes     int   `json:"crashes"`
	Dials       int64 `json:"dials"`
	VirtualNS   int64 `json:"virtual_ns"`
}

// Result is what a run yields.
type Result struct {
	Seed        uint64
	Stats       Stats
	TraceSHA256 string
	TraceEvents int64
	TraceCapped bool
	History     []Event // the events a checker needs (ops, beliefs, faults); bounded by Config.MaxHistory
	// Effects has one entry per fault of Config.Faults: what the engine
	// saw it do (reach and bite). LockClock has one per client: the last
	// true time in the safety phase its lock read its clock's wall time
	// (Proc.LockClock's Now), -1 for never; LockMono the same for
	// its monotonic reading (Mono) and its sleeps (Sleep), which a drift reaches and a jump or an
	// offset never does. None is in the trace.
	Effects   []FaultEffect
	LockClock []int64
	LockMono  []int64
	// KeysSeen: a client's write created a watched lock key on a Redis
	// node at least once, so FaultEffect.OwnsKey can see a winning try
	// (false for a lock that keeps its state elsewhere: a consensus
	// store's members).
	KeysSeen bool
	// KeyLog is every change a client's write made to a watched lock key
	// on a primary, in the order they ran (at most MaxKeyLog; KeyLogCapped
	// says the rest was dropped). Not in the trace: run.Cause reads it.
	KeyLog       []KeyChange
	KeyLogCapped bool
	LiveAt       int64
}

// Run validates cfg and runs one world to completion inside a bubble.
func Run(bubble Bubble, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var res *Result
	var runErr error
	bubble(func() {
		w := newWorld(cfg)
		runErr = w.run()
		res = w.result()
	})
	if res == nil && runErr == nil {
		runErr = fmt.Errorf("sim: run did not complete (the bubble aborted)")
	}
	return res, runErr
}

func newWorld(cfg Config) *World {
	w := &World{
		cfg:     cfg,
		streams: NewStreams(cfg.Seed),
		bc:      newBubbleClock(),
		byName:  map[string]int{},
	}
	w.trace = newTrace(cfg.Trace, cfg.MaxHistory, cfg.HistoryCommands)
	w.trace.history = cfg.HistoryBuf[:0]
	w.faultRng = w.streams.Get("faults")
	w.net = newNetwork(w)
	for i, nc := range cfg.Nodes {
		n := newNode(w, i, nc)
		w.nodes = append(w.nodes, n)
		w.byName[nc.Name] = nodeAddr(i)
	}
	for i, sc := range cfg.Services {
		w.services = append(w.services, newService(w, i, sc))
		w.byName[sc.Name] = serviceBase + i
	}
	if cfg.Topology.Shards > 0 {
		w.slots = newClusterSlots()
	}
	if cfg.Topology.Replicated {
		w.sentinel = newSentinel(w)
		w.byName[SentinelName] = sentinelAddr
		if cfg.Topology.Shards > 0 && cfg.Topology.ClusterFailover {
			w.cfail = newClusterFailure(w)
		}
	}
	for i := 0; i < cfg.Clients; i++ {
		p := newProc(w, i, cfg)
		w.procs = append(w.procs, p)
		w.byName[p.name] = i
	}
	return w
}

func (w *World) run() error {
	w.phase = phaseSafety
	for _, n := range w.nodes {
		n.start()
	}
	for _, n := range w.services {
		n.start()
	}
	if w.sentinel != nil {
		w.sentinel.start()
	}
	w.effects = make([]FaultEffect, len(w.cfg.Faults))
	for i, f := range w.cfg.Faults {
		w.scheduleFault(i, f)
	}
	for _, p := range w.procs {
		p := p
		w.after(0, stepStart, func() { p.start() })
	}
	safety := int64(w.cfg.Duration)
	w.after(safety, stepHeal, w.heal)
	end := safety + int64(w.cfg.Liveness)
	w.after(end, stepStop, func() {
		if err := w.healedInvariants(); err != nil {
			w.fail(fmt.Errorf("at the end of the liveness phase (t=%v): %w", time.Duration(w.now()), err))
		}
		w.stop()
	})

	err := w.loop(end)
	w.shutdown()
	return err
}

// loop is the scheduler: wait until every goroutine is blocked, take the
// earliest event, advance the bubble clock to it, run it. One event at a
// time; client code runs only between events, one goroutine woken per event.
//
// After an event the scheduler does not wait for the goroutine the event
// woke to block again: the next event is always at a later instant (see
// below), so it arms its timer for the earliest event it knows and sleeps.
// The woken goroutine runs meanwhile; an event it schedules earlier than
// the armed time moves the timer (scheduleHeldLocked), never wakes the
// scheduler. The bubble clock advances only once every goroutine is
// blocked, and the scheduler waits for the others again (synctest.Wait)
// before it takes an event: a library timer due at the same instant as
// its own runs first. One park less for every event than waiting twice.
// ProgressEvery is how many scheduler steps apart Config.Progress is
// called.
const ProgressEvery = 1 << 16

func (w *World) loop(end int64) error {
	maxEvents := w.cfg.MaxEvents
	ran := false // an event just ran: what it woke may still be running
	for {
		if !ran {
			quiesce()
			w.flushRecords()
		}
		settled := !ran // every other goroutine is blocked
		ran = false
		w.mu.Lock()
		if w.ran != nil {
			w.recycleLocked(w.ran)
			w.ran = nil
		}
		ev := w.q.peek()
		for ev != nil && ev.dead {
			w.recycleLocked(w.q.pop())
			ev = w.q.peek()
		}
		if ev == nil || w.stopping {
			w.mu.Unlock()
			if settled {
				return nil
			}
			// What the last event woke may still schedule something.
			continue
		}
		// Every event gets an instant of its own: a goroutine woken at
		// true time t arms its library timers (retry backoff, tickers) from
		// t, so two wakes at one instant would make two timers fire at once
		// and run two goroutines concurrently. One nanosecond apart, they
		// fire one after the other.
		at := ev.at
		if w.steps > 0 && at <= w.lastAt {
			at = w.lastAt + 1
		}
		if now := w.now(); now < at {
			// Advance the bubble clock. Library timers due earlier fire on
			// the way; either way, look again after everyone settles, so a
			// goroutine woken at this very instant runs before the event.
			w.sleeping, w.wakeAt = true, at
			w.bc.timer.Reset(time.Duration(at - now))
			w.mu.Unlock()
			<-w.bc.timer.C
			w.mu.Lock()
			w.sleeping = false
			w.mu.Unlock()
			continue
		} else if now > at {
			at = now
		}
		if !settled {
			// Not reached: after an event the next one is at a later
			// instant. Settle first all the same.
			w.mu.Unlock()
			continue
		}
		ev = w.q.pop()
		w.cur.at, w.cur.src, w.cur.seq, w.cur.sent = ev.at, ev.src, ev.seq, 0
		if ev.op == opArrive {
			w.cur.sent = ev.sent // a command's send time (KeyChange.Sent)
		}
		ev.at = at
		ev.requeued = false
		if ev.target != nil && ev.target.pausedUntil > ev.at && !w.stopping {
			// A paused process handles nothing: the event waits for the resume.
			ev.at = ev.target.pausedUntil
			ev.hold = ev.at
			w.q.push(ev)
			w.mu.Unlock()
			continue
		}
		w.mu.Unlock()
		w.lastAt = ev.at
		w.steps++
		w.stats.Events++
		if w.cfg.Progress != nil && w.steps%ProgressEvery == 0 {
			w.cfg.Progress(time.Duration(ev.at), w.steps)
		}
		if maxEvents > 0 && w.steps > maxEvents {
			return fmt.Errorf("sim: event budget of %d exhausted at t=%v (raise it with --max-events, sim.Config.MaxEvents, or shorten the run)", maxEvents, time.Duration(ev.at))
		}
		if w.pendingAcks > 0 && ev.op == opFunc && ev.kind != stepRepl && ev.kind != stepReplAck {
			// The event may change what a pending ack depends on: the
			// acks whose events would have run before it arrive first.
			for _, n := range w.nodes {
				n.flushAcks()
			}
		}
		w.runEvent(ev)
		ran = true
		if !ev.requeued {
			w.ran = ev
		}
		if w.internalErr != nil {
			return w.internalErr
		}
	}
}

// runEvent does what ev says, at its time, on the scheduler.
func (w *World) runEvent(ev *event) {
	if ev.link && w.net.held(ev) {
		return
	}
	switch ev.op {
	case opFunc:
		ev.fn()
	case opArrive:
		ev.c.node.arrive(ev.c, ev.cmds)
	case opReply:
		ev.c.deliverReply(ev.data)
	case opDeadline:
		ev.c.deadlineFired(ev.arg)
	case opWake:
		w.mu.Lock()
		delete(ev.target.sleepers, ev.ch)
		w.mu.Unlock()
		ev.ch <- struct{}{}
	}
}

// newEventLocked returns a zero event, reused if one is free. The caller
// holds w.mu.
func (w *World) newEventLocked() *event {
	if n := len(w.free); n > 0 {
		ev := w.free[n-1]
		w.free = w.free[:n-1]
		return ev
	}
	return new(event)
}

// recycleLocked frees an event that ran or was dropped: nothing refers to
// it any more (a connection's deadline event is forgotten by the
// connection before it is cancelled or once it has run). The caller holds
// w.mu.
func (w *World) recycleLocked(ev *event) {
	*ev = event{}
	w.free = append(w.free, ev)
}

// now is the current true time.
func (w *World) now() int64 { return w.bc.trueNow() }

// after schedules an engine event at true time at. Call from the scheduler only.
func (w *World) after(at int64, kind stepKind, fn func()) {
	w.afterFor(at, nil, kind, fn)
}

// afterHeld schedules an engine event put off until hold by a pause or a
// partition (at ≥ hold): the heal brings it forward.
func (w *World) afterHeld(at, hold int64, p *Proc, kind stepKind, fn func()) {
	w.mu.Lock()
	w.seq++
	ev := w.newEventLocked()
	ev.at, ev.hold, ev.seq, ev.target, ev.kind, ev.fn = at, hold, w.seq, p, kind, fn
	w.q.push(ev)
	w.mu.Unlock()
}

// afterFor schedules an engine event targeted at a process: it is deferred
// while the process is paused.
func (w *World) afterFor(at int64, p *Proc, kind stepKind, fn func()) {
	w.afterHeld(at, 0, p, kind, fn)
}

// afterLinkLocked schedules an engine event for a message on the link
// a->b sent at sent: a partition holds it on arrival (network.held). The
// caller holds w.mu and sets what the event does.
func (w *World) afterLinkLocked(at int64, p *Proc, kind stepKind, a, b int, sent int64) *event {
	w.seq++
	ev := w.newEventLocked()
	ev.at, ev.seq, ev.target, ev.kind = at, w.seq, p, kind
	ev.link, ev.a, ev.b, ev.sent = true, a, b, sent
	w.q.push(ev)
	return ev
}

// scheduleFrom queues an event on behalf of a goroutine other than the
// scheduler (a client writing, sleeping or waiting on a deadline). Its key
// is the caller's own (src, seq), so concurrent callers cannot reorder the
// queue. The caller holds w.mu.
func (w *World) scheduleFromLocked(at int64, src uint64, seq uint64, target *Proc, kind stepKind, fn func()) *event {
	return w.scheduleHeldLocked(at, 0, src, seq, target, kind, fn)
}

// scheduleHeldLocked is scheduleFromLocked for an event put off until hold
// by a fault (see afterHeld).
func (w *World) scheduleHeldLocked(at, hold int64, src uint64, seq uint64, target *Proc, kind stepKind, fn func()) *event {
	ev := w.newEventLocked()
	ev.at, ev.hold, ev.src, ev.seq, ev.target, ev.kind, ev.fn = at, hold, src, seq, target, kind, fn
	w.q.push(ev)
	if w.sleeping && at < w.wakeAt {
		// The scheduler sleeps until a later event: bring its timer
		// forward (a time already past fires at once or once every
		// goroutine is blocked; either way the scheduler waits for the
		// others before it takes an event).
		w.wakeAt = at
		w.bc.timer.Reset(time.Duration(at - w.now()))
	}
	return ev
}

func (w *World) heal() {
	w.phase = phaseLiveness
	w.live.healAt = w.now()
	w.record(Event{Proc: "world", Kind: evt.KindHeal})
	w.net.healAll()
	for _, p := range w.procs {
		p.pausedUntil = 0
		p.arms.Clear()
		p.clk.Resync(w.now())
	}
	for _, n := range w.nodes {
		n.heal()
	}
	for _, n := range w.services {
		n.heal()
	}
	if w.cfail != nil {
		w.cfail.heal()
	}
	if w.sentinel != nil {
		w.sentinel.heal()
	}
	w.healMigrations()
	// What a pause or partition put off happens now, not when the fault
	// would have ended: a client paused past the heal resumes at the heal
	// (and writes with what it believed before), as a GC pause ends.
	w.mu.Lock()
	w.q.release(w.now())
	w.mu.Unlock()
	if healHook != nil {
		healHook(w)
	}
	if err := w.healedInvariants(); err != nil {
		w.fail(fmt.Errorf("after the heal at t=%v: %w", time.Duration(w.now()), err))
	}
}

// healHook, set by tests only, breaks the world after the heal to prove
// the invariants are checked.
var healHook func(*World)

// fail ends the run with an internal error: the engine broke one of its
// own invariants. It is never a verdict on the lock.
func (w *World) fail(err error) {
	if w.internalErr == nil {
		w.internalErr = fmt.Errorf("sim: internal error (a locksim bug, not a verdict on the lock): %w", err)
	}
}

func (w *World) stop() {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.record(Event{Proc: "world", Kind: evt.KindStop})
}

// shutdown releases every blocked client goroutine so the bubble can end:
// connections fail, sleeps exit the goroutine, contexts are cancelled.
func (w *World) shutdown() {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.stats.VirtualNS = w.now()
	for _, p := range w.procs {
		p.cancel()
		p.wakeAll()
	}
	for _, p := range w.procs {
		<-p.exited
		p.wakeAll() // sleepers that went to sleep during the first round
		p.goroutines.Wait()
	}
	for _, p := range w.procs {
		for _, c := range p.clients {
			c.Close()
		}
		for _, c := range p.services {
			c.Close()
		}
		p.closeCluster()
	}
	for _, n := range w.nodes {
		n.close()
	}
	for _, n := range w.services {
		n.close()
	}
	w.trace.finish()
	if w.shards() > 0 {
		settleClusterReloads()
	}
}

func (w *World) result() *Result {
	wall, mono := w.lockClockReads()
	return &Result{
		Seed:        w.cfg.Seed,
		Stats:       w.stats,
		TraceSHA256: w.trace.sum(),
		TraceEvents: w.trace.n,
		TraceCapped: w.trace.capped,
		History:     w.trace.history,
		Effects:     w.finishEffects(),
		LockClock:   wall,
		LockMono:    mono,
		KeysSeen:    w.keysSeen,
		KeyLog:      w.keyLog.changes, KeyLogCapped: w.keyLog.capped,
		LiveAt: w.live.at,
	}
}

// lookup resolves a process name to its endpoint.
func (w *World) lookup(name string) (int, bool) {
	a, ok := w.byName[name]
	return a, ok
}

// groupCount is the number of primary/replica groups.
func (w *World) groupCount() int { return w.cfg.groupCount() }

// groupSize is the number of nodes in each group.
func (w *World) groupSize() int { return max(1, len(w.cfg.Nodes)/w.groupCount()) }

// groupFirst is group g's first node: its primary at the start.
func (w *World) groupFirst(g int) int { return g * w.groupSize() }
