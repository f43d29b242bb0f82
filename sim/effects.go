package sim

import (
	"sync/atomic"
	"time"

	"github.com/locksim/locksim/clock"
)

// FaultEffect is what the engine saw one scheduled fault do: the ground
// truth behind a run's reach and bite accounting (run.Effects). Like
// Event.Fault and Event.Held it is outside the trace and its hash.
type FaultEffect struct {
	// Started: the fault's start ran in the safety phase (Stats.Faults
	// counts these).
	Started bool
	// Armed: the fault (At and On set, not a client pause) was armed in
	// the safety phase (Stats.Faults counts it); Started says whether its
	// client reached the point and it began.
	Armed bool
	// NoLeader: the fault targets the leader, and no member led when it
	// was due to start (an election was under way), so it named nobody
	// and did not start.
	NoLeader bool
	// Nodes counts the target Redis nodes that served the run's clients
	// at least once: a fault on a node no client ever used (a world with
	// more nodes than its lock talks to) reaches nothing.
	Nodes   int
	targets []*Node // the Redis nodes it hit (Nodes counts the served ones at the end)
	// Members counts its target services that are consensus members (a
	// member keeps no Redis key: LiveKeys stays 0 for it).
	Members int
	// LiveKeys counts, for a node pause, crash or clock fault and for a
	// failover, the watched lock keys (Config.WatchKeys) live on its
	// target nodes when it started (the failover's: on the primary it
	// crashed); for a clock drift, also the lock keys written on them
	// while it ran.
	LiveKeys int
	// Messages counts, for a partition, delay or loss, the messages it
	// held, slowed or lost: the lock's own traffic (client-node,
	// client-member, member-member, replication, Sentinel) and the
	// protected resource's (client-storage: a delayed write is what
	// fencing is for).
	Messages int
	// Promoted is, for a failover, the replica Sentinel promoted in its
	// place ("" while none was), and PromotedLacking that the promoted
	// replica lacked a watched key that was live on the crashed primary
	// (missing, or holding another value): the lock's key was lost.
	Promoted        string
	PromotedLacking bool
	promotedKeyed   bool // Promoted's shard held a live watched key (NotePromotion)
	// OwnsKey is, for a client pause, that when it began a live lock key
	// on some node held a value its target client wrote: the pause hit a
	// try that had taken its key (or a hold), not one that found the key
	// taken. For a Redlock round in progress, a key on any node counts:
	// whether the round would have won is not known at that moment.
	OwnsKey bool
}

// NotePromotion records a promotion the fault is credited with: name
// the promoted replica, keyed whether its old primary held a live
// watched key, lacking whether the replica lacked one. A fault that fails
// over several shards (a failover of every shard, or several cut off)
// names the replica that lacked a key if one did, else the first promoted
// of a shard that held a key, else the first promoted; PromotedLacking is
// whether any did. Both arms record promotions through it, in whatever
// order they land (the simulator's in shard order in one tick, a real
// cluster's in any).
func (e *FaultEffect) NotePromotion(name string, keyed, lacking bool) {
	switch {
	case e.PromotedLacking:
	case lacking:
		e.Promoted, e.PromotedLacking, e.promotedKeyed = name, true, true
	case e.Promoted == "" || (keyed && !e.promotedKeyed):
		e.Promoted, e.promotedKeyed = name, keyed
	}
}

// ownsLiveKey reports whether a live watched key on some Redis node holds
// a value client c wrote.
func (w *World) ownsLiveKey(c string) bool {
	for _, n := range w.nodes {
		if !n.up || n.m == nil || n.svc != nil {
			continue
		}
		for _, k := range w.cfg.WatchKeys {
			if n.owners[k].creator == c && n.keyLive(k) {
				return true
			}
		}
	}
	return false
}

// effect returns the effect record of fault number f (1-based), or nil.
func (w *World) effect(f int) *FaultEffect {
	if f < 1 || f > len(w.effects) {
		return nil
	}
	return &w.effects[f-1]
}

