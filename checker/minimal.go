package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// MaxMinimalEvents bounds a minimal history (Minimal): what a reader
// takes in at a glance.
const MaxMinimalEvents = 8

// MaxMinimalSpans bounds the bars and marks of a minimal history's
// timeline.
const MaxMinimalSpans = 64

// MinimalHistory is a counterexample told in a few events: who acquired
// the lock on which nodes, the faults that struck, how the first
// holder's key went away, and the violation (the overlap, the stale or
// lost write); and what a per-node timeline of it draws.
type MinimalHistory struct {
	Events  []MinimalEvent  `json:"events"`            // at most MaxMinimalEvents, in time order
	Holders []MinimalHolder `json:"holders"`           // the violation's holders, first holder first
	Nodes   []string        `json:"nodes,omitempty"`   // the nodes any client's command set a lock key on
	Spans   []MinimalSpan   `json:"spans,omitempty"`   // the timeline's bars and marks (at most MaxMinimalSpans)
	Lanes   []string        `json:"lanes,omitempty"`   // its lanes, top to bottom: the holders, the nodes, "storage"
	From    int64           `json:"from_ns"`           // the timeline's window
	To      int64           `json:"to_ns"`             //
	T       int64           `json:"violation_ns"`      // the violation
	Kind    Kind            `json:"kind"`              // its kind
	Note    string          `json:"note,omitempty"`    // what the history cannot tell (no key log)
	Omitted int             `json:"omitted,omitempty"` // events left out to stay within the bound
}

// MinimalEvent is one line of a minimal history.
type MinimalEvent struct {
	T     int64    `json:"t_ns"`
	Who   string   `json:"who"`             // a client, a node, or "world" for a fault
	What  string   `json:"what"`            // the rest of the line
	Nodes []string `json:"nodes,omitempty"` // the nodes it names
}

// MinimalHolder is one of the violation's holders: its acquisition and
// the nodes its commands set its lease value on between the call and the
// reply (its own later deletes removed).
type MinimalHolder struct {
	Client string   `json:"client"`
	Call   int64    `json:"call_ns"`
	OK     int64    `json:"ok_ns"`
	Until  int64    `json:"until_ns,omitempty"` // its belief's end (0: until release)
	Nodes  []string `json:"nodes,omitempty"`
}

// MinimalSpan is a bar (To > From) or a mark (To == From) on a lane.
// Kind is one of: hold (a client's belief), acquiring, key (a holder's
// value on a node; Who is the holder), pause, cut (a partition: Label
// says from what), fault (any other fault on a node or client), write
// (an accepted write; Bad marks the stale or lost one), violation.
type MinimalSpan struct {
	Lane  string `json:"lane"`
	From  int64  `json:"from_ns"`
	To    int64  `json:"to_ns"`
	Kind  string `json:"kind"`
	Who   string `json:"who,omitempty"`
	Label string `json:"label,omitempty"`
	Bad   bool   `json:"bad,omitempty"`
}

