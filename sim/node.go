package sim

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"

	"github.com/locksim/locksim/clock"
)

// Node is a Redis node: a miniredis v2 instance whose commands the
// scheduler executes synchronously (no miniredis goroutines), with what
// miniredis lacks built around it: TTLs that follow this node's own clock
// (including backward jumps), persistence on crash, async replication and
// WAIT.
type Node struct {
	w    *World
	id   int
	cfg  NodeConfig
	name string

	m         *miniredis.Miniredis
	srv       *server.Server
	clk       *clock.Model
	lastLocal int64 // local time at the last tick

	up    bool
	downs int // crash faults holding the node down (they combine)
	// clockWaiters are crashes timed by the node's own clock
	// (World.restartByClock): each reports whether it is done.
	clockWaiters []func() bool
	epoch        int   // incarnation: bumps on crash, restart, demotion
	pausedUntil  int64 // a paused node handles nothing until then
	conns        []*conn
	scripts      map[string]bool // SHA1s this incarnation has loaded (for the native path)

	durable map[string]keyState // what survives a crash

	// replication
	replicaOf int // -1 for a primary
	offset    int64
	applied   int64         // replica: offset applied
	acked     map[int]int64 // primary: replica id -> acked offset
	// primary: acks sent to it that are not events (see sendAck)
	pendingAcks []pendingAck
	lastRepl    map[int]*int64 // FIFO per replication link
	waiters     []*waitReq

	svc Service // set for a service process (not Redis)
	// a Member service's incarnation, its streams and per-link order
	host   *Host
	rng    *rand.Rand
	netRng *rand.Rand
	lastTo map[int]*int64

	keys, watched []string   // exec's scratch
	was           []keyState // exec's scratch

	// owners is, per watched key (Config.WatchKeys), the client whose
	// write set its current value and the values it held since it was
	// created (replicas and restarts learn them with the key); absent
	// when unknown.
	owners map[string]keyOwner
	// served: a client's request reached this node at least once (a node
	// no client uses is idle: FaultEffect.Nodes leaves it out).
	served bool
	// downLive is the number of lock keys live on the node when it last
	// went down: a clock fault on a down node moves its restart, which
	// matters to the holders of those keys (liveKeys).
	downLive int
	// drifting are the clock-drift faults (1-based) running on this node:
	// a lock key written while one runs counts for its bite.
	drifting []int
}

// keyOwner is a watched key's ground truth: the client whose write set
// its current value, and the values (keyState.held) it has held since it
// was created, oldest first, at most maxHeld of them. The slice is never
// written in place (replicas and snapshots share it).
type keyOwner struct {
	creator string
	values  []string
}

// maxHeld bounds keyOwner.values: a key rewritten by more writers than
// that between its creation and a touch is named by its last ones.
const maxHeld = 8

// with returns o after client c's write left the key holding v. A value
// the key held just before (a Redisson hash whose count changed: the
// same field names) is not listed twice.
func (o keyOwner) with(c, v string) keyOwner {
	vs := o.values
	if len(vs) > 0 && vs[len(vs)-1] == v {
		return keyOwner{creator: c, values: vs}
	}
	if len(vs) >= maxHeld {
		vs = vs[len(vs)-maxHeld+1:]
	}
	return keyOwner{creator: c, values: append(slices.Clip(vs), v)}
}

// keyState is one key's value and absolute expiry on the local clock of
// the node it was read from (0: no expiry).
type keyState struct {
	exists   bool
	typ      string
	str      string
	hash     [][2]string
	expireAt int64
	// owner is a watched key's ground truth (keyOwner), carried through
	// replication and persistence; zero when unknown or not watched.
	owner keyOwner
}

type waitReq struct {
	c      *conn
	target int64
	need   int
	done   bool
}

