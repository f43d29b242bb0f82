package sim

import (
	"strconv"
)

// WAITAOF numlocal numreplicas timeout (Redis 7.2): block until the writes
// before it are fsynced to this node's AOF (numlocal 1) and to the AOFs
// of numreplicas replicas, or until the timeout; the reply is [local
// fsynced (0 or 1), replicas that fsynced]. What makes an fsync is the
// node's persistence (sim/config.go):
//
//	always    every write is fsynced before its reply (afterWrite, applyRepl)
//	everysec  at the next fsync tick, every second (scheduleFsync)
//	no        never: the kernel writes back on its own, which is no fsync,
//	          so a WAITAOF that needs this node's fsync times out
//	none      no AOF: numlocal 1 is an error; as a replica it never counts
//
// A replica reports its fsynced replication offset with every ack (Redis's
// REPLCONF ACK <offset> FACK <aofoffset>): at once under always, at its
// next fsync tick under everysec while its primary has a WAITAOF pending.
// A WAITAOF that blocks asks every replica for an ack (Redis's
// replicationRequestAckFromSlaves, REPLCONF GETACK), in the replication
// stream after the writes before it.
//
// As the simulator's WAIT, the writes counted are every write this
// primary made before the WAITAOF, not only the connection's (Redis's
// c->woff): a stricter wait, never a looser one. Not modelled: a WAITAOF
// inside MULTI or a script (Redis answers at once there).

// waitAOF implements WAITAOF with Redis's argument checks and errors
// (replication.c waitaofCommand).
func (n *Node) waitAOF(c *conn, args []string) {
	if len(args) != 4 {
		c.peer.WriteError("ERR wrong number of arguments for 'waitaof' command")
		return
	}
	local, err := strconv.Atoi(args[1])
	if err != nil {
		c.peer.WriteError("ERR value is not an integer or out of range")
		return
	}
	if local < 0 || local > 1 {
		c.peer.WriteError("ERR value is out of range, value must between 0 and 1")
		return
	}
	need, err := strconv.Atoi(args[2])
	if err != nil {
		c.peer.WriteError("ERR value is not an integer or out of range")
		return
	}
	if need < 0 {
		c.peer.WriteError("ERR value is out of range, must be positive")
		return
	}
	ms, err := strconv.Atoi(args[3])
	if err != nil {
		c.peer.WriteError("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.peer.WriteError("ERR timeout is negative")
		return
	}
	if n.replicaOf >= 0 {
		c.peer.WriteError("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.")
		return
	}
	if local > 0 && !n.cfg.Persistence.aof() {
		c.peer.WriteError("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
		return
	}
	n.flushAcks()
	req := &waitReq{c: c, target: n.offset, need: need, aof: true, local: local, localTarget: n.aofSeq}
	if n.met(req) {
		l, r := n.aofCounts(req)
		c.peer.WriteLen(2)
		c.peer.WriteInt(l)
		c.peer.WriteInt(r)
		return
	}
	c.waitReq = req
	n.waiters = append(n.waiters, req)
	if need > 0 {
		n.getAck()
	}
	n.waitTimeout(req, ms)
}

// getAck asks every replica for an ack: an empty entry in the
// replication stream, after the writes before it, that each replica
// applies and acknowledges with its fsynced offset.
func (n *Node) getAck() {
	for _, r := range n.replicas() {
		n.shipTo(r, nil, false, n.offset, n.epoch)
	}
}

// met reports whether a WAIT or WAITAOF has what it waits for.
func (n *Node) met(req *waitReq) bool {
	if !req.aof {
		return n.ackedCount(req.target) >= req.need
	}
	local, reps := n.aofCounts(req)
	return local >= req.local && reps >= req.need
}

// aofCounts is a WAITAOF's reply: whether this node fsynced the writes
// before it (1 or 0) and how many replicas did.
func (n *Node) aofCounts(req *waitReq) (local, reps int) {
	if n.cfg.Persistence.aof() && n.fsyncedSeq >= req.localTarget {
		local = 1
	}
	for _, r := range n.replicas() {
		if got, ok := n.aofAcked[r.id]; ok && got >= req.target {
			reps++
		}
	}
	return local, reps
}

// fsynced is an fsync tick (or the kernel's writeback, which fsyncs
// nothing WAITAOF can see) on n: its writes so far are on disk; a primary
// answers the WAITAOFs that now have enough, a replica acks its new
// fsynced offset while its primary has a WAITAOF pending.
func (n *Node) fsynced() {
	if n.cfg.Persistence != PersistEverysec {
		return
	}
	n.fsyncedSeq = n.aofSeq
	if n.replicaOf < 0 {
		if n.aofWaiting() { // a tick changes nothing a WAIT waits for
			n.checkWaiters()
		}
		return
	}
	if n.applied <= n.fsyncedRepl {
		return
	}
	n.fsyncedRepl = n.applied
	p := n.w.nodes[n.replicaOf]
	if !p.up || !p.aofWaiting() {
		return
	}
	n.sendAck(p, n.applied, p.epoch)
}

// aofWaiting reports whether a WAITAOF is pending on n.
func (n *Node) aofWaiting() bool {
	for _, req := range n.waiters {
		if req.aof && !req.done {
			return true
		}
	}
	return false
}
