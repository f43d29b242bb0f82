package sim

import (
	evt "github.com/locksim/locksim/event"
	"strconv"
	"time"
)

// Replication: a primary ships its writes to its replicas (async, after
// the link's latency and the replication lag), replicas acknowledge
// offsets, and WAIT blocks a client until enough have.

type waitReq struct {
	c      *conn
	target int64
	need   int
	done   bool
	// aof: a WAITAOF (waitaof.go), needing local fsyncs of this node's
	// writes up to localTarget as well.
	aof         bool
	local       int
	localTarget int64
}

// afterWrite propagates the effect of a write to replicas and to the
// durable store (persistence always).
func (n *Node) afterWrite(keys []string) {
	n.aofSeq++
	if n.cfg.Persistence == PersistAlways {
		n.fsyncedSeq = n.aofSeq
	}
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
	if n.isService() {
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
	ev := w.afterLinkLocked(at, nil, stepRepl, n.addr(), r.addr(), t)
	ev.fn = func() {
		if !r.up || r.replicaOf != n.id || !n.up || n.epoch != epoch {
			return // the link broke: a later full resync brings the replica up to date
		}
		if r.pausedUntil > w.now() {
			// a paused replica reads its socket on resume; keep order by re-shipping
			w.afterHeld(r.pausedUntil, r.pausedUntil, nil, stepRepl, func() { r.applyRepl(n, states, full, off, epoch) })
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
		if r.fsyncedRepl > 0 {
			// The fsynced offset was of the stream it followed before (a
			// new primary's offsets start elsewhere): nothing of this one
			// is fsynced until its next tick.
			r.fsyncedRepl = 0
		}
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
	if states != nil { // not a WAITAOF's GETACK (getAck)
		r.aofSeq++
	}
	if r.cfg.Persistence == PersistAlways {
		r.fsyncedSeq, r.fsyncedRepl = r.aofSeq, off
	}
	r.sendAck(from, off, epoch)
}

// pendingAck is a replica's acknowledgement on its way to its primary,
// kept out of the event queue (see sendAck). seq is the queue sequence
// number its event would have had.
type pendingAck struct {
	r        *Node
	off      int64
	fack     int64 // the replica's fsynced offset (REPLCONF ACK's FACK; -1: none)
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
	// A replica never reports more fsynced than it has applied.
	p := pendingAck{r: r, off: off, fack: min(r.fsyncedRepl, off), epoch: epoch, at: at, sent: t, seq: seq}
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
	ev.at, ev.seq, ev.kind = p.at, p.seq, stepReplAck
	ev.link, ev.a, ev.b, ev.sent = true, p.r.addr(), from.addr(), p.sent
	r, off, fack, epoch := p.r, p.off, p.fack, p.epoch
	ev.fn = func() { from.ackArrived(r, off, fack, epoch) }
	w.q.push(ev)
	w.mu.Unlock()
}

// ackArrived is r's ack reaching from.
func (from *Node) ackArrived(r *Node, off, fack int64, epoch int) {
	from.whenAwake(stepReplAck, func() {
		if from.epoch != epoch || !from.up {
			return
		}
		if off > from.acked[r.id] {
			from.acked[r.id] = off
		}
		if got, ok := from.aofAcked[r.id]; fack >= 0 && (!ok || fack > got) {
			from.aofAcked[r.id] = fack
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
			n.ackArrived(p.r, p.off, p.fack, p.epoch)
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
	if got >= need {
		c.peer.WriteInt(got)
		return
	}
	req := &waitReq{c: c, target: n.offset, need: need}
	c.waitReq = req
	n.waiters = append(n.waiters, req)
	n.waitTimeout(req, ms)
}

// whenAwake runs fn now, or when n's pause ends if n is paused: a paused
// node handles nothing, so its timers (WAIT's timeout) and what it reads
// from its sockets (replica acks) wait for the resume.
func (n *Node) whenAwake(kind stepKind, fn func()) {
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
		if !req.done && n.met(req) {
			n.finishWait(req)
		}
	}
}

// unblockWaiters answers every WAIT pending on n as Redis does when a
// primary becomes a replica (REPLICAOF: disconnectAllBlockedClients), with
// -UNBLOCKED, before its clients are dropped: the reply travels the
// connection ahead of the reset, and a client library does not retry it
// on another node (as it would a WAIT whose connection just broke).
func (n *Node) unblockWaiters() {
	for _, req := range n.waiters {
		if req.done {
			continue
		}
		req.done = true
		c := req.c
		c.waitReq, c.backlog = nil, nil
		c.peer.WriteError("UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)")
		c.bw.Flush()
		n.w.record(Event{Proc: n.name, Kind: evt.KindCmd, Peer: c.p.name, Cmd: "WAIT(unblocked)", Reply: firstLine(c.out.Bytes())})
		c.sendReply()
	}
	n.waiters = nil
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
	name := "WAIT(done)"
	if req.aof {
		local, reps := n.aofCounts(req)
		c.peer.WriteLen(2)
		c.peer.WriteInt(local)
		c.peer.WriteInt(reps)
		name = "WAITAOF(done)"
	} else {
		c.peer.WriteInt(n.ackedCount(req.target))
	}
	c.bw.Flush()
	n.w.record(Event{Proc: n.name, Kind: evt.KindCmd, Peer: c.p.name, Cmd: name, Reply: firstLine(c.out.Bytes())})
	backlog := c.backlog
	c.backlog = nil
	if len(backlog) > 0 {
		n.run(c, backlog)
		return
	}
	c.sendReply()
}

// waitTimeout ends a pending WAIT or WAITAOF req after ms milliseconds of
// n's clock (0: never), unless n restarted (a new epoch) meanwhile.
func (n *Node) waitTimeout(req *waitReq, ms int) {
	if ms <= 0 {
		return
	}
	epoch := n.epoch
	n.w.after(n.w.now()+int64(n.clk.TrueAfter(time.Duration(ms)*time.Millisecond)), stepWaitTimeout, func() {
		n.whenAwake(stepWaitTimeout, func() {
			if n.epoch == epoch {
				n.finishWait(req)
			}
		})
	})
}