func newNode(w *World, id int, cfg NodeConfig) *Node {
	clk, _ := clock.NewModel(0, cfg.ClockOffset, cfg.DriftPPM)
	n := &Node{w: w, id: id, cfg: cfg, name: cfg.Name, clk: clk, replicaOf: -1,
		acked: map[int]int64{}, lastRepl: map[int]*int64{}}
	if w.cfg.Topology.Replicated {
		if first := w.groupFirst(id / w.groupSize()); first != id {
			n.replicaOf = first
		}
	}
	return n
}

func (n *Node) addr() int {
	if n.svc != nil {
		return serviceBase + n.id
	}
	return nodeAddr(n.id)
}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

func (n *Node) start() {
	n.boot()
	n.up = true
	n.lastLocal = n.clk.Local(n.w.now())
	if n.cfg.Persistence == PersistEverysec {
		n.scheduleFsync()
	}
	n.startMember()
}

// boot makes a fresh miniredis instance without a listener: Dial starts it
// on a pipe, and closing the pipe ends the goroutine miniredis started for
// it. From then on commands go through Dispatch only.
func (n *Node) boot() {
	m := miniredis.NewMiniRedis()
	m.Seed(int(n.w.cfg.Seed%(1<<31)) + n.id)
	c, err := m.Dial()
	if err == nil {
		c.Close()
	}
	n.m = m
	n.srv = m.Server()
	n.scripts = map[string]bool{}
	n.owners = nil
	n.m.SetTime(n.w.bc.at(n.clk.Local(n.w.now())))
}

func (n *Node) close() {
	if n.m != nil {
		n.m.Close()
	}
}

// tick brings miniredis's idea of time to this node's clock: forward moves
// expire keys, a backward step extends every TTL by the step (Redis stores
// absolute deadlines; miniredis stores remaining durations).
func (n *Node) tick() {
	local := n.clk.Local(n.w.now())
	switch d := local - n.lastLocal; {
	case d > 0:
		n.m.FastForward(time.Duration(d))
	case d < 0:
		for _, k := range n.m.Keys() {
			if ttl := n.m.TTL(k); ttl > 0 {
				n.m.SetTTL(k, ttl-time.Duration(d))
			}
		}
	}
	n.lastLocal = local
	n.m.SetTime(n.w.bc.at(local))
}

// Local is the node's local time in ns.
func (n *Node) local() int64 { return n.clk.Local(n.w.now()) }

// arrive runs the commands of one network segment that reached the node.
func (n *Node) arrive(c *conn, cmds [][]string) {
	if !n.up || c.epoch != n.epoch {
		c.sendReset()
		return
	}
	n.served = true
	if now := n.w.now(); n.pausedUntil > now {
		n.w.afterHeld(n.pausedUntil, n.pausedUntil, nil, "arrive", func() { n.arrive(c, cmds) })
		return
	}
	if c.waitReq != nil {
		c.backlog = append(c.backlog, cmds...)
		return
	}
	n.run(c, cmds)
}

func (n *Node) run(c *conn, cmds [][]string) {
	n.tick()
	for i, args := range cmds {
		n.exec(c, args)
		if c.waitReq != nil {
			c.backlog = append(c.backlog, cmds[i+1:]...)
			break
		}
	}
	c.bw.Flush()
	c.sendReply()
}

