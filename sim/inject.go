package sim

import (
	evt "github.com/locksim/locksim/event"
	"slices"
	"time"

	"github.com/locksim/locksim/faults"
)

// scheduleFault turns the schedule's fault number i (0-based) into its
// start and heal events. The events it records carry Fault = i+1, so a
// reader finds the fault itself in the schedule; Detail is its
// description, for the trace file.
func (w *World) scheduleFault(i int, f faults.Fault) {
	start, end := int64(f.Start), int64(f.End())
	if start >= int64(w.cfg.Duration) {
		return // faults belong to the safety phase; the heal lifts everything
	}
	w.after(start, stepFault, func() {
		if w.phase != phaseSafety {
			return
		}
		if f.At != "" && f.Kind != faults.ClientPause {
			w.arm(i, f)
			return
		}
		f, ok := w.resolveLeader(f) // leader.go: a consensus world's "leader" target
		if !ok {
			// No member leads (an election is under way): the fault
			// names nobody, cuts nothing and is not counted as injected.
			w.effects[i].NoLeader = true
			return
		}
		w.stats.Faults++
		w.record(Event{Proc: "world", Kind: evt.KindFault, Detail: f.String(), Fault: i + 1})
		w.noteStart(i, f)
		w.apply(i, f, start, end)
	})
}

// arm arms fault i (f, At and On set, not a client pause): it begins when
// its client On next reaches f.At (Proc.Point, fire). It is counted in
// Stats.Faults now, as a targeted pause is when it is armed; one that never
// fires is listed by run.UnfiredPauses and not counted as injected.
func (w *World) arm(i int, f faults.Fault) {
	w.stats.Faults++
	w.effects[i].Armed = true
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.targetProcs([]string{f.On}) {
		p.arms.ArmFault(i, f)
	}
}

// fire begins armed fault i (f) now: its client reached its point. The
// "fault" event is recorded now, with the start it took, and the fault
// lasts f.Duration from now.
func (w *World) fire(i int, f faults.Fault) {
	if w.phase != phaseSafety {
		return
	}
	now := w.now()
	f.Start = time.Duration(now)
	f, ok := w.resolveLeader(f)
	if !ok {
		w.effects[i].NoLeader = true
		return
	}
	w.record(Event{Proc: "world", Kind: evt.KindFault, Detail: f.String(), Fault: i + 1})
	w.noteStart(i, f)
	w.apply(i, f, now, now+int64(f.Duration))
}

