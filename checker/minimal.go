package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

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
type MinimalSpan struct {
	Lane  string   `json:"lane"`
	From  int64    `json:"from_ns"`
	To    int64    `json:"to_ns"`
	Kind  SpanKind `json:"kind"`
	Who   string   `json:"who,omitempty"`
	Label string   `json:"label,omitempty"`
	Bad   bool     `json:"bad,omitempty"`
}

// SpanKind is what a MinimalSpan draws.
type SpanKind string

// The span kinds.
const (
	SpanHold      SpanKind = "hold"      // a client's belief that it holds the lock
	SpanAcquiring SpanKind = "acquiring" // a client's acquire call, to its reply
	SpanKey       SpanKind = "key"       // a holder's value on a node (Who: the holder)
	SpanPause     SpanKind = "pause"     // a client or node paused
	SpanCut       SpanKind = "cut"       // a partition (Label: cut from what)
	SpanCrash     SpanKind = "crash"     // a node down, from its crash to its restart
	SpanFault     SpanKind = "fault"     // any other fault on a node or client
	SpanWrite     SpanKind = "write"     // an accepted write (Bad: the stale or lost one)
	SpanViolation SpanKind = "violation" // the violation, across every lane
)

// SpanKinds lists every span kind.
var SpanKinds = []SpanKind{SpanHold, SpanAcquiring, SpanKey, SpanPause, SpanCut, SpanCrash, SpanFault, SpanWrite, SpanViolation}