// exec runs one command for conn c and writes its reply to c's buffer.
func (n *Node) exec(c *conn, args []string) {
	n.w.stats.Commands++
	cmd, write := n.w.command(n.srv, args[0])
	before := c.out.Len() + c.bw.Buffered()
	// A write on a primary: its keys go to replicas and disk afterwards,
	// and the watched ones among them are compared before and after.
	primaryWrite := n.svc == nil && n.replicaOf < 0 && write
	var keys, watched []string
	var was []keyState
	if primaryWrite {
		// The scratch slices are the node's own: exec never runs inside
		// another exec of the same node.
		keys = keysOf(n.keys[:0], cmd, args)
		watched = n.watchedKeys(n.watched[:0], keys)
		local := n.local()
		was = n.was[:0]
		for _, k := range watched {
			was = append(was, n.captureKey(k, local))
		}
		n.keys, n.watched, n.was = keys, watched, was
	}
	switch {
	case n.svc != nil && !serviceBuiltins[cmd]:
		if n.host != nil {
			n.host.cur = c
		}
		n.svc.Exec(n.w.now(), c.p.name, args, c.peer, n.w.record)
		if n.host != nil {
			n.host.cur = nil
		}
	case cmd == "WAIT":
		n.wait(c, args)
	case n.replicaOf >= 0 && write:
		c.peer.WriteError("READONLY You can't write against a read only replica.")
	case (cmd == "EVAL" || cmd == "EVALSHA") && n.native(c, cmd, args):
		n.w.stats.NativeEvals++
	default:
		if cmd == "EVAL" || cmd == "EVALSHA" {
			n.w.stats.LuaEvals++
		}
		n.srv.Dispatch(c.peer, args)
		n.noteScript(cmd, args)
		switch cmd {
		case "SELECT", "MULTI":
			c.noNative = true // the fast path knows db 0 outside transactions only
		}
	}
	c.bw.Flush()
	n.w.flushRecords()
	n.w.trace.addCmd(n.w.now(), n.name, c.p.name, args, c.out.Bytes()[before:])
	if primaryWrite {
		for i, k := range watched {
			n.noteWatched(c.p.name, k, was[i])
		}
		n.afterWrite(keys)
	}
}

// watchedKeys are the watched keys (Config.WatchKeys) among a write's
// keys (nil keys: unknown, so every watched key).
func (n *Node) watchedKeys(out, keys []string) []string {
	for _, k := range n.w.cfg.WatchKeys {
		if keys == nil || slices.Contains(keys, k) {
			out = append(out, k)
		}
	}
	return out
}

// noteWatched compares a watched key before and after client c's write: a
// delete or a TTL change of a value another client set is a "key-touch"
// event, carrying the values the key held since it was created (Held);
// a new value makes c its creator.
func (n *Node) noteWatched(c string, k string, was keyState) {
	now := n.captureKey(k, n.local())
	if n.owners == nil {
		n.owners = map[string]keyOwner{}
	}
	o := n.owners[k]
	switch {
	case !now.exists:
		delete(n.owners, k)
		if was.exists && o.creator != "" && o.creator != c {
			n.w.record(Event{Proc: n.name, Kind: "key-touch", Peer: c, Lock: k, Result: "del", Detail: o.creator, Held: o.values})
		}
	case !was.exists:
		n.owners[k] = keyOwner{}.with(c, now.held())
		n.keyWhileDrifting()
		n.w.keysSeen = true
	case now.str != was.str || !slices.Equal(now.hash, was.hash):
		n.owners[k] = o.with(c, now.held())
		n.keyWhileDrifting()
	case now.expireAt != was.expireAt && o.creator != "" && o.creator != c:
		n.w.record(Event{Proc: n.name, Kind: "key-touch", Peer: c, Lock: k, Result: "expire", Detail: o.creator, Held: o.values})
	}
}

// held is what a key-touch event says the key held (Event.Held): a
// string's value, or a hash's field names joined by ",".
func (s keyState) held() string {
	if s.typ != "hash" {
		return s.str
	}
	var b strings.Builder
	for i, f := range s.hash {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f[0])
	}
	return b.String()
}

// afterWrite propagates the effect of a write to replicas and to the
// durable store (persistence always).
func (n *Node) afterWrite(keys []string) {
	if n.cfg.Persistence != PersistAlways && !n.hasReplicas() {
		return // nothing to ship or make durable
	}
	if keys == nil {
		keys = n.m.Keys()
	}
	states := n.capture(keys)
	if n.cfg.Persistence == PersistAlways {
		for k, s := range states {
			n.persist(k, s)
		}
	}
	n.propagate(states, false)
}

func (n *Node) persist(k string, s keyState) {
	if n.durable == nil {
		n.durable = map[string]keyState{}
	}
	if s.exists {
		n.durable[k] = s
	} else {
		delete(n.durable, k)
	}
}

