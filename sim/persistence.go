package sim

import (
	"time"

	evt "github.com/locksim/locksim/event"
)

// Persistence: what a node keeps across a crash (its durable store,
// written always, every second or never), and crash, restart and heal.

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

// writebackPeriod is how often the kernel writes an appendfsync-no AOF
// back on its own (Linux's dirty_expire_centisecs, 30 s).
const writebackPeriod = 30 * time.Second

// scheduleFsync schedules the next fsync tick of an everysec node (every
// second) or the kernel's next writeback of an appendfsync-no node.
func (n *Node) scheduleFsync() {
	epoch := n.epoch
	period := time.Second
	if n.cfg.Persistence == PersistNo {
		period = writebackPeriod
	}
	n.w.after(n.w.now()+int64(period), stepFsync, func() {
		n.whenAwake(stepFsync, func() { // a stopped process does not fsync
			if !n.up || n.epoch != epoch {
				return
			}
			n.tick()
			n.durable = n.capture(n.m.Keys())
			n.fsynced()
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
	n.aofAcked = map[int]int64{}
	n.fsyncedSeq = n.aofSeq // what it loaded is on disk
	n.lastRepl = map[int]*int64{}
	if n.cfg.Persistence == PersistEverysec || n.cfg.Persistence == PersistNo {
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
	n.w.record(Event{Proc: n.name, Kind: evt.KindRestart, Detail: "heal"})
}