// liveKeys counts the watched keys live on n now, without moving its
// clock or its keys (miniredis's TTLs are as of n.lastLocal). For a node
// that is down: those live when it went down (a clock fault then moves
// its restart, which matters to their holders).
func (n *Node) liveKeys() int {
	if n.svc != nil {
		return 0
	}
	if !n.up || n.m == nil {
		return n.downLive
	}
	live := 0
	for _, k := range n.w.cfg.WatchKeys {
		if n.keyLive(k) {
			live++
		}
	}
	return live
}

// keyLive reports whether key k exists on the (up) node n and is not due
// to expire at its next tick (miniredis's TTLs are as of n.lastLocal).
func (n *Node) keyLive(k string) bool {
	db := n.m.DB(0)
	if db.Type(k) == "" {
		return false
	}
	ttl := db.TTL(k)
	return ttl <= 0 || n.lastLocal+int64(ttl) > n.local()
}

// liveValues returns the values (keyState.held) of the watched keys live
// on n now, by key.
func (n *Node) liveValues() map[string]string {
	if !n.up || n.m == nil || n.svc != nil {
		return nil
	}
	out := map[string]string{}
	local := n.local()
	for _, k := range n.w.cfg.WatchKeys {
		s := n.captureKey(k, n.lastLocal)
		if !s.exists || (s.expireAt != 0 && s.expireAt <= local) {
			continue
		}
		out[k] = s.held()
	}
	return out
}

// lacks reports whether n lacks one of the key values in want (the
// answer does not depend on the order the map is read in).
func (n *Node) lacks(want map[string]string) bool {
	for k, v := range want {
		if s := n.captureKey(k, n.lastLocal); !s.exists || s.held() != v {
			return true
		}
	}
	return false
}

// noteLinkEffect counts a message of link a->b that fault lf held,
// slowed or lost.
func (w *World) noteLinkEffect(lf *linkFault, a, b int) {
	if e := w.effect(lf.fault); e != nil {
		e.Messages++
	}
}

// lockClock is the clock a process hands its lock (LockClock): the
// process's own, noting when the lock reads it in the safety phase.
type lockClock struct{ p *Proc }

func (c lockClock) Now() time.Time {
	c.p.noteLockClock()
	return c.p.Now()
}

// Sleep is noted as a monotonic reading: a sleep lasts d of local time,
// which a drift stretches and a jump or offset does not (TrueAfter).
func (c lockClock) Sleep(d time.Duration) {
	c.p.noteLockMono()
	c.p.Sleep(d)
}

// LockClock is p's clock as its lock code should get it (locks.Env.Clock):
// the same clock, but the world notes when the lock reads it, so a clock
// fault on a client whose lock never reads its clock (a library reading
// time.Now) is reported as not reaching it (Result.LockClock).
func (p *Proc) LockClock() clock.Clock {
	return lockClock{p}
}

func (p *Proc) noteLockClock() { p.noteRead(&p.lockClock) }

func (p *Proc) noteLockMono() { p.noteRead(&p.lockMono) }

func (p *Proc) noteRead(last *atomic.Int64) {
	t := p.w.now()
	if t < int64(p.w.cfg.Duration) {
		last.Store(t + 1) // 0: never
	}
}

// lockClockReads returns, per client, the last true time in the safety
// phase its lock read its wall clock (Now), and its monotonic reading
// (Mono, Sleep), -1 for never.
func (w *World) lockClockReads() (wall, mono []int64) {
	wall, mono = make([]int64, len(w.procs)), make([]int64, len(w.procs))
	for i, p := range w.procs {
		wall[i], mono[i] = p.lockClock.Load()-1, p.lockMono.Load()-1
	}
	return wall, mono
}

// finishEffects counts each fault's target nodes that served a client
// (FaultEffect.Nodes) and returns the effects.
func (w *World) finishEffects() []FaultEffect {
	for i := range w.effects {
		e := &w.effects[i]
		e.Nodes = 0
		for _, n := range e.targets {
			if n.served {
				e.Nodes++
			}
		}
	}
	return w.effects
}

// keyWhileDrifting counts a lock key written on n for every clock-drift
// fault running on it (FaultEffect.LiveKeys): the drift then decides when
// that key expires.
func (n *Node) keyWhileDrifting() {
	for _, f := range n.drifting {
		if e := n.w.effect(f); e != nil {
			e.LiveKeys++
		}
	}
}