func (n *Node) capture(keys []string) map[string]keyState {
	local := n.local()
	out := make(map[string]keyState, len(keys))
	for _, k := range keys {
		out[k] = n.captureKey(k, local)
	}
	return out
}

func (n *Node) captureKey(k string, local int64) keyState {
	// One database handle for the reads (db 0, the direct API's): a key
	// that does not exist has no type.
	db := n.m.DB(0)
	typ := db.Type(k)
	if typ == "" {
		return keyState{}
	}
	s := keyState{exists: true, typ: typ, owner: n.owners[k]}
	switch s.typ {
	case "string":
		s.str, _ = db.Get(k)
	case "hash":
		fields, _ := db.HKeys(k)
		sort.Strings(fields)
		for _, f := range fields {
			s.hash = append(s.hash, [2]string{f, db.HGet(k, f)})
		}
	default:
		return keyState{} // only strings and hashes are replicated and persisted
	}
	if ttl := db.TTL(k); ttl > 0 {
		s.expireAt = local + int64(ttl)
	}
	return s
}

// apply writes key states (read on another node or from disk, with expiry
// on the clock that read them: expiry times are absolute, as Redis 7
// replicates them) into this node.
func (n *Node) apply(states map[string]keyState) {
	n.tick()
	local := n.lastLocal
	for _, k := range sortedKeys(states) {
		s := states[k]
		n.m.Del(k)
		delete(n.owners, k)
		if !s.exists || (s.expireAt != 0 && s.expireAt <= local) {
			continue
		}
		if s.owner.creator != "" {
			if n.owners == nil {
				n.owners = map[string]keyOwner{}
			}
			n.owners[k] = s.owner
		}
		switch s.typ {
		case "string":
			n.m.Set(k, s.str)
		case "hash":
			for _, fv := range s.hash {
				n.m.HSet(k, fv[0], fv[1])
			}
		}
		if s.expireAt != 0 {
			n.m.SetTTL(k, time.Duration(s.expireAt-local))
		}
	}
}

func sortedKeys(m map[string]keyState) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// --- replication -----------------------------------------------------------

func (n *Node) hasReplicas() bool {
	if !n.w.cfg.Topology.Replicated {
		return false
	}
	for _, r := range n.w.nodes {
		if r.replicaOf == n.id && r != n {
			return true
		}
	}
	return false
}

// replicas lists the nodes currently replicating from n, in id order.
func (n *Node) replicas() []*Node {
	if n.svc != nil {
		// A service has none: its id counts services, not nodes (the
		// storage is service 0, not the primary, node 0).
		return nil
	}
	var out []*Node
	for _, r := range n.w.nodes {
		if r.replicaOf == n.id && r != n {
			out = append(out, r)
		}
	}
	return out
}

// propagate ships a write's effect to every replica after the link's
// latency plus the configured replication lag, in order.
func (n *Node) propagate(states map[string]keyState, full bool) {
	reps := n.replicas()
	if len(reps) == 0 {
		return
	}
	n.offset++
	off, epoch := n.offset, n.epoch
	for _, r := range reps {
		n.shipTo(r, states, full, off, epoch)
	}
}

func (n *Node) shipTo(r *Node, states map[string]keyState, full bool, off int64, epoch int) {
	last := n.lastRepl[r.id]
	if last == nil {
		last = new(int64)
		n.lastRepl[r.id] = last
	}
	lag := int64(n.w.cfg.Topology.ReplLag)
	w := n.w
	t := w.now()
	at := max(t+w.net.latency(w.net.rng, n.addr(), r.addr(), t)+lag, *last)
	*last = at
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := w.afterLinkLocked(at, nil, "repl", n.addr(), r.addr(), t)
	ev.fn = func() {
		if !r.up || r.replicaOf != n.id || !n.up || n.epoch != epoch {
			return // the link broke: a later full resync brings the replica up to date
		}
		if r.pausedUntil > w.now() {
			// a paused replica reads its socket on resume; keep order by re-shipping
			w.afterHeld(r.pausedUntil, r.pausedUntil, nil, "repl", func() { r.applyRepl(n, states, full, off, epoch) })
			return
		}
		r.applyRepl(n, states, full, off, epoch)
	}
}