func (w *World) apply(i int, f faults.Fault, start, end int64) {
	healed := func(fn func()) {
		if f.Duration <= 0 {
			return
		}
		w.after(end, stepFaultEnd, func() {
			if w.phase != phaseSafety {
				return // the heal already lifted it
			}
			w.record(Event{Proc: "world", Kind: evt.KindFaultEnd, Detail: f.String(), Fault: i + 1})
			fn()
		})
	}
	switch f.Kind {
	case faults.ClientPause:
		for _, p := range w.targetProcs(f.Targets) {
			if f.At != "" {
				w.mu.Lock()
				p.arms.ArmPause(i, f)
				w.mu.Unlock()
				continue
			}
			p.pausedUntil = max(p.pausedUntil, end)
		}
	case faults.NodePause:
		for _, n := range w.targetNodes(f.Targets) {
			n.pausedUntil = max(n.pausedUntil, end)
			n.outFault = i + 1
		}
	case faults.ClockDrift:
		for _, m := range w.targetClocks(f.Targets) {
			m.SetDrift(start, f.DriftPPM)
		}
		for _, n := range w.targetNodes(f.Targets) {
			n.drifting = append(n.drifting, i+1)
		}
		w.clocksMoved(f.Targets)
		healed(func() {
			for _, m := range w.targetClocks(f.Targets) {
				m.SetDrift(end, 0)
			}
			for _, n := range w.targetNodes(f.Targets) {
				n.drifting = slices.DeleteFunc(n.drifting, func(x int) bool { return x == i+1 })
			}
			w.clocksMoved(f.Targets)
		})
	case faults.ClockJump:
		for _, m := range w.targetClocks(f.Targets) {
			m.Jump(start, f.Jump)
		}
		w.clocksMoved(f.Targets)
	case faults.Partition, faults.Delay, faults.Loss:
		lf := w.net.add(f, end, i+1)
		healed(func() { w.net.remove(lf) })
	case faults.Crash:
		targets := w.targetNodes(f.Targets)
		for _, n := range targets {
			w.crashNode(n, string(n.cfg.Persistence))
			n.outFault = i + 1
		}
		if f.NodeClock {
			for _, n := range targets {
				w.restartByClock(n, i, f)
			}
			return
		}
		healed(func() {
			for _, n := range targets {
				w.crashEnded(n)
			}
		})
	case faults.SlotMigration:
		w.startMigration(i, f, start, end)
	case faults.Failover:
		if w.sentinel == nil {
			return
		}
		// The primary of each targeted group (every group when the fault
		// names none) crashes.
		var down []*Node
		for _, g := range w.sentinel.groups {
			if len(f.Targets) == 0 || slices.Contains(f.Targets, groupName(g.id)) {
				down = append(down, w.nodes[g.primary])
			}
		}
		for _, n := range down {
			if g := w.sentinel.groupOf(n.id); g != nil {
				g.fault, g.lostKeys = i+1, n.liveValues()
			}
			w.crashNode(n, "failover")
		}
		healed(func() {
			for _, n := range down {
				w.crashEnded(n)
			}
		})
	}
}

// restartByClock ends crash fault i (f, NodeClock) of n when n's own clock
// has counted f.Duration since now: an event at the true time that clock
// will read it, and again whenever the clock jumps or changes rate
// (clocksMoved). The first check that finds the time reached ends the
// crash; later ones do nothing.
func (w *World) restartByClock(n *Node, i int, f faults.Fault) {
	deadline := n.clk.Local(w.now()) + int64(f.Duration)
	done := false
	var check func()
	check = func() {
		if done || w.phase != phaseSafety {
			return // ended, or the heal lifted it
		}
		now := w.now()
		if left := deadline - n.clk.Local(now); left > 0 {
			w.after(now+int64(n.clk.TrueAfter(time.Duration(left))), stepFaultEnd, check)
			return
		}
		done = true
		w.record(Event{Proc: "world", Kind: evt.KindFaultEnd, Detail: f.String(), Fault: i + 1})
		w.crashEnded(n)
	}
	n.clockWaiters = append(n.clockWaiters, func() bool { check(); return done })
	check()
}

// clocksMoved tells the named nodes' clock waiters (restartByClock) that
// their clock jumped or changed rate; waiters that are done are dropped.
func (w *World) clocksMoved(names []string) {
	for _, n := range w.targetNodes(names) {
		kept := n.clockWaiters[:0]
		for _, wake := range n.clockWaiters {
			if !wake() {
				kept = append(kept, wake)
			}
		}
		clear(n.clockWaiters[len(kept):])
		n.clockWaiters = kept
	}
}

// crashNode starts one crash of n. Crashes of one node combine: it stays
// down until the last of them ends (or the heal), as pauses do.
func (w *World) crashNode(n *Node, detail string) {
	n.downs++
	if n.up {
		n.downLive = n.liveKeys()
		if n.w.cfail != nil {
			n.downVals = n.liveValues()
		}
		n.crash()
		w.record(Event{Proc: n.name, Kind: evt.KindCrash, Detail: detail})
	}
}

// crashEnded ends one crash of n; the node restarts when none is left.
func (w *World) crashEnded(n *Node) {
	if n.downs > 0 {
		n.downs--
	}
	if n.downs == 0 && !n.up {
		n.restart()
		w.record(Event{Proc: n.name, Kind: evt.KindRestart})
		w.gossipAfterRestart(n) // cluster_gossip.go
	}
}

