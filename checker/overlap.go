package checker

import (
	"cmp"
	"slices"

	"github.com/locksim/locksim/event"
)

// Op is one lock-belief record of the history, as the simulator's workload
// writes it: a process's call and its outcome.
type Op struct {
	T      int64      // true time, ns
	Proc   string     // process name
	Kind   event.Kind // call | ok | fail | unknown | renew
	Op     event.Op   // acquire | release
	OpID   int64
	Until  int64 // for an ok acquire or a renew: true time its validity ends (0: until release)
	Detail string
	// Mode is an ok acquire's mode: ModeRead for a shared (read) hold of
	// a read-write lock, "" (or ModeWrite) for an exclusive hold.
	Mode event.Result
}

// Hold modes (Op.Mode; Event.Result on an acquire ok). A hold without a
// mode is exclusive: a write hold.
const (
	ModeRead  = event.ResultRead
	ModeWrite = event.ResultWrite
)

// Hold is an interval of true time in which Proc believed it held the lock.
type Hold struct {
	Proc       string
	Start, End int64
	// Read: a shared hold (a read-write lock's read lock), which may
	// overlap other read holds; false: an exclusive (write) hold.
	Read bool
}

// holdCmp orders holds by start, then process name.
func holdCmp(a, b Hold) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	return cmp.Compare(a.Proc, b.Proc)
}

// Holds derives belief intervals: from an acquire's ok until the earliest of
// its validity deadline, the next release call, or end. A renew (Kind
// "renew", Op "acquire") of the open acquisition moves the deadline: if it
// comes while the belief still holds, the belief is extended; if it comes
// after the belief lapsed, the holder believes again from the renew on (a
// new interval). A renew whose OpID names another acquisition, or that
// comes when no acquisition is open, is ignored. A renew-fail
// (locks.Env.RenewFailed) of the open acquisition ends its belief there. Ops are expected in
// true-time order (the history's order). The result is sorted by start,
// then process; empty intervals are dropped.
//
// Nested holds (a reentrant lock, Redisson's RLock) count as one hold: an
// acquire ok of a process whose hold is open (no release call since its
// acquire ok) with the same non-empty Detail (the holder's identity,
// Redisson's uuid:threadId) is a nested acquisition of that hold, not a new
// one: it extends the belief to its own deadline (the lock re-timed the
// key), or, if the belief had lapsed, the holder believes again from it.
// Each release call then closes one level, and only the release of the
// outermost acquisition ends the hold. An acquire ok with another Detail
// while a hold is open starts a new hold, as before.
//
// A hold's mode is its opening acquire ok's (Op.Mode): a read hold of a
// read-write lock (Redisson's RReadWriteLock) is shared, any other hold
// exclusive. A nested acquisition has its hold's identity, so its mode.
//
// Cost: O(n) plus a sort of the result only when ops are out of order; one
// map lookup per belief record (processes are interned).
func Holds(ops []Op, end int64) []Hold {
	type openHold struct {
		idx    int    // index in out of the open hold, -1: none
		opID   int64  // OpID of the open acquisition
		detail string // the open acquisition's Detail (holder identity)
		depth  int    // nested acquisitions still open inside it
	}
	index := map[string]int{}
	var open []openHold
	var out []Hold
	deadline := func(until int64) int64 {
		if until != 0 && until < end {
			return until
		}
		return end
	}
	slot := func(p string) *openHold {
		i, ok := index[p]
		if !ok {
			i = len(open)
			index[p] = i
			open = append(open, openHold{idx: -1})
		}
		return &open[i]
	}
	closeAt := func(o *openHold, t int64) {
		if o.idx >= 0 && t < out[o.idx].End {
			out[o.idx].End = t
		}
		o.idx, o.depth = -1, 0
	}
	// extend moves o's belief to deadline e at time t: a lapsed belief
	// resumes at t as a new interval.
	extend := func(o *openHold, proc string, t, e int64) {
		h := &out[o.idx]
		switch {
		case t > h.End:
			o.idx = len(out)
			out = append(out, Hold{Proc: proc, Start: t, End: e, Read: h.Read})
		case e > h.End:
			h.End = e
		}
	}
	for i := range ops {
		op := &ops[i]
		switch {
		case op.Op == event.OpAcquire && op.Kind == event.KindOK:
			o := slot(op.Proc)
			if o.idx >= 0 && op.Detail != "" && op.Detail == o.detail {
				o.depth++
				extend(o, op.Proc, op.T, deadline(op.Until))
				continue
			}
			closeAt(o, op.T)
			o.idx, o.opID, o.detail = len(out), op.OpID, op.Detail
			out = append(out, Hold{Proc: op.Proc, Start: op.T, End: deadline(op.Until), Read: op.Mode == ModeRead})
		case op.Op == event.OpAcquire && op.Kind == event.KindRenew:
			o := slot(op.Proc)
			if o.idx < 0 || (op.OpID != 0 && o.opID != 0 && op.OpID != o.opID) {
				continue
			}
			// A lapsed belief resumes at the renewal.
			extend(o, op.Proc, op.T, deadline(op.Until))
		case op.Op == event.OpAcquire && op.Kind == event.KindRenewFail:
			// The holder stopped believing: the hold ends here.
			if o := slot(op.Proc); o.idx >= 0 && (op.OpID == 0 || o.opID == 0 || op.OpID == o.opID) && op.T < out[o.idx].End {
				out[o.idx].End = max(op.T, out[o.idx].Start)
			}
		case op.Op == event.OpRelease && op.Kind == event.KindCall:
			o := slot(op.Proc)
			if o.depth > 0 {
				o.depth-- // a nested release: the outer hold goes on
				continue
			}
			closeAt(o, op.T)
		}
	}
	kept := out[:0]
	for _, h := range out {
		if h.End > h.Start {
			kept = append(kept, h)
		}
	}
	if !slices.IsSortedFunc(kept, holdCmp) {
		slices.SortStableFunc(kept, holdCmp)
	}
	return kept
}

// Overlap is a stretch of true time in which two processes both believed
// they held the lock, and at least one of them held it exclusively (a
// write hold): readers may overlap readers, a writer overlaps nobody.
type Overlap struct {
	A, B       string
	Start, End int64
}

// Overlaps finds every pair of belief intervals of different processes that
// intersect (intervals are half-open: one ending where another starts is no
// overlap), in O(n log n + n·a + k) for k overlaps and at most a intervals
// alive at once (a sweep over sorted starts; no sort when the input is
// sorted, as Holds returns it). A is the interval that started first. Two
// read holds (Hold.Read) overlapping is no overlap: a read-write lock
// shares its read lock.
func Overlaps(holds []Hold) []Overlap {
	hs := holds
	if !slices.IsSortedFunc(hs, holdCmp) {
		hs = slices.Clone(holds)
		slices.SortStableFunc(hs, holdCmp)
	}
	var out []Overlap
	var active []Hold
	for _, h := range hs {
		kept := active[:0]
		for _, a := range active {
			if a.End > h.Start {
				kept = append(kept, a)
			}
		}
		active = kept
		for _, a := range active {
			if a.Proc == h.Proc || (a.Read && h.Read) {
				continue
			}
			out = append(out, Overlap{A: a.Proc, B: h.Proc, Start: h.Start, End: min(a.End, h.End)})
		}
		active = append(active, h)
	}
	return out
}