// Known reports whether k is one of SpanKinds.
func (k SpanKind) Known() bool { return slices.Contains(SpanKinds, k) }

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

	// The holders: each involved client's latest acquisition by v.T, or,
	// for the client whose earlier write a resource violation's write
	// clobbered, by that write (it may have released and acquired again
	// between its write and the violation).
	values := map[string]string{}
	for _, c := range v.Clients {
		by := v.T
		if rv := r.FirstResourceViolation; rv != nil && v.Kind == KindResource && c == rv.PreviousClient && c != rv.Client {
			by = rv.PreviousT
		}
		ok, call, value, found := lastAcquire(h, c, by)
		if !found || len(m.Holders) == 2 {
			continue
		}
		hd := MinimalHolder{Client: c, Call: call, OK: ok, Until: untilOf(h, c, ok)}
		hd.Nodes = lockedNodes(log, c, value, call, ok)
		m.Holders = append(m.Holders, hd)
		values[c] = value
	}
	// The first holder is the one whose acquisition began first (whose key
	// went first): one paused in its acquisition returns after the other.
	slices.SortStableFunc(m.Holders, func(a, b MinimalHolder) int {
		if c := cmpInt(a.Call, b.Call); c != 0 {
			return c
		}
		return cmpInt(a.OK, b.OK)
	})
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
		span(MinimalSpan{Lane: hd.Client, From: hd.Call, To: hd.OK, Kind: SpanAcquiring})
		until := hd.Until
		if until <= 0 || until > end {
			until = end
		}
		if r := releaseAfter(h, hd.Client, hd.OK); r > 0 && r < until {
			until = r // it let go before its lease ran out
		}
		if until > hd.OK {
			span(MinimalSpan{Lane: hd.Client, From: hd.OK, To: until, Kind: SpanHold, Who: hd.Client, Label: "holds " + strings.Join(hd.Nodes, ",")})
		} else {
			span(MinimalSpan{Lane: hd.Client, From: hd.OK, To: hd.OK, Kind: SpanHold, Who: hd.Client, Label: "lease over"})
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
		took    int64 // when by took the first of nodes (0: not known)
	}
	var losses []*loss
	for i, hd := range m.Holders {
		for _, n := range hd.Nodes {
			set, gone, by, taken, how := valueFate(h, log, hd.Client, values[hd.Client], n, hd.Call, hd.OK, end)
			if set < 0 {
				continue
			}
			stop := end
			if gone > 0 {
				stop = gone
			} else if t := crashLost(h, n, set, end); t > 0 {
				stop = t // the node went down with it, and came back without it
			}
			span(MinimalSpan{Lane: n, From: set, To: max(stop, set), Kind: SpanKey, Who: hd.Client, Label: hd.Client})
			if i == 1 && !slices.Contains(m.Holders[0].Nodes, n) {
				if fo, ok := promotedBetween(h, n, from, hd.OK); ok {
					rank = 1
					add(1, fo.T, "sentinel", fmt.Sprintf("failed over (%s): the promoted %s never had %s's key", fo.Detail, n, m.Holders[0].Client), n)
					rank = 2
				}
			}
			if i == 0 && gone > 0 && gone <= lostBy && by != "" && !(len(m.Holders) == 2 && by == m.Holders[1].Client && slices.Contains(m.Holders[1].Nodes, n)) {
				// who took the node (the second holder's own key bar shows it)
				span(MinimalSpan{Lane: n, From: taken, To: taken, Kind: SpanKey, Who: by, Label: by})
			}
			if i == 0 && gone > 0 && gone <= lostBy && how != "" {
				found := false
				for _, l := range losses {
					if l.how == how && l.by == by {
						l.t, l.nodes, found = min(l.t, gone), append(l.nodes, n), true
						if taken > 0 && (l.took == 0 || taken < l.took) {
							l.took = taken
						}
						break
					}
				}
				if !found {
					losses = append(losses, &loss{gone, how, by, []string{n}, taken})
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
		switch {
		case l.by != "" && l.took > l.t:
			// taken later: the line's time is the loss, not the take
			what += fmt.Sprintf("; %s took %s from %s", l.by, where, at(l.took))
		case l.by != "":
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
				span(MinimalSpan{Lane: t, From: began, To: stop, Kind: SpanPause, Label: "paused " + f.Duration.String()})
			}
		case faults.Partition:
			cut := strings.Join(f.From, ",") + " cut from " + strings.Join(f.To, ",")
			addFault(prio, began, f.Kind, fmt.Sprintf("%s until %s", cut, at(stop)), append(slices.Clone(f.From), f.To...)...)
			for _, p := range f.From {
				span(MinimalSpan{Lane: p, From: began, To: stop, Kind: SpanCut, Label: "cut from " + strings.Join(f.To, ",")})
			}
			for _, p := range f.To {
				span(MinimalSpan{Lane: p, From: began, To: stop, Kind: SpanCut, Label: "cut from " + strings.Join(f.From, ",")})
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
			switch f.Kind {
			case faults.Failover:
				who, what = "the primary", "crashes: Sentinel fails over to a replica"
				if n := crashedAt(h, began, "failover"); n != "" {
					who = n + ", the primary,"
					addFault(prio, began, f.Kind, who+" "+what, n)
					continue // its crash is drawn below, from the history
				}
			case faults.Crash:
				what = crashWhat(log, f.Targets, stop)
				addFault(prio, began, f.Kind, who+" "+what, f.Targets...)
				continue // drawn below, from the history
			}
			addFault(prio, began, f.Kind, who+" "+what, f.Targets...)
			for _, t := range f.Targets {
				span(MinimalSpan{Lane: t, From: began, To: max(began, stop), Kind: SpanFault, Label: what})
			}
		}
	}
	// The node crashes that kept a node down in the window, as the
	// history has them (a node's crashes combine: down from the first to
	// the restart), on the crashed node's lane.
	for _, d := range downs(h, nodeSet, from, end) {
		span(MinimalSpan{Lane: d.node, From: d.from, To: d.to, Kind: SpanCrash, Label: d.label})
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
		span(MinimalSpan{Lane: "", From: ov.Start, To: ov.End, Kind: SpanViolation, Label: "overlap"})
	case v.Kind == KindResource:
		// told below, by the write
	default:
		add(0, v.T, strings.Join(v.Clients, " and "), firstClause(v.Detail))
		span(MinimalSpan{Lane: "", From: v.T, To: v.T, Kind: SpanViolation, Label: string(v.Kind)})
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
			span(MinimalSpan{Lane: "storage", From: rv.PreviousT, To: rv.PreviousT, Kind: SpanWrite, Who: rv.PreviousClient, Label: label, Bad: prio == 1})
		}
		prio := 0
		if v.Kind != KindResource {
			prio = 2
		}
		add(prio, rv.T, rv.Client, fmt.Sprintf("wrote %d to %s, expected %d: %s", rv.Value, rv.Object, rv.Expected, resourceWhat(*rv)))
		span(MinimalSpan{Lane: "storage", From: rv.T, To: rv.T, Kind: SpanWrite, Who: rv.Client, Label: fmt.Sprintf("%s→%d", rv.Client, rv.Value), Bad: true})
		if v.Kind == KindResource {
			span(MinimalSpan{Lane: "", From: rv.T, To: rv.T, Kind: SpanViolation, Label: "resource"})
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