// Minimal derives the minimal history of r's first violation from the
// history and the key log; bit says which of the schedule's faults
// (1-based, as Event.Fault) bit (nil: every fault that took effect
// counts). nil when r has no violation. It is pure.
func Minimal(h History, log KeyLog, r Result, bit func(n int) bool) *MinimalHistory {
	v := r.First
	if v == nil {
		return nil
	}
	m := &MinimalHistory{T: v.T, Kind: v.Kind}
	type cand struct {
		e    MinimalEvent
		prio int // lower is kept first
		rank int // at the same instant: faults, then what they did, then the rest
	}
	var cands []cand
	rank := 2
	add := func(prio int, t int64, who, what string, nodes ...string) {
		cands = append(cands, cand{MinimalEvent{T: t, Who: who, What: what, Nodes: nodes}, prio, rank})
	}
	span := func(s MinimalSpan) {
		if len(m.Spans) < MaxMinimalSpans {
			m.Spans = append(m.Spans, s)
		}
	}
	nodeSet := map[string]bool{}
	for _, c := range log.Changes {
		nodeSet[c.Node] = true
	}
	for n := range nodeSet {
		m.Nodes = append(m.Nodes, n)
	}
	slices.Sort(m.Nodes)
	if len(log.Changes) == 0 {
		m.Note = "the run kept no log of the lock's keys (a lock whose state lives in a consensus store): the nodes each client held are not known"
	}

	// The holders: each involved client's latest acquisition by v.T.
	for _, c := range v.Clients {
		ok, call, value, found := lastAcquire(h, c, v.T)
		if !found || len(m.Holders) == 2 {
			continue
		}
		hd := MinimalHolder{Client: c, Call: call, OK: ok, Until: untilOf(h, c, ok)}
		hd.Nodes = lockedNodes(log, c, value, call, ok)
		m.Holders = append(m.Holders, hd)
	}
	slices.SortStableFunc(m.Holders, func(a, b MinimalHolder) int { return cmpInt(a.OK, b.OK) })
	from := v.T
	for _, hd := range m.Holders {
		from = min(from, hd.Call)
	}
	end := v.T
	if rv := r.FirstResourceViolation; rv != nil {
		end = max(end, rv.T)
	}
	if ov := r.FirstOverlap; ov != nil && v.Kind == KindLeaseOverlap {
		end = max(end, ov.End)
	}
	for _, hd := range m.Holders {
		what := "acquired the lock"
		if len(hd.Nodes) > 0 {
			what += " on " + nodeList(hd.Nodes, len(m.Nodes))
		}
		switch {
		case hd.Until > 0 && hd.Until < hd.OK:
			what += fmt.Sprintf(", its lease already over (it believed until %s)", at(hd.Until))
		case hd.Until > 0:
			what += fmt.Sprintf(", believing until %s", at(hd.Until))
		}
		if hd.OK-hd.Call > int64(time.Second) {
			what += fmt.Sprintf(" (the call began at %s)", at(hd.Call))
		}
		add(0, hd.OK, hd.Client, what, hd.Nodes...)
		span(MinimalSpan{Lane: hd.Client, From: hd.Call, To: hd.OK, Kind: "acquiring"})
		until := hd.Until
		if until <= 0 || until > end {
			until = end
		}
		if r := releaseAfter(h, hd.Client, hd.OK); r > 0 && r < until {
			until = r // it let go before its lease ran out
		}
		if until > hd.OK {
			span(MinimalSpan{Lane: hd.Client, From: hd.OK, To: until, Kind: "hold", Who: hd.Client, Label: "holds " + strings.Join(hd.Nodes, ",")})
		} else {
			span(MinimalSpan{Lane: hd.Client, From: hd.OK, To: hd.OK, Kind: "hold", Who: hd.Client, Label: "lease over"})
		}
	}

	// The holders' values on the nodes, and how the first holder's went
	// away before the second's acquisition returned (or the violation).
	lostBy := v.T
	if len(m.Holders) == 2 {
		lostBy = m.Holders[1].OK
	}
	// The first holder's losses: one line for the nodes that lost its key
	// the same way to the same taker (a TTL that ran out everywhere).
	type loss struct {
		t       int64
		how, by string
		nodes   []string
	}
	var losses []*loss
	for i, hd := range m.Holders {
		_, _, value, _ := lastAcquire(h, hd.Client, v.T)
		for _, n := range hd.Nodes {
			set, gone, by, taken, how := valueFate(h, log, hd.Client, value, n, hd.Call, end)
			if set < 0 {
				continue
			}
			stop := end
			if gone > 0 {
				stop = gone
			}
			span(MinimalSpan{Lane: n, From: set, To: max(stop, set), Kind: "key", Who: hd.Client, Label: hd.Client})
			if i == 1 && !slices.Contains(m.Holders[0].Nodes, n) {
				if fo, ok := promotedBetween(h, n, from, hd.OK); ok {
					rank = 1
					add(1, fo.T, "sentinel", fmt.Sprintf("failed over (%s): the promoted %s never had %s's key", fo.Detail, n, m.Holders[0].Client), n)
					rank = 2
				}
			}
			if i == 0 && gone > 0 && gone <= lostBy && by != "" {
				span(MinimalSpan{Lane: n, From: taken, To: taken, Kind: "key", Who: by, Label: by})
			}
			if i == 0 && gone > 0 && gone <= lostBy && how != "" {
				found := false
				for _, l := range losses {
					if l.how == how && l.by == by {
						l.t, l.nodes, found = min(l.t, gone), append(l.nodes, n), true
						break
					}
				}
				if !found {
					losses = append(losses, &loss{gone, how, by, []string{n}})
				}
			}
		}
	}
	rank = 1
	for _, l := range losses {
		where := strings.Join(l.nodes, ", ")
		what := fmt.Sprintf("key on %s %s", where, l.how)
		if len(l.nodes) > 1 {
			what = fmt.Sprintf("keys on %s %s", where, l.how)
		}
		if l.by != "" {
			what += fmt.Sprintf("; %s took %s", l.by, where)
		}
		add(1, l.t, m.Holders[0].Client+"'s", what, l.nodes...)
	}
	rank = 2

	// The faults that struck in the window: in force at its start, or
	// begun in it; those of one kind begun at one instant in one line.
	rank = 0
	type faultLine struct {
		prio  int
		t     int64
		kind  faults.Kind
		parts []string
		nodes []string
	}
	var lines []*faultLine
	addFault := func(prio int, t int64, k faults.Kind, part string, nodes ...string) {
		for _, l := range lines {
			if l.t == t && l.kind == k {
				l.parts = append(l.parts, part)
				l.nodes = append(l.nodes, nodes...)
				l.prio = min(l.prio, prio)
				return
			}
		}
		lines = append(lines, &faultLine{prio, t, k, []string{part}, nodes})
	}
	for i, f := range h.Faults {
		n := i + 1
		began, ok := faultBegan(h, n)
		if !ok || (bit != nil && !bit(n)) || began > v.T {
			continue
		}
		stop := faultEnd(h, n, f, began)
		if stop < from && f.Kind != faults.ClockJump {
			continue
		}
		if f.Kind == faults.ClockJump && began < from {
			continue
		}
		prio := 2
		if began < from {
			prio = 3 // set the stage; the faults in the window come first
		}
		switch f.Kind {
		case faults.ClientPause:
			addFault(prio, began, f.Kind, fmt.Sprintf("%s paused for %v%s", strings.Join(f.Targets, ","), f.Duration, pausePoint(f)), f.Targets...)
			for _, t := range f.Targets {
				span(MinimalSpan{Lane: t, From: began, To: stop, Kind: "pause", Label: "paused " + f.Duration.String()})
			}
		case faults.Partition:
			cut := strings.Join(f.From, ",") + " cut from " + strings.Join(f.To, ",")
			addFault(prio, began, f.Kind, fmt.Sprintf("%s until %s", cut, at(stop)), append(slices.Clone(f.From), f.To...)...)
			for _, p := range f.From {
				span(MinimalSpan{Lane: p, From: began, To: stop, Kind: "cut", Label: "cut from " + strings.Join(f.To, ",")})
			}
			for _, p := range f.To {
				span(MinimalSpan{Lane: p, From: began, To: stop, Kind: "cut", Label: "cut from " + strings.Join(f.From, ",")})
			}
		default:
			what := string(f.Kind)
			if f.Kind == faults.ClockJump {
				what = "clock jumps"
			}
			if p := f.Param(); p != "" {
				what += " " + p
			}
			if f.Kind != faults.ClockJump && f.Duration > 0 {
				what += fmt.Sprintf(" until %s", at(stop))
			}
			who := strings.Join(f.Targets, ",")
			if f.Kind == faults.Failover {
				who, what = "the primary", "crashes: Sentinel fails over to a replica"
			}
			addFault(prio, began, f.Kind, who+" "+what, f.Targets...)
			for _, t := range f.Targets {
				span(MinimalSpan{Lane: t, From: began, To: max(began, stop), Kind: "fault", Label: what})
			}
		}
	}

	for _, l := range lines {
		what := strings.Join(l.parts, "; ")
		if l.kind == faults.Partition {
			what = "partition: " + what
		}
		add(l.prio, l.t, "fault", what, l.nodes...)
	}
	rank = 2

	// The violation, and the write that broke the resource.
	switch {
	case v.Kind == KindLeaseOverlap && r.FirstOverlap != nil:
		ov := r.FirstOverlap
		add(0, ov.Start, ov.A+" and "+ov.B, fmt.Sprintf("both hold the lock (lease overlap for %v)", time.Duration(ov.End-ov.Start).Round(time.Millisecond)))
		span(MinimalSpan{Lane: "", From: ov.Start, To: ov.End, Kind: "violation", Label: "overlap"})
	case v.Kind == KindResource:
		// told below, by the write
	default:
		add(0, v.T, strings.Join(v.Clients, " and "), firstClause(v.Detail))
		span(MinimalSpan{Lane: "", From: v.T, To: v.T, Kind: "violation", Label: string(v.Kind)})
	}
	if rv := r.FirstResourceViolation; rv != nil {
		if rv.PreviousClient != "" && rv.PreviousT >= from && rv.PreviousClient != rv.Client {
			what, prio := fmt.Sprintf("wrote %d to %s", rv.Previous, rv.Object), 3
			if u := untilAt(h, rv.PreviousClient, rv.PreviousT); u > 0 && u < rv.PreviousT {
				what += fmt.Sprintf(", its lease over since %s: a stale write, accepted", at(u))
				prio = 1
			}
			add(prio, rv.PreviousT, rv.PreviousClient, what)
			label := fmt.Sprintf("%s→%d", rv.PreviousClient, rv.Previous)
			if prio == 1 {
				label += " stale"
			}
			span(MinimalSpan{Lane: "storage", From: rv.PreviousT, To: rv.PreviousT, Kind: "write", Who: rv.PreviousClient, Label: label, Bad: prio == 1})
		}
		prio := 0
		if v.Kind != KindResource {
			prio = 2
		}
		add(prio, rv.T, rv.Client, fmt.Sprintf("wrote %d to %s, expected %d: %s", rv.Value, rv.Object, rv.Expected, resourceWhat(*rv)))
		span(MinimalSpan{Lane: "storage", From: rv.T, To: rv.T, Kind: "write", Who: rv.Client, Label: fmt.Sprintf("%s→%d", rv.Client, rv.Value), Bad: true})
		if v.Kind == KindResource {
			span(MinimalSpan{Lane: "", From: rv.T, To: rv.T, Kind: "violation", Label: "resource"})
		}
	}

	// Keep the most telling events within the bound, in time order.
	slices.SortStableFunc(cands, func(a, b cand) int { return cmpInt(int64(a.prio), int64(b.prio)) })
	if len(cands) > MaxMinimalEvents {
		m.Omitted = len(cands) - MaxMinimalEvents
		cands = cands[:MaxMinimalEvents]
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := cmpInt(a.e.T, b.e.T); c != 0 {
			return c
		}
		return a.rank - b.rank
	})
	for _, c := range cands {
		m.Events = append(m.Events, c.e)
	}

	// The window and the lanes.
	m.From, m.To = from, end
	for _, e := range m.Events {
		m.To = max(m.To, e.T) // events before from (faults in force) are drawn from the window's start
	}
	pad := max((m.To-m.From)/20, int64(50*time.Millisecond))
	m.From, m.To = max(0, m.From-pad), m.To+pad
	for _, hd := range m.Holders {
		m.Lanes = appendNew(m.Lanes, hd.Client)
	}
	var nodes []string
	storage := false
	for _, s := range m.Spans {
		switch {
		case s.Lane == "storage":
			storage = true
		case nodeSet[s.Lane]:
			nodes = appendNew(nodes, s.Lane)
		case s.Lane != "" && !slices.Contains(m.Lanes, s.Lane) && slices.Contains(h.Clients, s.Lane):
			m.Lanes = appendNew(m.Lanes, s.Lane)
		}
	}
	slices.Sort(nodes)
	m.Lanes = append(m.Lanes, nodes...)
	if storage {
		m.Lanes = append(m.Lanes, "storage")
	}
	// Spans on lanes not drawn (a partition's far side that is neither
	// a holder nor a lock node) are dropped; clip the rest to the window.
	kept := m.Spans[:0]
	for _, s := range m.Spans {
		if s.Lane != "" && !slices.Contains(m.Lanes, s.Lane) {
			continue
		}
		s.From, s.To = max(s.From, m.From), min(s.To, m.To)
		if s.To < s.From {
			continue
		}
		kept = append(kept, s)
	}
	m.Spans = kept
	return m
}

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

// valueFate follows client c's value on node n from its acquisition's call:
// when c set it there (-1: never), when it went away by end (0: not),
// who took the node then ("" if nobody) and when, and how it went, in a
// few words.
func valueFate(h History, log KeyLog, c, value, n string, call, end int64) (set, gone int64, by string, taken int64, how string) {
	set = -1
	var last KeyChange
	for _, e := range log.Changes {
		if e.Node != n || e.T < call || e.T > end {
			continue
		}
		if set < 0 {
			if e.Peer == c && e.Exists && holds(e.Now, value) {
				set, last = e.T, e
			}
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
