package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// The minimal history's readings of the key log and the history
// (Minimal, minimal.go): which nodes a holder locked, how its value went.

// lockedNodes are the nodes on which client c's commands set its lease
// value between its acquire call and its reply, less those its own
// commands then removed it from (an acquisition that gave up a minority
// and tried again).
func lockedNodes(log KeyLog, c, value string, call, ok int64) []string {
	held := map[string]bool{}
	for _, e := range log.Changes {
		if e.T < call || e.T > ok || e.Peer != c {
			continue
		}
		switch {
		case e.Exists && holds(e.Now, value):
			held[e.Node] = true
		case holds(e.Was, value):
			delete(held, e.Node)
		}
	}
	var out []string
	for n := range held {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// valueFate follows client c's value on node n from the set that counted
// for its acquisition (called at call, returned at ok): when c set it
// there (-1: never), when it went away by end (0: not), who took the node
// then ("" if nobody) and when, and how it went, in a few words. An
// acquisition that retries with one value sets it on a node, deletes it
// and sets it again: the last set before the reply is the one it held
// (the first after the call when none was before the reply).
func valueFate(h History, log KeyLog, c, value, n string, call, ok, end int64) (set, gone int64, by string, taken int64, how string) {
	set = -1
	start := -1
	for i, e := range log.Changes {
		if e.T > end || e.T > ok && start >= 0 {
			break
		}
		if e.Node == n && e.T >= call && e.Peer == c && e.Exists && holds(e.Now, value) {
			start = i
		}
	}
	if start < 0 {
		return set, 0, "", 0, ""
	}
	last := log.Changes[start]
	set = last.T
	for _, e := range log.Changes[start+1:] {
		if e.Node != n || e.T > end {
			continue
		}
		switch {
		case !e.Existed:
			// Gone without a command: expired, lost in a crash or a
			// failover; e created the key anew.
			return set, vanishedAt(h, n, last, e.T), e.Peer, e.T, vanishedHow(h, log, n, last, e.T)
		case !holds(e.Was, value):
			return set, e.T, e.Peer, e.T, "changed without a command (a restart or a failover)"
		case !e.Exists || !holds(e.Now, value):
			verb := "deleted"
			if e.Exists {
				verb = "overwritten"
			}
			who := e.Peer
			if who == c {
				who = c + " itself"
			}
			return set, e.T, "", 0, fmt.Sprintf("%s by %s (%s)", verb, who, firstWord(e.Cmd))
		default:
			last = e
		}
	}
	return set, 0, "", 0, ""
}

// vanishedAt is when a value last set by change last went away on node n
// by true time t: its expiry by the node's clock when no clock fault moved
// that clock meanwhile, else the fault's start; t when neither tells.
func vanishedAt(h History, n string, last KeyChange, t int64) int64 {
	for _, e := range h.Events {
		if e.T > t {
			break
		}
		if e.T < last.T {
			continue
		}
		if e.Proc == n && e.Kind == event.KindCrash {
			return e.T
		}
		if e.Proc == "world" && e.Kind == event.KindFault {
			if f, ok := h.FaultOf(e); ok && f.Kind == faults.ClockJump && slices.Contains(f.Targets, n) {
				return e.T
			}
		}
	}
	if last.ExpireAt > 0 {
		if x := last.T + last.ExpireAt - last.Local; x >= last.T && x <= t {
			return x
		}
	}
	return t
}

// vanishedHow says how a value went away without a command.
func vanishedHow(h History, log KeyLog, n string, last KeyChange, t int64) string {
	for _, e := range h.Events {
		if e.T > t {
			break
		}
		if e.T < last.T {
			continue
		}
		switch {
		case e.Proc == n && e.Kind == event.KindCrash:
			if p := log.Persistence[n]; p != "" {
				return fmt.Sprintf("lost when %s crashed (persistence %s)", n, p)
			}
			return fmt.Sprintf("lost when %s crashed", n)
		case e.Kind == event.KindFailover && strings.HasPrefix(e.Detail, n+" -> "):
			return "left behind by a failover (" + e.Detail + ")"
		case e.Proc == "world" && e.Kind == event.KindFault:
			if f, ok := h.FaultOf(e); ok && (f.Kind == faults.ClockJump || f.Kind == faults.ClockDrift) && slices.Contains(f.Targets, n) {
				return fmt.Sprintf("expired early: %s's clock %s %s", n, map[faults.Kind]string{faults.ClockJump: "jumped", faults.ClockDrift: "drifted"}[f.Kind], f.Param())
			}
		}
	}
	if last.ExpireAt > 0 && last.ExpireAt > last.Local {
		return fmt.Sprintf("expired (its TTL, %v, ran out)", time.Duration(last.ExpireAt-last.Local).Round(time.Millisecond))
	}
	return "expired"
}

// promotedBetween returns the failover between t0 and t1 that promoted
// node n (promoted reads its detail).
func promotedBetween(h History, n string, t0, t1 int64) (Event, bool) {
	for _, e := range h.Events {
		if e.T > t1 {
			break
		}
		if e.T >= t0 && e.Kind == event.KindFailover && promoted(e.Detail) == n {
			return e, true
		}
	}
	return Event{}, false
}

// releaseAfter is client c's first release call after t (0: none).
func releaseAfter(h History, c string, t int64) int64 {
	for _, e := range h.Events[upperBound(h.Events, t):] {
		if e.Proc == c && e.Op == event.OpRelease && e.Kind == event.KindCall {
			return e.T
		}
	}
	return 0
}

// untilOf is the belief end recorded by client c's acquire ok at t.
func untilOf(h History, c string, t int64) int64 {
	for _, e := range h.Events[:upperBound(h.Events, t)] {
		if e.T == t && e.Proc == c && e.Op == event.OpAcquire && e.Kind == event.KindOK {
			return e.Until
		}
	}
	return 0
}

// untilAt is the belief end of client c's latest acquisition by t (0:
// none, or none recorded).
func untilAt(h History, c string, t int64) int64 {
	ok, _, _, found := lastAcquire(h, c, t)
	if !found {
		return 0
	}
	return untilOf(h, c, ok)
}

// faultBegan is when fault n took effect: its fault event, or for a
// targeted client pause its pause event.
func faultBegan(h History, n int) (int64, bool) {
	want := event.KindFault
	if n >= 1 && n <= len(h.Faults) && h.Faults[n-1].Kind == faults.ClientPause && h.Faults[n-1].At != "" {
		want = event.KindPause // armed at its fault event, begun at its pause
	}
	for _, e := range h.Events {
		if e.Fault == n && e.Kind == want {
			return e.T, true
		}
	}
	return 0, false
}

// faultEnd is when fault n, begun at began, ended: its fault-end event,
// else its stated length, else the heal.
func faultEnd(h History, n int, f faults.Fault, began int64) int64 {
	for _, e := range h.Events {
		if e.Fault == n && e.Kind == event.KindFaultEnd {
			return e.T
		}
	}
	if f.Kind == faults.ClockJump {
		return began
	}
	if f.Duration > 0 {
		return began + int64(f.Duration)
	}
	return h.Heal
}

func pausePoint(f faults.Fault) string {
	if f.At == "" {
		return ""
	}
	return " at " + f.At
}

// nodeList names nodes: "n0, n1, n2 (3 of 5 nodes)", or "n0" alone.
func nodeList(nodes []string, total int) string {
	s := strings.Join(nodes, ", ")
	if total > 1 && len(nodes) > 1 { // a quorum: how many of how many
		s += fmt.Sprintf(" (%d of %d nodes)", len(nodes), total)
	}
	return s
}

func resourceWhat(v ResourceViolation) string {
	if v.Value == v.Previous {
		return "lost update (the value did not move)"
	}
	return "lost update or stale write"
}

// firstClause is a detail's text up to its first ";" or ":".
func firstClause(s string) string {
	if i := strings.IndexAny(s, ";"); i > 0 {
		return s[:i]
	}
	return s
}

func firstWord(s string) string {
	if i := strings.IndexByte(s, ' '); i > 0 {
		return strings.ToUpper(s[:i])
	}
	return strings.ToUpper(s)
}

func appendNew(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// down is a node down in a minimal history's window: from its crash to
// its restart (the window's end when it had not restarted by then).
type down struct {
	node     string
	from, to int64
	label    string
}

// downs are the crashes of the nodes in nodes that kept a node down at
// some instant of [from, end], in the history's order.
func downs(h History, nodes map[string]bool, from, end int64) []down {
	var out []down
	for i, e := range h.Events {
		if e.T > end {
			break
		}
		if e.Kind != event.KindCrash || !nodes[e.Proc] {
			continue
		}
		up := end
		for _, r := range h.Events[i+1:] {
			if r.Proc == e.Proc && r.Kind == event.KindRestart {
				up = min(r.T, end)
				break
			}
		}
		if up < from {
			continue
		}
		label := "crashed"
		switch e.Detail {
		case "failover":
			label = "crashed (failed over)"
		case "":
		default:
			label = "crashed (persistence " + e.Detail + ")"
		}
		out = append(out, down{e.Proc, e.T, max(e.T, up), label})
	}
	return out
}

// crashedAt is the node that crashed at t with detail (a failover's
// primary), "" if none did.
func crashedAt(h History, t int64, detail string) string {
	for _, e := range h.Events[:upperBound(h.Events, t)] {
		if e.T == t && e.Kind == event.KindCrash && e.Detail == detail {
			return e.Proc
		}
	}
	return ""
}

// crashLost is when node n crashed after t, by end, losing what it held
// (a crash without persistence, or an old primary's, which comes back as
// a replica of the new one); 0 if it did not.
func crashLost(h History, n string, t, end int64) int64 {
	for _, e := range h.Events[upperBound(h.Events, t):] {
		if e.T > end {
			break
		}
		if e.Proc == n && e.Kind == event.KindCrash && (e.Detail == "" || e.Detail == "none" || e.Detail == "failover") {
			return e.T
		}
	}
	return 0
}

// crashWhat tells a crash of nodes that restart at up: "crashes
// (persistence none), restarts at 50.1s".
func crashWhat(log KeyLog, nodes []string, up int64) string {
	verb, restart := "crash", "restart"
	if len(nodes) == 1 {
		verb, restart = "crashes", "restarts"
	}
	p := ""
	for i, n := range nodes {
		switch {
		case i == 0:
			p = log.Persistence[n]
		case log.Persistence[n] != p:
			p = ""
		}
	}
	if p != "" {
		verb += " (persistence " + p + ")"
	}
	return fmt.Sprintf("%s, %s at %s", verb, restart, at(up))
}