func (r *Node) applyRepl(from *Node, states map[string]keyState, full bool, off int64, epoch int) {
	if !r.up || r.replicaOf != from.id || from.epoch != epoch {
		return
	}
	if full {
		r.m.FlushAll()
		r.owners = nil
	}
	r.apply(states)
	if r.cfg.Persistence == PersistAlways {
		for k, s := range states {
			r.persist(k, s)
		}
		if full {
			r.durable = nil
			for k, s := range states {
				r.persist(k, s)
			}
		}
	}
	r.applied = off
	r.sendAck(from, off, epoch)
}

// pendingAck is a replica's acknowledgement on its way to its primary,
// kept out of the event queue (see sendAck). seq is the queue sequence
// number its event would have had.
type pendingAck struct {
	r        *Node
	off      int64
	epoch    int
	at, sent int64
	seq      uint64
}

// sendAck sends replica r's acknowledgement of offset off to its primary
// from. An ack matters only to WAIT, so while from has no WAIT pending, is
// not paused and the link is not partitioned, it is no event: it waits in
// from.pendingAcks, its latency drawn and its sequence number taken now as
// for an event, until something could tell the difference. Then flushAcks
// applies it if its event would already have run and makes it that event
// otherwise. The scheduler flushes before every event that could change a
// partition, a pause, a node's incarnation or Sentinel's view
// (World.loop), and WAIT flushes its node first. A replicated world runs
// a third fewer events.
func (r *Node) sendAck(from *Node, off int64, epoch int) {
	w := r.w
	a, b := r.addr(), from.addr()
	t := w.now()
	at := t + w.net.latency(w.net.rng, a, b, t)
	w.mu.Lock()
	w.seq++
	seq := w.seq
	w.mu.Unlock()
	p := pendingAck{r: r, off: off, epoch: epoch, at: at, sent: t, seq: seq}
	if !w.cfg.EagerAcks && len(from.waiters) == 0 && from.pausedUntil <= t {
		if _, held := w.net.heldUntil(a, b, t); !held {
			from.pendingAcks = append(from.pendingAcks, p)
			w.pendingAcks++
			return
		}
	}
	from.ackEvent(p)
}

// ackEvent schedules the arrival of an ack at from, as the event it is.
func (from *Node) ackEvent(p pendingAck) {
	w := from.w
	w.mu.Lock()
	ev := w.newEventLocked()
	ev.at, ev.seq, ev.kind = p.at, p.seq, "repl-ack"
	ev.link, ev.a, ev.b, ev.sent = true, p.r.addr(), from.addr(), p.sent
	r, off, epoch := p.r, p.off, p.epoch
	ev.fn = func() { from.ackArrived(r, off, epoch) }
	w.q.push(ev)
	w.mu.Unlock()
}

// ackArrived is r's ack reaching from.
func (from *Node) ackArrived(r *Node, off int64, epoch int) {
	from.whenAwake("repl-ack", func() {
		if from.epoch != epoch || !from.up {
			return
		}
		if off > from.acked[r.id] {
			from.acked[r.id] = off
		}
		from.checkWaiters()
	})
}

// flushAcks applies the pending acks whose events the queue would have
// run before the event now running (World.cur) and makes the others
// those events.
func (n *Node) flushAcks() {
	if len(n.pendingAcks) == 0 {
		return
	}
	acks := n.pendingAcks
	n.pendingAcks = nil
	n.w.pendingAcks -= len(acks)
	for _, p := range acks {
		if before(&event{at: p.at, seq: p.seq}, &n.w.cur) {
			n.ackArrived(p.r, p.off, p.epoch)
		} else {
			n.ackEvent(p)
		}
	}
	if n.pendingAcks == nil {
		clear(acks)
		n.pendingAcks = acks[:0] // reuse the array
	}
}

