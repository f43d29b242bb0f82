package realredis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/locksim/locksim/clock"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/reap"
	"github.com/locksim/locksim/sim"
)

// stopTimeout bounds how long clients may take to return after the stop.
const stopTimeout = 10 * time.Second

// world is one real run in progress.
type world struct {
	job   *Job
	cfg   sim.Config
	ctx   context.Context
	start time.Time
	stop  chan struct{}

	mu      sync.Mutex
	events  []sim.Event
	healed  bool
	stopped bool
	dials   []string

	servers []*server
	repl    *replication // a replicated world's Sentinels and gateways
	clus    *clusterSide // a cluster world's gateways and layout (cluster.go)
	store   *storeServer
	links   *links
	procs   []*proc
	coord   *coord // a real coordination service (consensus.go)

	goroutines  sync.WaitGroup
	stats       sim.Stats
	clockNote   string
	errs        []error  // harness errors during the run (a signal that failed)
	notInjected []string // Info.NotInjected
	downs       map[int]int
	downSince   map[int]int64 // true time each down node was killed
	drifts      []*drift
	// skipped is Info.Skipped.
	skipped map[int]string
	// What each fault did (effects.go): its record, by fault index; the
	// nodes it acted on; each node's live lock keys when last read; the
	// failovers awaiting Sentinel's promotion.
	effects  []sim.FaultEffect
	targets  map[int][]int
	lastLive map[int]map[string]string
	failing  []pendingFailover
	// clusterCuts: the faults a cluster's own promotion may be credited
	// to (cluster_own_effects.go).
	clusterCuts []clusterCut

	migrations []*realMigration // slot migrations begun (cluster_migrate.go)
}

func (w *world) now() int64 { return int64(time.Since(w.start)) }

func (w *world) stopping() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

func (w *world) addLocked(ev sim.Event) {
	if w.stopped && ev.Kind != event.KindStop {
		return // the run is over: as in the simulator, nothing more is recorded
	}
	w.events = append(w.events, ev)
}

func (w *world) record(ev sim.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev.T == 0 {
		ev.T = w.now()
	}
	w.addLocked(ev)
}

func (w *world) sawDial(addr string) {
	w.mu.Lock()
	w.dials = append(w.dials, addr)
	w.mu.Unlock()
}

func (w *world) harnessError(err error) {
	w.mu.Lock()
	w.errs = append(w.errs, err)
	w.mu.Unlock()
}

// Info is what a real run reports beside its judged history.
type Info struct {
	TTL        time.Duration // the lease the lock ran with
	Scale      float64       // every duration of the scenario × Scale
	NodeClocks string        // how node clock faults were carried out ("" when there were none)
	// NotInjected names each fault the real arm could not carry out at
	// all, and why (not counted as injected, no fault event).
	NotInjected []string
	Dir         string        // the temp dir (removed at the end)
	Listeners   []string      // every address the run listened on
	Dials       []string      // every address a client dialled
	Wall        time.Duration // wall time of the run, set-up included
	// ReadRTT is the storage reads' round trips (set by RunAndJudge).
	ReadRTT RTT
	Stalls  Stalls // the harness's own stalls in true time (stall.go)
	// Skipped says why fault i of the schedule was not carried out at all (reach.go).
	Skipped map[int]string
	// Drivers is each client's driver's stderr, bounded (driver_stderr.go).
	Drivers []DriverStderr
}

