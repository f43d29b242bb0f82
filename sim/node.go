package sim

import (
	"bytes"
	"math/rand/v2"
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
	// WAITAOF (waitaof.go): the writes this node made or applied
	// (aofSeq) and how many of them its last fsync covered (fsyncedSeq);
	// a replica's fsynced replication offset, its acks' FACK
	// (fsyncedRepl, -1 without an AOF); a primary's replicas' FACKs.
	aofSeq, fsyncedSeq, fsyncedRepl int64
	aofAcked                        map[int]int64

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
	// downVals are the lock keys' values live on it when it last went
	// down, and outFault the node pause or crash fault (1-based) that last
	// took it out: a cluster's own failover credits its promotion to it
	// (cluster_failover_effects.go).
	downVals map[string]string
	outFault int
	// drifting are the clock-drift faults (1-based) running on this node:
	// a lock key written while one runs counts for its bite.
	drifting []int
}

func newNode(w *World, id int, cfg NodeConfig) *Node {
	clk, _ := clock.NewModel(0, cfg.ClockOffset, cfg.DriftPPM)
	n := &Node{w: w, id: id, cfg: cfg, name: cfg.Name, clk: clk, replicaOf: -1,
		acked: map[int]int64{}, lastRepl: map[int]*int64{}, aofAcked: map[int]int64{}, fsyncedRepl: -1}
	if cfg.Persistence.aof() {
		n.fsyncedRepl = 0
	}
	if w.cfg.Topology.Replicated {
		if first := w.groupFirst(id / w.groupSize()); first != id {
			n.replicaOf = first
		}
	}
	return n
}

func (n *Node) addr() int {
	if n.isService() {
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
	if n.cfg.Persistence == PersistEverysec || n.cfg.Persistence == PersistNo {
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
		n.w.afterHeld(n.pausedUntil, n.pausedUntil, nil, stepArrive, func() { n.arrive(c, cmds) })
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
	if n.w.cfg.Topology.Shards > 0 && !n.isService() && n.clusterExec(c, cmd, args) {
		c.bw.Flush()
		n.w.trace.addCmd(n.w.now(), n.name, c.p.name, args, c.out.Bytes()[before:])
		return
	}
	// A write on a primary: its keys go to replicas and disk afterwards,
	// and the watched ones among them are compared before and after.
	primaryWrite := !n.isService() && n.replicaOf < 0 && write
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
	case n.serves(cmd):
		n.execService(c, args)
	case cmd == "WAIT":
		n.wait(c, args)
	case cmd == "WAITAOF":
		n.waitAOF(c, args)
	case cmd == "INFO" && n.replInfo(c, args):
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

// --- helpers ---------------------------------------------------------------

var nonData = map[string]bool{
	"HELLO": true, "PING": true, "CLIENT": true, "SELECT": true, "SCRIPT": true, "WAIT": true, "WAITAOF": true,
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