// fullSync replaces every replica's data with n's (a replica (re)attaching).
func (n *Node) fullSync(r *Node) {
	n.tick()
	n.offset++
	r.replicaOf = n.id
	n.shipTo(r, n.capture(n.m.Keys()), true, n.offset, n.epoch)
}

// wait implements WAIT numreplicas timeout: it returns how many replicas
// really acknowledged every write this primary made before the WAIT.
func (n *Node) wait(c *conn, args []string) {
	if len(args) != 3 {
		c.peer.WriteError("ERR wrong number of arguments for 'wait' command")
		return
	}
	need, err1 := strconv.Atoi(args[1])
	ms, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil || ms < 0 {
		c.peer.WriteError("ERR value is not an integer or out of range")
		return
	}
	if n.replicaOf >= 0 {
		c.peer.WriteError("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	n.flushAcks()
	got := n.ackedCount(n.offset)
	if got >= need || (ms > 0 && false) {
		c.peer.WriteInt(got)
		return
	}
	req := &waitReq{c: c, target: n.offset, need: need}
	c.waitReq = req
	n.waiters = append(n.waiters, req)
	if ms > 0 {
		epoch := n.epoch
		n.w.after(n.w.now()+int64(n.clk.TrueAfter(time.Duration(ms)*time.Millisecond)), "wait-timeout", func() {
			n.whenAwake("wait-timeout", func() {
				if n.epoch == epoch {
					n.finishWait(req)
				}
			})
		})
	}
}

// whenAwake runs fn now, or when n's pause ends if n is paused: a paused
// node handles nothing, so its timers (WAIT's timeout) and what it reads
// from its sockets (replica acks) wait for the resume.
func (n *Node) whenAwake(kind string, fn func()) {
	if until := n.pausedUntil; until > n.w.now() {
		n.w.afterHeld(until, until, nil, kind, func() { n.whenAwake(kind, fn) })
		return
	}
	fn()
}

func (n *Node) ackedCount(target int64) int {
	got := 0
	for _, r := range n.replicas() {
		if n.acked[r.id] >= target {
			got++
		}
	}
	return got
}

func (n *Node) checkWaiters() {
	for _, req := range append([]*waitReq(nil), n.waiters...) {
		if !req.done && n.ackedCount(req.target) >= req.need {
			n.finishWait(req)
		}
	}
}

func (n *Node) finishWait(req *waitReq) {
	if req.done {
		return
	}
	req.done = true
	for i, r := range n.waiters {
		if r == req {
			n.waiters = append(n.waiters[:i], n.waiters[i+1:]...)
			break
		}
	}
	c := req.c
	c.waitReq = nil
	c.peer.WriteInt(n.ackedCount(req.target))
	c.bw.Flush()
	n.w.record(Event{Proc: n.name, Kind: "cmd", Peer: c.p.name, Cmd: "WAIT(done)", Reply: firstLine(c.out.Bytes())})
	backlog := c.backlog
	c.backlog = nil
	if len(backlog) > 0 {
		n.run(c, backlog)
		return
	}
	c.sendReply()
}

// --- crash, restart, persistence -----------------------------------------

func (n *Node) scheduleFsync() {
	epoch := n.epoch
	n.w.after(n.w.now()+int64(time.Second), "fsync", func() {
		n.whenAwake("fsync", func() { // a stopped process does not fsync
			if !n.up || n.epoch != epoch {
				return
			}
			n.tick()
			n.durable = n.capture(n.m.Keys())
			n.scheduleFsync()
		})
	})
}

// crash stops the node: connections are reset, and what the persistence
// mode did not make durable is gone.
func (n *Node) crash() {
	if !n.up {
		return
	}
	n.w.stats.Crashes++
	n.up = false
	n.epoch++
	n.resetConns()
	for _, req := range n.waiters {
		req.done = true
	}
	n.waiters = nil
	if n.cfg.Persistence == PersistNone {
		n.durable = nil
	}
	n.m.Close()
	n.crashMember()
}

func (n *Node) resetConns() {
	// Connections were appended by client goroutines that may have dialled
	// concurrently (redsync dials every node at once): reset them in
	// connection-id order, not append order.
	sortConns(n.conns)
	for _, c := range n.conns {
		c.sendReset()
	}
	n.conns = nil
}

// restart boots a new incarnation from the durable store. Keys whose
// deadline passed on this node's clock while it was down are not loaded.
func (n *Node) restart() {
	if n.up {
		return
	}
	n.boot()
	n.up = true
	n.lastLocal = n.local()
	n.apply(n.durable)
	n.acked = map[int]int64{}
	n.lastRepl = map[int]*int64{}
	if n.cfg.Persistence == PersistEverysec {
		n.scheduleFsync()
	}
	if n.replicaOf < 0 {
		// A primary that restarts resyncs its replicas: with no
		// persistence they copy its empty dataset (Redis's documented trap).
		for _, r := range n.replicas() {
			n.fullSync(r)
		}
	} else if p := n.w.nodes[n.replicaOf]; p.up {
		p.fullSync(n)
	}
	n.startMember()
}

// heal ends every fault on n: a pause ends, the clock resyncs, and a node
// still down restarts under its persistence mode (what a crash lost stays
// lost).
//
// The resync does not move any key's remaining TTL: it is the harness
// ending the faults, not a fault of its own. (Stepping a clock back extends
// Redis's absolute deadlines; a node whose clock ran 25 s ahead would
// otherwise keep a 3 s lock key for 28 s into the liveness phase.) Keys
// first expire by the clock they were set on, then every remaining TTL and
// every durable deadline keeps its length.
func (n *Node) heal() {
	now := n.w.now()
	n.pausedUntil = 0
	n.downs = 0
	n.drifting = nil
	if n.up {
		n.tick()
	}
	step := n.clk.Local(now) - now
	n.clk.Resync(now)
	if step != 0 {
		for k, st := range n.durable {
			if st.expireAt != 0 {
				st.expireAt -= step
				n.durable[k] = st
			}
		}
	}
	if n.up {
		n.lastLocal = n.clk.Local(now)
		n.m.SetTime(n.w.bc.at(n.lastLocal))
		return
	}
	n.restart()
	n.w.record(Event{Proc: n.name, Kind: "restart", Detail: "heal"})
}

// --- helpers ---------------------------------------------------------------

var nonData = map[string]bool{
	"HELLO": true, "PING": true, "CLIENT": true, "SELECT": true, "SCRIPT": true, "WAIT": true,
	"AUTH": true, "INFO": true, "ECHO": true, "QUIT": true, "MULTI": true, "DISCARD": true,
	"WATCH": true, "UNWATCH": true, "SUBSCRIBE": true, "UNSUBSCRIBE": true, "PUBLISH": true,
	"COMMAND": true, "TIME": true, "DBSIZE": true, "READONLY": true,
}

func isWrite(srv *server.Server, cmd string) bool {
	if nonData[cmd] {
		return false
	}
	return srv.IsRegisteredCommand(cmd) && !srv.IsReadOnlyCommand(cmd)
}

// keysOf appends to buf (empty, not nil) the keys a write command
// touches, or returns nil when unknown (the caller then captures the whole
// keyspace).
func keysOf(buf []string, cmd string, args []string) []string {
	if buf == nil {
		buf = make([]string, 0, 4)
	}
	switch cmd {
	case "SET", "SETNX", "SETEX", "PSETEX", "GETSET", "GETDEL", "GETEX", "EXPIRE", "PEXPIRE", "EXPIREAT",
		"PEXPIREAT", "PERSIST", "INCR", "INCRBY", "DECR", "DECRBY", "APPEND", "HSET", "HSETNX", "HDEL",
		"HINCRBY", "HMSET", "INCRBYFLOAT", "HINCRBYFLOAT", "SETRANGE":
		if len(args) > 1 {
			return append(buf, args[1])
		}
	case "DEL", "UNLINK":
		return append(buf, args[1:]...)
	case "EVAL", "EVALSHA":
		if len(args) >= 3 {
			nk, err := strconv.Atoi(args[2])
			if err == nil && nk >= 0 && 3+nk <= len(args) {
				return append(buf, args[3:3+nk]...)
			}
		}
		return buf
	}
	return nil
}

// cmdInfo is what the engine needs to know of a command name as a client
// sent it: the name in upper case and whether it writes.
type cmdInfo struct {
	upper string
	write bool
}

// command returns the upper-case name of a command as a client sent it
// and whether it writes, cached per world (every node is a miniredis with
// the same command table).
func (w *World) command(srv *server.Server, name string) (string, bool) {
	if ci, ok := w.cmds[name]; ok {
		return ci.upper, ci.write
	}
	ci := cmdInfo{upper: strings.ToUpper(name)}
	ci.write = isWrite(srv, ci.upper)
	if w.cmds == nil {
		w.cmds = map[string]cmdInfo{}
	}
	if len(w.cmds) < 1024 {
		w.cmds[strings.Clone(name)] = ci
	}
	return ci.upper, ci.write
}

// summarize renders a command for the trace, eliding script bodies.
func summarize(args []string) string { return string(appendSummary(nil, args)) }

// appendSummary appends summarize(args) to b.
func appendSummary(b []byte, args []string) []byte {
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		if i == 1 && len(a) > 16 && strings.EqualFold(args[0], "EVAL") {
			b = append(b, "<script "...)
			b = strconv.AppendInt(b, int64(len(a)), 10)
			b = append(b, " bytes>"...)
			continue
		}
		if len(a) > 64 {
			b = append(b, a[:61]...)
			b = append(b, "..."...)
			continue
		}
		b = append(b, a...)
	}
	return b
}

// firstLine is a reply's first line for the trace (a bulk string's
// content), at most 80 bytes.
func firstLine(b []byte) string { return string(appendFirstLine(nil, b)) }

var crlf = []byte("\r\n")

// appendFirstLine appends firstLine(reply) to b.
func appendFirstLine(b, reply []byte) []byte {
	s := reply
	i := bytes.Index(s, crlf)
	if i >= 0 {
		s = s[:i]
		if len(s) > 0 && s[0] == '$' && string(s) != "$-1" {
			s = reply[i+2:]
			if j := bytes.Index(s, crlf); j >= 0 {
				s = s[:j]
			}
		}
	}
	if len(s) > 80 {
		b = append(b, s[:77]...)
		return append(b, "..."...)
	}
	return append(b, s...)
}

func sortConns(cs []*conn) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].src < cs[j].src })
}

// Service is a simulated process other than Redis, reached by clients over
// the same network with RESP (go-redis Do): the protected resource of
// locks/resource is one. Exec runs one command at true time now for the named
// client and writes the reply; record adds events to the trace. It runs on
// the scheduler, so it must not block.
type Service interface {
	Exec(now int64, client string, args []string, reply Reply, record func(Event))
}

// Reply writes a RESP reply (miniredis's server.Peer implements it).
type Reply interface {
	WriteOK()
	WriteInt(int)
	WriteBulk(string)
	WriteNull()
	WriteError(string)
	WriteLen(int)
	WriteInline(string)
}

// serviceBuiltins are answered by the node's miniredis even on a service:
// the connection handshake go-redis sends.
var serviceBuiltins = map[string]bool{"HELLO": true, "PING": true, "CLIENT": true, "SELECT": true, "ECHO": true, "QUIT": true}

func newService(w *World, id int, cfg ServiceConfig) *Node {
	n := newNode(w, id, NodeConfig{Name: cfg.Name, Persistence: PersistAlways})
	n.replicaOf = -1
	n.svc = cfg.New()
	return n
}