// setup starts the servers, the storage, the proxies and the clients.
func (w *world) setup(dir string) error {
	cfg := w.cfg
	// A design on a real coordination service leaves the Redis nodes idle.
	replicated := cfg.Topology.Replicated && consensusKind(w.job.Parts.Lock) == "" && cfg.Topology.Shards == 0
	var err error
	switch {
	case cfg.Topology.Shards > 0:
		err = w.setupCluster(dir)
	case replicated:
		err = w.setupReplicated(dir)
	}
	if err != nil {
		return err
	}
	for i, n := range cfg.Nodes {
		if replicated || w.clus != nil {
			break
		}
		port, err := freePort()
		if err != nil {
			return err
		}
		d := filepath.Join(dir, n.Name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		s := &server{name: n.Name, port: port, dir: d, persistence: string(n.Persistence)}
		w.servers = append(w.servers, s)
		if err := s.start(w.ctx); err != nil {
			return err
		}
		_ = i
	}
	if consensusKind(w.job.Parts.Lock) != "" && len(cfg.Services) > 1 {
		cfg.Services = cfg.Services[:1] // the simulated store's members: the real service stands in for them
	}
	if len(cfg.Services) > 1 {
		return fmt.Errorf("the real arm runs one storage service, the scenario has %d", len(cfg.Services))
	}
	if len(cfg.Services) == 1 {
		sc := cfg.Services[0]
		st, err := newStoreServer(sc.Name, sc.New(), w.now, w.record)
		if err != nil {
			return err
		}
		w.store = st
	}
	if w.links == nil {
		w.links = newLinks()
	}
	streams := sim.NewStreams(cfg.Seed)
	for i := 0; i < cfg.Clients; i++ {
		clk, err := clock.NewModel(0, cfg.ClientClockOffset(i), cfg.ClientDriftPPM(i))
		if err != nil {
			return err
		}
		p := &proc{w: w, id: i, name: fmt.Sprintf("c%d", i), rng: streams.Get(fmt.Sprintf("client/%d", i)), clk: clk, wake: make(chan struct{})}
		var nodeLinks []string
		for _, s := range w.servers {
			addr, err := w.links.add(p.name, s.name, s.addr())
			if err != nil {
				return err
			}
			nodeLinks = append(nodeLinks, addr)
			p.nodes = append(p.nodes, p.client(addr, false))
		}
		if w.store != nil {
			addr, err := w.links.add(p.name, w.store.name, w.store.addr())
			if err != nil {
				return err
			}
			p.store = p.client(addr, true)
		}
		if w.repl != nil {
			routes := map[string]string{}
			p.drvRoutes = map[string]string{}
			for x, g := range w.repl.gateways {
				routes[g.addr()] = nodeLinks[x] // the node as Sentinel names it: this client's link to it
				p.drvRoutes[g.addr()] = nodeLinks[x]
			}
			for _, sp := range w.repl.sentinels {
				a, err := w.links.addNamed(p.name+"->"+sp.name, p.name, sim.SentinelName, sp.addr())
				if err != nil {
					return err
				}
				routes[sp.addr()] = a
				p.drvSentinels = append(p.drvSentinels, a)
			}
			p.primary = p.failoverClient(routes)
		}
		if w.clus != nil {
			routes := map[string]string{}
			for x, g := range w.clus.gateways {
				routes[g.addr()] = nodeLinks[x] // the node as the cluster announces it
				// go-redis drops a loopback host from a slot map that
				// ClusterSlots loads (no origin to put in its place).
				_, port, _ := net.SplitHostPort(g.addr())
				routes[":"+port] = nodeLinks[x]
			}
			for cl := 0; cl < w.clus.clusters; cl++ {
				p.clusters = append(p.clusters, p.clusterClient(routes, cl))
			}
			p.cluster = p.clusters[0]
		}
		w.procs = append(w.procs, p)
	}
	if consensusKind(w.job.Parts.Lock) != "" {
		return w.setupCoord(dir)
	}
	return nil
}

// teardown ends every process and proxy the run started.
func (w *world) teardown() {
	w.closeDrivers()
	for _, p := range w.procs {
		for _, c := range p.nodes {
			_ = c.Close()
		}
		if p.store != nil {
			_ = p.store.Close()
		}
		if p.primary != nil {
			_ = p.primary.Close()
		}
		for _, c := range p.clusters {
			_ = c.Close()
		}
		for _, c := range p.slotsClients {
			_ = c.Close()
		}
	}
	if w.repl != nil {
		w.repl.close()
	}
	if w.clus != nil {
		w.clus.close()
	}
	if w.links != nil {
		w.links.close()
	}
	if w.store != nil {
		w.store.close()
	}
	for _, s := range w.servers {
		s.close()
	}
	if w.coord != nil {
		w.coord.ens.Close()
	}
}

// setupHook, set by tests only, runs once everything is started.
var setupHook func(*world) error

// Run runs the job against real redis-server processes: the fault
// schedule in real time, the heal, the liveness phase. It returns the
// history as a sim.Result (true time = real time since the start) for the
// job's judging. Every process, proxy and the temp dir are gone when it
// returns, whatever happened (error, ctx cancelled by Ctrl-C).
func (j *Job) Run(ctx context.Context, tempParent string) (res *sim.Result, info *Info, err error) {
	if err := CheckBinaries(); err != nil {
		return nil, nil, err
	}
	began := time.Now()
	// What runs killed before their clean-up left (an etcd WAL, Redis and
	// ZooKeeper folders, drivers' faketime files) goes first; only dirs of
	// ours whose owner is dead (reap.SweepTemp).
	_, _ = reap.SweepTemp(tempParent, "locksim-real")
	_, _ = reap.SweepTemp("", "locksim-driver")
	dir, release, err := reap.TempDir(tempParent, "locksim-real")
	if err != nil {
		return nil, nil, fmt.Errorf("temp dir: %w", err)
	}
	defer release()
	cctx, cancel := context.WithCancel(ctx)
	w := &world{job: j, cfg: j.Config, ctx: cctx, stop: make(chan struct{}), downs: map[int]int{}, downSince: map[int]int64{},
		effects: make([]sim.FaultEffect, len(j.Config.Faults)), targets: map[int][]int{}}
	info = &Info{TTL: j.TTL, Scale: j.Scale, Dir: dir}
	defer func() {
		cancel()
		w.teardown()
		if rerr := removeAll(dir); rerr != nil && err == nil {
			err = fmt.Errorf("removing %s: %w", dir, rerr)
		}
		info.Wall = time.Since(began)
	}()
	w.start = time.Now()
	if err := w.setup(dir); err != nil {
		return nil, info, err
	}
	info.Listeners = w.listeners()
	w.startDrivers() // before true time 0: an interpreter's start-up is not the scenario's time
	if setupHook != nil {
		if err := setupHook(w); err != nil {
			return nil, info, err
		}
	}
	w.start = time.Now() // true time 0: the clients start now
	stalls := w.startStalls()
	w.watchSentinel()
	w.watchClusterRoles() // cluster_own.go
	w.watchSessions()     // consensus_watch.go: a holder's session or lease expiring, seen by the servers

	safety, end := j.Config.Duration, j.Config.Duration+j.Config.Liveness
	var timers []*time.Timer
	for i, f := range j.Config.Faults {
		if f.Start >= safety {
			continue
		}
		i, f := i, f
		timers = append(timers, time.AfterFunc(f.Start, func() { w.startFault(i, f) }))
	}
	healDone := make(chan struct{})
	timers = append(timers, time.AfterFunc(safety, func() { w.heal(); close(healDone) }))
	var clients sync.WaitGroup
	for _, p := range w.procs {
		clients.Add(1)
		go func(p *proc) {
			defer clients.Done()
			runClient(p, j)
		}(p)
	}
	interrupted := false
	select {
	case <-time.After(end):
	case <-ctx.Done():
		interrupted = true
	}
	for _, t := range timers {
		t.Stop()
	}
	w.mu.Lock()
	w.addLocked(sim.Event{T: w.now(), Proc: "world", Kind: event.KindStop})
	w.stopped = true
	w.mu.Unlock()
	close(w.stop)
	cancel()
	done := make(chan struct{})
	go func() { clients.Wait(); w.goroutines.Wait(); close(done) }()
	var runErr error
	select {
	case <-done:
	case <-time.After(stopTimeout):
		runErr = fmt.Errorf("clients did not return within %v of the stop", stopTimeout)
	}
	w.stopDrift()
	info.Stalls = stalls()
	info.Drivers = w.driverStderrs()
	effects, lockWall, lockMono := w.finishEffects() // effects.go
	if interrupted {
		return nil, info, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	w.mu.Lock()
	info.Dials = slices.Clone(w.dials)
	info.NodeClocks = w.clockNote
	info.NotInjected, info.Skipped = slices.Clone(w.notInjected), maps.Clone(w.skipped)
	events := slices.Clone(w.events)
	errs := slices.Clone(w.errs)
	w.stats.VirtualNS = int64(end)
	stats := w.stats
	w.mu.Unlock()
	if len(errs) > 0 && runErr == nil {
		runErr = fmt.Errorf("the harness could not carry out the schedule: %w", errors.Join(errs...))
	}
	sort.SliceStable(events, func(a, b int) bool { return events[a].T < events[b].T })
	return &sim.Result{Seed: j.Config.Seed, Stats: stats, History: events, TraceEvents: int64(len(events)),
		Effects: effects, LockClock: lockWall, LockMono: lockMono}, info, runErr
}

// beginFault carries out fault i now, and schedules its end. armed: the
// fault was armed at a point and counted then (startFault), so firing it
// counts it no more.
func (w *world) beginFault(i int, f faults.Fault, armed bool) {
	f, ok := w.carryOut(i, f) // reach.go: the leader resolved; not carried out at all: listed, not counted
	if !ok {
		return
	}
	w.mu.Lock()
	if w.healed || w.stopped {
		w.mu.Unlock()
		return
	}
	now := w.now()
	if !armed {
		w.stats.Faults++
	}
	w.addLocked(sim.Event{T: now, Proc: "world", Kind: event.KindFault, Detail: f.String(), Fault: i + 1})
	if e := w.effectLocked(i); e != nil {
		e.Started = true
	}
	end := int64(f.End())
	var onEnd func()
	switch f.Kind {
	case faults.ClientPause:
		for _, p := range w.faultProcs(f.Targets) {
			if f.At != "" {
				p.arms.ArmPause(i, f)
				continue
			}
			p.paused = max(p.paused, end)
		}
	case faults.ClockJump, faults.ClockDrift:
		for _, p := range w.faultProcs(f.Targets) {
			if f.Kind == faults.ClockJump {
				p.clk.Jump(now, f.Jump)
			} else if err := p.clk.SetDrift(now, f.DriftPPM); err == nil {
				onEnd = func() {
					for _, p := range w.faultProcs(f.Targets) {
						_ = p.clk.SetDrift(w.now(), 0)
					}
				}
			}
		}
	}
	w.mu.Unlock()

	// Effects outside the lock: signals, proxies, scripts.
	w.noteClusterCut(i, f) // cluster_own_effects.go
	switch f.Kind {
	case faults.NodePause:
		idx := w.faultServers(f.Targets)
		w.noteNodeFault(i, f, idx) // effects.go: its nodes' live keys, before it stops them
		for _, n := range idx {
			if err := w.servers[n].pause(); err != nil {
				w.harnessError(fmt.Errorf("fault %d: SIGSTOP %s: %w", i+1, w.servers[n].name, err))
			}
		}
		resume := w.coordPause(i, f.Targets) // consensus.go
		onEnd = func() {
			for _, n := range idx {
				_ = w.servers[n].resume()
			}
			resume()
		}
	case faults.Failover:
		onEnd = w.failover(i, f) // crash.go
	case faults.SlotMigration:
		onEnd = w.slotMigration(i, f) // cluster_migrate.go
	case faults.Crash:
		idx := w.faultServers(f.Targets)
		w.noteNodeFault(i, f, idx)
		for _, n := range idx {
			w.crash(n)
		}
		restart := w.coordCrashes(f.Targets) // consensus.go
		onEnd = func() {
			for _, n := range idx {
				w.crashEnded(n)
			}
			restart()
		}
	case faults.Partition, faults.Delay:
		key, _, err := w.links.applyAs(i+1, f) // gate.go counts what it holds as fault i+1's
		if err != nil {
			w.harnessError(fmt.Errorf("fault %d: %w", i+1, err))
		}
		if w.isHealed() { // the heal ran since the check above: it lifted nothing of this
			w.links.lift(key)
			return
		}
		onEnd = func() { w.links.lift(key) }
		if heal := w.coordPartition(i, f); heal != nil { // etcd's member links (consensus.go)
			// Its chunks are not counted (realcoord cuts them), but raft's
			// heartbeats run on every member link all the time (etcd's
			// every 100 ms): a cut member link holds lock traffic.
			w.noteEffect(i, func(e *sim.FaultEffect) { e.Messages += len(w.memberPairs(f)) })
			onEnd = func() { w.links.lift(key); heal() }
		}
		if f.Kind == faults.Delay {
			// What was sent in the window arrives Delay late: its
			// window stays until then (later data goes through at once).
			onEnd = func() { time.AfterFunc(f.Delay, func() { w.links.lift(key) }) }
		}
	case faults.ClockJump:
		idx := w.faultServers(f.Targets)
		if len(idx) > 0 || len(w.coordTargets(f.Targets)) > 0 {
			w.noteNodeFault(i, f, idx)
		}
		for _, n := range idx {
			w.jumpNode(n, f.Jump)
		}
		w.coordClock(i, f) // consensus.go
	case faults.ClockDrift:
		idx := w.faultServers(f.Targets)
		if len(idx) > 0 || len(w.coordTargets(f.Targets)) > 0 {
			w.noteNodeFault(i, f, idx)
		}
		if len(idx) > 0 {
			d := w.startDrift(i, idx, f.DriftPPM)
			prev := onEnd
			onEnd = func() {
				d.end()
				if prev != nil {
					prev()
				}
			}
		}
	}
	if f.Duration > 0 {
		fn := onEnd
		// The simulator records a fault-end for these kinds only.
		mark := slices.Contains([]faults.Kind{faults.ClockDrift, faults.Partition, faults.Delay, faults.Loss, faults.Crash, faults.Failover}, f.Kind)
		time.AfterFunc(time.Duration(end-w.now()), func() {
			w.mu.Lock()
			if w.healed || w.stopped {
				w.mu.Unlock()
				return // the heal already lifted it
			}
			if mark {
				w.addLocked(sim.Event{T: w.now(), Proc: "world", Kind: event.KindFaultEnd, Detail: f.String(), Fault: i + 1})
			}
			w.mu.Unlock()
			if fn != nil {
				fn()
			}
		})
	}
}

// heal lifts every fault at the end of the safety phase: proxies clear,
// paused nodes continue, crashed nodes restart, paused clients resume,
// client clocks resync (node clocks were never moved: their jumps and
// drift acted on the keys' TTLs, which stay as they are).
func (w *world) heal() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.healed = true
	now := w.now()
	w.addLocked(sim.Event{T: now, Proc: "world", Kind: event.KindHeal})
	for _, p := range w.procs {
		p.paused = 0
		p.arms.Clear()
		close(p.wake)
		p.wake = make(chan struct{})
		p.clk.Resync(now)
	}
	var down []int
	for n, c := range w.downs {
		if c > 0 {
			down = append(down, n)
			w.downs[n] = 1
		}
	}
	sort.Ints(down)
	w.mu.Unlock()
	w.stopDrift()
	w.links.liftAll()
	for _, s := range w.servers {
		_ = s.resume()
	}
	for _, n := range down {
		w.crashEnded(n)
	}
	w.healMigrations() // cluster_migrate.go
	w.coordHeal()
}