func (w *World) targetProcs(names []string) []*Proc {
	var out []*Proc
	for _, s := range names {
		if a, ok := w.lookup(s); ok && a < nodeBase {
			out = append(out, w.procs[a])
		}
	}
	return out
}

func (w *World) targetNodes(names []string) []*Node {
	var out []*Node
	for _, s := range names {
		a, ok := w.lookup(s)
		switch {
		case !ok:
		case a >= serviceBase && a < sentinelAddr:
			out = append(out, w.services[a-serviceBase])
		case a >= nodeBase && a < serviceBase:
			out = append(out, w.nodes[a-nodeBase])
		}
	}
	return out
}

func (w *World) targetClocks(names []string) []clockModel {
	var out []clockModel
	for _, p := range w.targetProcs(names) {
		out = append(out, p.clk)
	}
	for _, n := range w.targetNodes(names) {
		out = append(out, n.clk)
	}
	return out
}

// Point is called by lock code (through locks.Env.At), and by the
// workload at its own points (faults.HarnessPoints), when the process
// reaches a point. Every fault armed on this process at that point begins
// now (World.fire, run by the scheduler before the process goes on, so the
// request it is about to send meets the fault). If a pause targeted at
// that point is armed, the process then pauses here: it stops for the
// pause's duration, its clock running.
func (p *Proc) Point(point string) {
	w := p.w
	w.mu.Lock()
	if w.stopping || w.phase != phaseSafety {
		w.mu.Unlock()
		return
	}
	fire, a := p.arms.Reach(point)
	if len(fire) > 0 {
		now := w.now()
		for _, af := range fire {
			p.seq++
			// No target: the event must not wait out a pause this point
			// starts below.
			w.scheduleFromLocked(now, p.src, p.seq, nil, stepFault, func() { w.fire(af.I, af.F) })
		}
	}
	if a == nil {
		if len(fire) > 0 {
			// Go on once the faults have begun.
			p.blockUntilLocked(w.now(), 0, stepWake)
			return
		}
		w.mu.Unlock()
		return
	}
	if e := w.effect(a.Fault); e != nil && !e.OwnsKey {
		e.OwnsKey = w.ownsLiveKey(p.name)
	}
	now := w.now()
	p.pausedUntil = max(p.pausedUntil, now+a.D)
	until := p.pausedUntil
	ev := Event{T: now, Proc: p.name, Kind: evt.KindPause, Local: p.clk.Local(now), Detail: a.Desc, Fault: a.Fault}
	p.addRecordLocked(ev)
	p.blockUntilLocked(until, until, stepResume)
}

// noteStart records what fault i (f) found when it started: which of its
// target nodes exist, and the lock keys live on them (Result.Effects).
func (w *World) noteStart(i int, f faults.Fault) {
	e := &w.effects[i]
	e.Started = true
	switch f.Kind {
	case faults.NodePause, faults.Crash, faults.ClockDrift, faults.ClockJump:
		for _, n := range w.targetNodes(f.Targets) {
			if n.svc != nil {
				e.Members++
				continue
			}
			e.targets = append(e.targets, n)
			e.LiveKeys += n.liveKeys()
		}
	case faults.ClientPause:
		if f.At == "" {
			for _, p := range w.targetProcs(f.Targets) {
				e.OwnsKey = e.OwnsKey || w.ownsLiveKey(p.name)
			}
		}
	case faults.Failover:
		if w.sentinel == nil {
			return
		}
		for _, g := range w.sentinel.groups {
			if len(f.Targets) == 0 || slices.Contains(f.Targets, groupName(g.id)) {
				e.targets = append(e.targets, w.nodes[g.primary])
				e.LiveKeys += w.nodes[g.primary].liveKeys()
			}
		}
	}
}
