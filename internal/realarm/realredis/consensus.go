package realredis

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/realarm/realcoord"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// ConsensusTTL is the lease a design on a real coordination service runs
// with unless told otherwise: etcd leases are whole seconds (1 s at
// least), and a ZooKeeper session of 500 ms is within reach of the JVM's
// own hiccups on a busy 2-core machine.
const ConsensusTTL = time.Second

// MemberClockNote is what a real run reports for a clock fault on a real
// coordination service's member that it did not carry out: any on etcd
// (libfaketime does not reach a Go binary: docs/CONSENSUS.md) and a
// drift on ZooKeeper (a jump is carried out: MemberClockMechanism). Both
// services time sessions and leases on a monotonic clock (ZooKeeper:
// System.nanoTime; etcd: Go's monotonic reading).
const MemberClockNote = "member clock faults not carried out on the real coordination service (sessions and leases run on monotonic clocks)"

// coord is a world's real coordination service (a design with Info.Real).
type coord struct {
	ens        *realcoord.Ensemble
	downs      map[int]int
	since      map[int]int64
	gone       []goneNode // nodes or keys the session watcher saw go (consensus_watch.go), at most maxGone
	goneCapped bool       // the watcher saw more than maxGone go
	peerHeals  []func()   // etcd member links cut by partitions in force (coordPartition)
}

// consensusKind is the real service lock runs on ("" for a Redis design).
func consensusKind(info locks.Info) realcoord.Kind { return realcoord.Kind(info.Real) }

// setupCoord starts the lock's real coordination service and gives every
// client its members through links of its own (c0->zk1, ...). The
// ensemble's start-up (three JVMs: seconds) is before true time 0.
func (w *world) setupCoord(dir string) error {
	kind := consensusKind(w.job.Parts.Lock)
	// ZooKeeper's members reach each other through links of their own
	// (zk0->zk1, ...), so that a partition can cut them; etcd's, given a
	// PeerFunc, through peer proxies of the ensemble's (coordPartition).
	peer := func(from, to, addr string) (string, error) {
		return w.links.addNamed(from+"->"+to+"@"+addr, from, to, addr)
	}
	opt := realcoord.StartOptions{Peer: peer, FakeClocks: kind == realcoord.ZooKeeper && w.jumpsMemberClocks()}
	ens, err := realcoord.StartOpts(w.ctx, kind, filepath.Join(dir, string(kind)), w.job.Parts.Lock.TTL, opt)
	if err != nil {
		return err
	}
	w.coord = &coord{ens: ens, downs: map[int]int{}, since: map[int]int64{}}
	for _, p := range w.procs {
		ms := &locks.Members{}
		for _, m := range ens.Members {
			addr, err := w.links.add(p.name, m.Name, m.Addr())
			if err != nil {
				return err
			}
			ms.Addrs = append(ms.Addrs, addr)
		}
		dial := loopbackDialer(w.sawDial)
		ms.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &gatedConn{Conn: c, p: p}, nil
		}
		p.members = ms
	}
	return nil
}

// Members is the real coordination service as this client reaches it
// (scenarios.RunClient hands it to the lock as locks.Env.Members).
func (p *proc) Members() *locks.Members { return p.members }

// coordPartition cuts the etcd members' links to each other that
// partition f separates (a member in From and another in To), both ways
// (a one-way fault too: a proxied connection carries both directions of
// raft traffic), and returns what heals them (nil: none cut). ZooKeeper's
// member links are the world's own links, cut by links.apply.
func (w *world) coordPartition(i int, f faults.Fault) (heal func()) {
	pairs := w.memberPairs(f)
	if len(pairs) == 0 {
		return nil
	}
	h, err := w.coord.ens.CutPeers(pairs)
	if err != nil {
		w.harnessError(fmt.Errorf("fault %d: %w", i+1, err))
		return nil
	}
	w.mu.Lock()
	w.coord.peerHeals = append(w.coord.peerHeals, h)
	w.mu.Unlock()
	return h
}

// coordTargets are the indices of the members named in names.
func (w *world) coordTargets(names []string) []int {
	if w.coord == nil {
		return nil
	}
	var out []int
	for i, m := range w.coord.ens.Members {
		if slices.Contains(names, m.Name) {
			out = append(out, i)
		}
	}
	return out
}

// resolveLeader is f with its faults.Leader target resolved to the member
// that leads now, as the servers say (realcoord.Ensemble.Leader: srvr's
// Mode on ZooKeeper, the status endpoint's leader on etcd); false when f
// names the leader and none leads now (or there is no coordination
// service): the fault is then not injected.
func (w *world) resolveLeader(f faults.Fault) (faults.Fault, bool) {
	if !f.NamesLeader() {
		return f, true
	}
	name := ""
	if w.coord != nil {
		if l := w.coord.ens.Leader(); l >= 0 {
			name = w.coord.ens.Members[l].Name
		}
	}
	return f.WithLeader(name), name != ""
}

