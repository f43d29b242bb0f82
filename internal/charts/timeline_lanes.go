package charts

// The timeline's model: the history read into lanes of spans, marks and
// lines (buildTimeline), the faults drawn on it, and which lanes to show.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// buildTimeline turns the history into items, keeping those that touch
// [from, to].
func buildTimeline(h checker.History, r checker.Result, from, to int64) *timeline {
	tl := &timeline{from: from, to: to, clients: map[string]bool{}}
	for _, c := range h.Clients {
		tl.clients[c] = true
	}
	end := h.End
	if end <= 0 {
		end = to
	}

	// Holds and what they carried.
	type acqKey struct {
		proc string
		t    int64
	}
	tokens := map[acqKey]int64{}
	for _, e := range h.Events {
		if e.Op == event.OpAcquire && e.Kind == event.KindOK && e.Token != 0 {
			tokens[acqKey{e.Proc, e.T}] = e.Token
		}
	}
	for _, hd := range checker.Holds(h.LockOps(), end) {
		label := ""
		if tok, ok := tokens[acqKey{hd.Proc, hd.Start}]; ok {
			label = "token " + strconv.FormatInt(tok, 10)
		}
		tl.addSpan(span{proc: hd.Proc, start: hd.Start, end: hd.End, kind: kHold, label: label, lo: -0.22, hi: 0.22})
	}
	if ov := r.FirstOverlap; ov != nil && r.First != nil && r.First.Kind == checker.KindLeaseOverlap {
		for _, p := range []string{ov.A, ov.B} {
			tl.addSpan(span{proc: p, start: ov.Start, end: ov.End, kind: kOverlap, lo: -0.45, hi: 0.45})
		}
	}

	// Operations in flight, outcomes, deadlines.
	type opKey struct {
		proc string
		id   int64
	}
	calls := map[opKey]int64{}
	var hot *checker.Violation
	if r.First != nil {
		hot = r.First
	}
	var resourceHot *checker.ResourceViolation
	if hot != nil && hot.Kind == checker.KindResource {
		resourceHot = r.FirstResourceViolation
	}
	type writeCall struct {
		t     int64
		value int64
	}
	lastWrite := map[string]writeCall{}
	// A hold's validity deadline is drawn unless the hold ended (its
	// release was called) before it, or a renewal moved it: a deadline
	// nobody reached is noise, often inside a later hold's bar.
	deadline := map[string]int64{}
	endHold := func(proc string, at int64) {
		if d, ok := deadline[proc]; ok && d <= at {
			tl.addMark(mark{proc: proc, t: d, kind: kDeadline})
		}
		delete(deadline, proc)
	}
	var crashed = map[string]int64{}
	var crashOrder []string
	for _, e := range h.Events {
		switch {
		case e.Op == event.OpAcquire && e.Kind == event.KindCall:
			calls[opKey{e.Proc, e.OpID}] = e.T
		case e.Op == event.OpAcquire && (e.Kind == event.KindOK || e.Kind == event.KindFail || e.Kind == event.KindUnknown):
			if t0, ok := calls[opKey{e.Proc, e.OpID}]; ok {
				tl.addSpan(span{proc: e.Proc, start: t0, end: e.T, kind: kAcquiring, lo: -0.035, hi: 0.035})
				delete(calls, opKey{e.Proc, e.OpID})
			}
			switch e.Kind {
			case event.KindOK:
				if e.Until > 0 {
					deadline[e.Proc] = e.Until
				}
			case event.KindFail:
				tl.addMark(mark{proc: e.Proc, t: e.T, kind: kAcqFail})
			case event.KindUnknown:
				tl.addMark(mark{proc: e.Proc, t: e.T, kind: kAcqUnk, label: "?"})
			}
		case e.Op == event.OpAcquire && e.Kind == event.KindRenew:
			if e.Until > 0 {
				deadline[e.Proc] = e.Until
			}
		case e.Op == event.OpRelease && e.Kind == event.KindCall:
			endHold(e.Proc, e.T)
		case e.Op == event.OpWrite && e.Kind == event.KindCall:
			tl.addMark(mark{proc: e.Proc, t: e.T, kind: kWriteCall})
			lastWrite[e.Proc] = writeCall{t: e.T, value: e.Value}
		case e.Kind == event.KindStoreWrite:
			label := fmt.Sprintf("%s→%d", e.Peer, e.Value)
			if e.Token != 0 {
				label += fmt.Sprintf(" #%d", e.Token)
			}
			kind := kStoreOK
			if e.Result != event.ResultOK {
				kind = kStoreFenc
				label += " fenced"
			}
			isHot := resourceHot != nil && e.T == resourceHot.T && e.Peer == resourceHot.Client && e.Result == event.ResultOK
			tl.addMark(mark{proc: e.Proc, t: e.T, kind: kind, label: label, hot: isHot})
			if w, ok := lastWrite[e.Peer]; ok && w.value == e.Value && tl.inWindow(w.t, e.T) {
				tl.links = append(tl.links, link{from: e.Peer, to: e.Proc, t0: w.t, t1: e.T, kind: kind})
			}
		case e.Kind == event.KindPause && e.Op == "":
			if f, ok := h.FaultOf(e); ok {
				tl.addSpan(span{proc: e.Proc, start: e.T, end: e.T + int64(f.Duration), kind: kPaused, label: "paused " + fmtDur(f.Duration), lo: -0.45, hi: 0.45})
			}
		case e.Kind == event.KindCrash && e.Op == "":
			if _, down := crashed[e.Proc]; !down {
				crashOrder = append(crashOrder, e.Proc)
			}
			crashed[e.Proc] = e.T
			label := "crash"
			if e.Detail != "" {
				label += " (" + e.Detail + ")"
			}
			tl.addMark(mark{proc: e.Proc, t: e.T, kind: kCrash, label: label})
		case e.Kind == event.KindRestart && e.Op == "":
			if t0, ok := crashed[e.Proc]; ok {
				tl.addSpan(span{proc: e.Proc, start: t0, end: e.T, kind: kDown, lo: -0.3, hi: 0.3})
				delete(crashed, e.Proc)
			}
			tl.addMark(mark{proc: e.Proc, t: e.T, kind: kRestart, label: "restart"})
		case e.Kind == event.KindFailover:
			tl.addMark(mark{proc: e.Proc, t: e.T, kind: kFailover, label: "failover " + e.Detail})
		case e.Proc == "world" && e.Kind == event.KindFault:
			if f, ok := h.FaultOf(e); ok {
				tl.addFault(e.T, f, end)
			}
		case e.Proc == "world" && e.Kind == event.KindHeal:
			if e.T >= from && e.T <= to {
				tl.vlines = append(tl.vlines, vline{t: e.T, kind: kHeal, label: "heal"})
			}
		}
	}
	// Holds not released before the end: their deadlines stand, in a
	// fixed order.
	var holding []string
	for proc := range deadline {
		holding = append(holding, proc)
	}
	slices.Sort(holding)
	for _, proc := range holding {
		endHold(proc, math.MaxInt64)
	}
	// Acquisitions still in flight and nodes still down at the end.
	var open []opKey
	for k := range calls {
		open = append(open, k)
	}
	slices.SortFunc(open, func(a, b opKey) int {
		return cmp.Or(cmp.Compare(a.proc, b.proc), cmp.Compare(a.id, b.id))
	})
	for _, k := range open {
		tl.addSpan(span{proc: k.proc, start: calls[k], end: end, kind: kAcquiring, lo: -0.035, hi: 0.035})
	}
	for _, p := range crashOrder {
		if t0, ok := crashed[p]; ok {
			tl.addSpan(span{proc: p, start: t0, end: end, kind: kDown, lo: -0.3, hi: 0.3})
		}
	}
	if hot != nil && hot.T >= from && hot.T <= to {
		tl.vlines = append(tl.vlines, vline{t: hot.T, kind: kViolation, label: "first violation: " + string(hot.Kind)})
	}
	return tl
}

