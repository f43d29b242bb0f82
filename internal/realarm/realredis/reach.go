package realredis

import (
	"fmt"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// Which faults of a real run were carried out, and why not. A fault the
// real arm cannot carry out at all is not counted as injected, gets no
// fault event, and is listed in Info.NotInjected with the reason (the
// summary's "not injected:" lines); the summary's fault list says of
// each fault when it was carried out, or why not (FaultReach).

// carryOut resolves fault i's leader target and says whether the real arm
// carries it out at all; when it does not, the fault is listed as not
// injected with why (a member clock fault's reason is also the summary's
// node clocks line, as before).
func (w *world) carryOut(i int, f faults.Fault) (faults.Fault, bool) {
	r, led := w.resolveLeader(f) // consensus.go: a "leader" target, asked of the servers now
	why := w.notCarriedOut(f, r, led)
	if why == "" && (r.Kind == faults.Partition || r.Kind == faults.Delay) && w.links.separates(r) == 0 && !w.cutsMembers(r) {
		why = "no link of this run runs between its sides"
	}
	if why == "" {
		return r, true
	}
	desc := f.String()
	if led && f.NamesLeader() {
		desc = fmt.Sprintf("%s (resolved at its start: %s)", f, r)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if f.NamesLeader() && !led && w.coord != nil {
		if e := w.effectLocked(i); e != nil {
			e.NoLeader = true // run.Effects: its leader target named nobody
		}
	}
	if led && (r.Kind == faults.ClockJump || r.Kind == faults.ClockDrift) {
		w.clockNote = why // the summary's "node clocks" line says it too
	}
	w.notInjected = append(w.notInjected, desc+": "+why)
	if w.skipped == nil {
		w.skipped = map[int]string{}
	}
	w.skipped[i] = why
	return r, false
}

// notCarriedOut says why fault f, r once its leader target is resolved
// (led: a member led at its start), is not carried out at all ("" when
// it is, in part or whole).
func (w *world) notCarriedOut(f, r faults.Fault, led bool) string {
	switch {
	case led:
		return w.coordNotCarriedOut(r)
	case w.coord == nil:
		return "it names the leader, and this world has no coordination service"
	default:
		return "it names the leader, and no member led at its start (an election, or the members down or paused)"
	}
}

// FaultReach says, per fault of the schedule (in its order), whether the
// real arm carried it out and when, or why not.
func (jd *Judged) FaultReach() []string {
	fs := jd.Job.Config.Faults
	out := make([]string, len(fs))
	began, fired, as := map[int]int64{}, map[int]int64{}, map[int]string{}
	for _, ev := range jd.Result.History {
		if ev.Kind == event.KindFault && ev.Fault > 0 && as[ev.Fault-1] == "" {
			as[ev.Fault-1] = ev.Detail // a leader target resolved, as carried out
		}
		m := began
		switch {
		case ev.Fault <= 0:
			continue
		case ev.Kind == event.KindPause:
			m = fired
		case ev.Kind != event.KindFault:
			continue
		}
		if _, ok := m[ev.Fault-1]; !ok {
			m[ev.Fault-1] = ev.T
		}
	}
	heal := int64(-1)
	for _, ev := range jd.Result.History {
		if ev.Kind == event.KindHeal {
			heal = ev.T
			break
		}
	}
	at := func(t int64) time.Duration { return time.Duration(t).Round(time.Millisecond) }
	// cut says how long a fault that began at t lasted when the heal ended
	// it before its end ("" when it ran its full length).
	cut := func(f faults.Fault, t int64) string {
		if f.Duration <= 0 || heal < 0 || t+int64(f.Duration) <= heal {
			return ""
		}
		return fmt.Sprintf("; the heal ended it at t=%v: it lasted %v of %v", at(heal), at(max(0, heal-t)), f.Duration)
	}
	for i, f := range fs {
		t, ok := began[i]
		ft, fok := fired[i]
		switch {
		case ok && f.Kind == faults.ClientPause && f.At != "" && fok:
			out[i] = fmt.Sprintf("armed at t=%v, fired at t=%v (its client reached %s)%s", at(t), at(ft), f.At, cut(f, ft))
		case ok && f.Kind == faults.ClientPause && f.At != "":
			out[i] = fmt.Sprintf("armed at t=%v, never fired: its client did not reach %s while it waited (not counted as injected)", at(t), f.At)
		case ok && f.At != "":
			out[i] = fmt.Sprintf("armed, began at t=%v (its client %s reached %s)%s", at(t), f.On, f.At, cut(f, t))
		case f.At != "" && f.Start < jd.Job.Config.Duration && jd.Info.Skipped[i] == "":
			out[i] = fmt.Sprintf("armed, never began: its client %s did not reach %s while it waited (not counted as injected)", f.On, f.At)
		case ok && f.NamesLeader():
			out[i] = fmt.Sprintf("carried out at t=%v as %s%s", at(t), as[i], cut(f, t))
		case ok:
			out[i] = fmt.Sprintf("carried out at t=%v%s", at(t), cut(f, t))
		case jd.Info.Skipped[i] != "":
			out[i] = "not injected: " + jd.Info.Skipped[i]
		case f.Start >= jd.Job.Config.Duration:
			out[i] = "not injected: it begins after the safety phase"
		default:
			out[i] = "not injected: the run had stopped or healed before it began"
		}
	}
	return out
}