// coordPause SIGSTOPs the members named in targets (fault i) and
// returns what SIGCONTs them.
func (w *world) coordPause(i int, targets []string) (resume func()) {
	members := w.coordTargets(targets)
	for _, m := range members {
		if err := w.coord.ens.Pause(m); err != nil {
			w.harnessError(fmt.Errorf("fault %d: SIGSTOP %s: %w", i+1, w.coord.ens.Members[m].Name, err))
		}
	}
	return func() {
		for _, m := range members {
			_ = w.coord.ens.Resume(m)
		}
	}
}

// coordCrashes crashes the members named in targets and returns what
// restarts them. A world's Redis nodes, idle beside a real coordination
// service, take a failover fault as a crash of n0 (startFault).
func (w *world) coordCrashes(targets []string) (restart func()) {
	members := w.coordTargets(targets)
	for _, m := range members {
		w.coordCrash(m)
	}
	return func() {
		for _, m := range members {
			w.coordCrashEnded(m)
		}
	}
}

// MemberFakeTimeEnv opts a real run in to carrying out clock jumps of
// ZooKeeper members under libfaketime (realcoord/fakeclock.go). Not by
// default: measured 2026-11-27 10:21, a member-crashes × zk-lock run with
// its members under libfaketime used 40.7 s user + 35.0 s system CPU in
// 54 s of wall time, and three JVMs under it took 14–30 s to serve where
// they take 1.5–2.1 s without (TestZKClockJump). (That run's liveness
// verdict predates the quorum-link relay, which fixed the deadlock it
// shared with runs without libfaketime: docs/PARITY.md §7.)
// docs/CONSENSUS.md.
const MemberFakeTimeEnv = "LOCKSIM_MEMBER_FAKETIME"

// jumpsMemberClocks reports whether the world's schedule jumps a
// member's clock and the run opted in (MemberFakeTimeEnv=1): only then
// are ZooKeeper's members started under libfaketime.
func (w *world) jumpsMemberClocks() bool {
	if os.Getenv(MemberFakeTimeEnv) != "1" {
		return false
	}
	members := coordMemberNames()
	for _, f := range w.cfg.Faults {
		if f.Kind != faults.ClockJump {
			continue
		}
		for _, t := range f.Targets {
			if slices.Contains(members, t) || t == faults.Leader { // the leader is a member too
				return true
			}
		}
	}
	return false
}

// MemberClockMechanism is what a real run reports when it stepped
// ZooKeeper members' wall clocks.
const MemberClockMechanism = "member clock jumps stepped each ZooKeeper member's wall clock with libfaketime (CLOCK_REALTIME only: the monotonic clock, on which sessions are timed, is not stepped, as on a real machine); set back at the heal"

// coordClock carries out clock fault f on the members it names: a jump
// of a ZooKeeper member under libfaketime steps its wall clock; anything
// else (a drift, or etcd, which libfaketime does not reach) is noted as
// not carried out.
func (w *world) coordClock(i int, f faults.Fault) {
	members := w.coordTargets(f.Targets)
	if len(members) == 0 {
		return
	}
	note := MemberClockNote
	if f.Kind == faults.ClockJump && w.coord.ens.FakeClocks() {
		note = MemberClockMechanism
		for _, m := range members {
			if err := w.coord.ens.JumpClock(m, f.Jump); err != nil {
				w.harnessError(fmt.Errorf("fault %d: %w", i+1, err))
			}
		}
	}
	w.mu.Lock()
	if w.clockNote == "" || note == MemberClockNote {
		w.clockNote = note
	}
	w.mu.Unlock()
}

// coordCrash SIGKILLs member i (crashes of one member combine).
func (w *world) coordCrash(i int) {
	c := w.coord
	w.mu.Lock()
	c.downs[i]++
	first := c.downs[i] == 1
	if first {
		w.stats.Crashes++
		c.since[i] = w.now()
		w.addLocked(sim.Event{T: c.since[i], Proc: c.ens.Members[i].Name, Kind: event.KindCrash, Detail: string(c.ens.Kind) + " SIGKILL"})
	}
	w.mu.Unlock()
	if first {
		c.ens.Kill(i)
	}
}

