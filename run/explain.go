package run

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

// maxStoryParts bounds a story: the faults and steps it tells before the
// violation.
const maxStoryParts = 8

// Explain tells an unsafe run's first violation in a sentence, from its
// history: what the involved clients did and the faults that took effect
// from the start of their acquisitions (Violation.Since) to the violation,
// in time order, then the violation itself and its cause (Cause: why the
// first holder's key went away). "" when the run has none.
//
//	c0 acquired at 1.502s (believing until 4.502s); c0 paused 4.5s at
//	after-check at 1.502s (client-pause@1.5s+4.5s c0 at after-check); c1
//	acquired at 4.61s (...); then resource: ...
func Explain(j *Judged) string {
	if j == nil || j.Check.First == nil {
		return ""
	}
	v := j.Check.First
	h := j.History
	involved := func(p string) bool { return slices.Contains(v.Clients, p) }
	var parts []string
	add := func(s string) {
		if len(parts) < maxStoryParts {
			parts = append(parts, s)
		}
	}
	// In a Redis Cluster, where the lock's keys live: their slots and
	// shards; the promotions in those shards are told.
	var keyShards []string
	if j.Job != nil && j.Job.Config.Topology.Shards > 0 {
		n := j.Job.Config.Topology.Shards
		for _, k := range j.Job.Config.WatchKeys {
			slot := sim.KeySlot(k)
			s := sim.SlotShard(slot, n)
			first, last := sim.ShardSlots(s, n)
			parts = append(parts, fmt.Sprintf("the key %s is in slot %d, on cluster shard %d (slots %d-%d)", k, slot, s, first, last))
			keyShards = append(keyShards, fmt.Sprintf("(cluster shard %d,", s))
		}
	}
	// Faults already in force when the story starts (a drift from t=0),
	// and delay spikes over by then whose messages still land: a message
	// sent at a spike's end arrives up to its delay later (a release sent
	// again after a timeout, whose first copy lands after a new hold).
	for i, f := range h.Faults {
		if f.Start >= time.Duration(v.Since) || !tookEffect(h, i+1) || targeted(f) {
			continue
		}
		switch end := endOf(h, i, f); {
		case end > v.Since:
			add(fmt.Sprintf("in force since %s: %s", at(int64(f.Start)), f))
		case f.Kind == faults.Delay && end+int64(f.Delay) > v.Since:
			add(fmt.Sprintf("messages held up by %s landing until %s", f, at(end+int64(f.Delay))))
		}
	}
	for _, e := range h.Events {
		if e.T > v.T {
			break
		}
		if e.T < v.Since {
			continue
		}
		switch {
		case e.Proc == "world" && e.Kind == event.KindFault && e.Fault > 0 && e.Fault <= len(h.Faults) && !targeted(h.Faults[e.Fault-1]):
			add(fmt.Sprintf("at %s %s", at(e.T), e.Detail))
		case e.Kind == event.KindPause && involved(e.Proc):
			add(fmt.Sprintf("%s paused at %s (%s)", e.Proc, at(e.T), e.Detail))
		case e.Kind == event.KindOK && e.Op == event.OpAcquire && involved(e.Proc):
			switch {
			case e.Until > 0 && e.Until < e.T:
				add(fmt.Sprintf("%s acquired at %s with its lease already over (it believed until %s)", e.Proc, at(e.T), at(e.Until)))
			case e.Until > 0:
				add(fmt.Sprintf("%s acquired at %s (believing until %s)", e.Proc, at(e.T), at(e.Until)))
			default:
				add(fmt.Sprintf("%s acquired at %s", e.Proc, at(e.T)))
			}
		case e.Kind == event.KindZKExpire:
			add(expiry(e, involved(e.Proc)))
		case (e.Kind == event.KindCrash || e.Kind == event.KindRestart) && e.Proc != "world":
			add(fmt.Sprintf("%s %s at %s", e.Proc, e.Kind, at(e.T)))
		case e.Kind == event.KindFailover && slices.ContainsFunc(keyShards, func(s string) bool { return strings.Contains(e.Detail, s) }):
			add(fmt.Sprintf("promoted at %s: %s%s", at(e.T), e.Detail, promotionNote(j, e.Detail)))
		}
	}
	parts = append(parts, "then "+v.Detail)
	if v.Cause != "" {
		parts = append(parts, v.Cause)
	}
	return strings.Join(parts, "; ")
}

// expiry tells a consensus session's expiry: the real arm records it as
// the holder whose node went ("c0's session expired: ..."), the simulator
// as the leader that expired it (its detail names the session).
func expiry(e checker.Event, holder bool) string {
	if holder {
		return fmt.Sprintf("at %s %s's %s", at(e.T), e.Proc, e.Detail)
	}
	return fmt.Sprintf("at %s the leader %s expired %s (no heartbeat for the session timeout)", at(e.T), e.Proc, e.Detail)
}

// endOf is when fault i (f) ended: its stated end, or for a crash timed by
// the node's own clock its fault-end event (never: the heal).
func endOf(h checker.History, i int, f faults.Fault) int64 {
	if !f.NodeClock {
		return int64(f.End())
	}
	for _, e := range h.Events {
		if e.Proc == "world" && e.Kind == event.KindFaultEnd && e.Fault == i+1 {
			return e.T
		}
	}
	return h.Heal
}

// targeted reports whether f is a client pause armed for a pause point:
// the story tells it when it fires (its "pause" event), not when armed.
func targeted(f faults.Fault) bool { return f.Kind == faults.ClientPause && f.At != "" }

// tookEffect reports whether the schedule's fault n (1-based) was applied
// in the run (its "fault" event is in the history).
func tookEffect(h checker.History, n int) bool {
	for _, e := range h.Events {
		if e.Proc == "world" && e.Kind == event.KindFault && e.Fault == n {
			return true
		}
	}
	return false
}

// at renders a true time to the millisecond.
func at(t int64) string {
	return time.Duration(t).Round(time.Millisecond).String()
}

// promotionNote says that the replica a cluster failover's detail names
// as promoted lacked a lock key live on the primary it replaced, as the
// engine recorded it for the fault it credits the promotion to
// (sim.FaultEffect.Promoted, PromotedLacking): "" otherwise (a real run
// cannot always read a cut-off primary, so no claim is made of a
// promotion not seen lacking).
func promotionNote(j *Judged, detail string) string {
	if j.Result == nil {
		return ""
	}
	_, after, ok := strings.Cut(detail, " -> ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(after, " ")
	for _, ee := range j.Result.Effects {
		if ee.Promoted == name && ee.PromotedLacking {
			return ", which lacked a lock key live on the old primary"
		}
	}
	return ""
}