// addFault turns one injected fault into items on its targets' lanes.
func (tl *timeline) addFault(t int64, f faults.Fault, end int64) {
	stop := min(t+int64(f.Duration), end)
	switch f.Kind {
	case faults.ClientPause:
		if f.At != "" {
			return // armed: drawn when it fires (its "pause" event)
		}
		for _, p := range f.Targets {
			tl.addSpan(span{proc: p, start: t, end: stop, kind: kPaused, label: "paused " + fmtDur(f.Duration), lo: -0.45, hi: 0.45})
		}
	case faults.NodePause:
		for _, p := range f.Targets {
			tl.addSpan(span{proc: p, start: t, end: stop, kind: kPaused, label: "paused " + fmtDur(f.Duration), lo: -0.45, hi: 0.45})
		}
	case faults.ClockJump:
		for _, p := range f.Targets {
			tl.addMark(mark{proc: p, t: t, kind: kJump, label: "clock " + f.Param()})
		}
	case faults.ClockDrift:
		for _, p := range f.Targets {
			tl.addSpan(span{proc: p, start: t, end: stop, kind: kDrift, label: "drift " + f.Param(), lo: 0.3, hi: 0.45})
		}
	case faults.Partition, faults.Delay, faults.Loss:
		label := string(f.Kind)
		if x := f.Param(); x != "" {
			label += " " + x
		}
		var procs []string
		for _, p := range append(slices.Clone(f.From), f.To...) {
			if !slices.Contains(procs, p) {
				procs = append(procs, p)
			}
		}
		tl.faultSeq++
		for _, p := range procs {
			tl.addSpan(span{proc: p, start: t, end: stop, kind: kNet, label: label, group: tl.faultSeq, lo: -0.45, hi: -0.32})
		}
	}
}

// pickLanes orders the processes: the violation's clients, the storage,
// other clients, nodes, Sentinel; at most max of them. It returns the
// lanes and how many processes with items were left out.
func (tl *timeline) pickLanes(h checker.History, r checker.Result, max int) (lanes []string, omitted int) {
	has := map[string]bool{}
	for _, s := range tl.spans {
		if s.kind != kNet || tl.clients[s.proc] { // a node's lane with only network bands says little
			has[s.proc] = true
		}
	}
	for _, m := range tl.marks {
		has[m.proc] = true
	}
	add := func(p string) {
		if !slices.Contains(lanes, p) {
			lanes = append(lanes, p)
		}
	}
	if r.First != nil {
		for _, c := range r.First.Clients {
			add(c)
		}
	}
	rank := func(p string) int {
		switch {
		case p == "store":
			return 0
		case tl.clients[p]:
			return 1
		case p == "sentinel":
			return 3
		}
		return 2
	}
	var rest []string
	for _, p := range tl.procs {
		if has[p] && !slices.Contains(lanes, p) && p != "world" {
			rest = append(rest, p)
		}
	}
	slices.SortStableFunc(rest, func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), naturalCompare(a, b))
	})
	for _, p := range rest {
		add(p)
	}
	if len(lanes) > max {
		omitted = len(lanes) - max
		lanes = lanes[:max]
	}
	return lanes, omitted
}

// naturalCompare orders "c2" before "c10".
func naturalCompare(a, b string) int {
	pa, na := splitNum(a)
	pb, nb := splitNum(b)
	return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(na, nb), cmp.Compare(a, b))
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, err := strconv.Atoi(s[i:])
	if err != nil {
		return s, -1
	}
	return s[:i], n
}