// coordCrashEnded restarts member i when its last crash ends.
func (w *world) coordCrashEnded(i int) {
	c := w.coord
	w.mu.Lock()
	if c.downs[i] > 0 {
		c.downs[i]--
	}
	restart := c.downs[i] == 0 && c.ens.Down(i)
	w.mu.Unlock()
	if !restart {
		return
	}
	if err := c.ens.Restart(i); err != nil {
		if w.ctx.Err() == nil {
			w.harnessError(fmt.Errorf("restart %s: %w", c.ens.Members[i].Name, err))
		}
		return
	}
	now := w.now()
	modes := c.ens.Modes() // each member's mode then (not under w.mu: it asks the members)
	w.mu.Lock()
	w.addLocked(sim.Event{T: now, Proc: c.ens.Members[i].Name, Kind: event.KindRestart,
		Detail: fmt.Sprintf("serving again %v after the kill (%s)", time.Duration(now-c.since[i]).Round(time.Millisecond), modes)})
	w.mu.Unlock()
}

// coordHeal heals cut member links, resumes paused members and restarts
// crashed ones.
func (w *world) coordHeal() {
	c := w.coord
	if c == nil {
		return
	}
	var down []int
	w.mu.Lock()
	for i, n := range c.downs {
		if n > 0 {
			c.downs[i] = 1
			down = append(down, i)
		}
	}
	w.mu.Unlock()
	slices.Sort(down)
	w.mu.Lock()
	heals := c.peerHeals
	c.peerHeals = nil
	w.mu.Unlock()
	for _, h := range heals {
		h()
	}
	if err := c.ens.ResetClocks(); err != nil {
		w.harnessError(fmt.Errorf("heal: %w", err))
	}
	for i := range c.ens.Members {
		_ = c.ens.Resume(i)
	}
	for _, i := range down {
		w.coordCrashEnded(i)
	}
}

// coordListeners are the members' client addresses.
func (w *world) coordListeners() []string {
	if w.coord == nil {
		return nil
	}
	var out []string
	for _, m := range w.coord.ens.Members {
		out = append(out, m.Addr())
		if m.PeerProxy != 0 {
			out = append(out, net.JoinHostPort(m.IP, strconv.Itoa(m.PeerProxy)))
		}
	}
	return out
}

// coordMemberNames are the members' names, as the scenarios name the
// simulated store's (zk0, zk1, zk2).
func coordMemberNames() []string {
	var out []string
	for i := 0; i < realcoord.Members; i++ {
		out = append(out, fmt.Sprintf("zk%d", i))
	}
	return out
}

// coordNotCarriedOut says why fault f cannot be carried out at all ("" when
// it can, in part or whole): a delay or loss between etcd members only,
// or a clock fault that names only
// coordination-service members, none of which the real arm can step (a
// drift, etcd, or ZooKeeper without LOCKSIM_MEMBER_FAKETIME). Such a
// fault is not counted as injected and gets no fault event: a fault the
// run reports as injected must have reached the world.
func (w *world) coordNotCarriedOut(f faults.Fault) string {
	if w.coord == nil {
		return ""
	}
	if (f.Kind == faults.Delay || f.Kind == faults.Loss) && w.coord.ens.Kind == realcoord.Etcd {
		// etcd's member links go through peer proxies that can cut a
		// link, not slow it or drop messages on it.
		names := slices.Compact(slices.Sorted(slices.Values(append(append(slices.Clone(f.Targets), f.From...), f.To...))))
		if n := len(w.coordTargets(names)); n > 0 && n == len(names) {
			return "a " + string(f.Kind) + " between etcd members is not carried out (their peer proxies cut links; they do not slow them or drop messages)"
		}
		return ""
	}
	if f.Kind != faults.ClockJump && f.Kind != faults.ClockDrift {
		return ""
	}
	members := w.coordTargets(f.Targets)
	if len(members) == 0 || len(members) != len(f.Targets) {
		return "" // it names clients or Redis nodes too: those are stepped
	}
	if f.Kind == faults.ClockJump && w.coord.ens.FakeClocks() {
		return ""
	}
	return MemberClockNote
}

// memberPairs is the etcd member pairs partition f cuts through the
// ensemble's peer proxies (none for a delay, which is not carried out
// between etcd members, or a world without peer proxies).
func (w *world) memberPairs(f faults.Fault) [][2]string {
	if f.Kind != faults.Partition || w.coord == nil || !w.coord.ens.HasPeerProxies() {
		return nil
	}
	members := coordMemberNames()
	var pairs [][2]string
	for _, a := range f.From {
		for _, b := range f.To {
			if a != b && slices.Contains(members, a) && slices.Contains(members, b) {
				pairs = append(pairs, [2]string{a, b})
			}
		}
	}
	return pairs
}

// cutsMembers reports whether partition f cuts etcd member links.
func (w *world) cutsMembers(f faults.Fault) bool { return len(w.memberPairs(f)) > 0 }
