// Package checker judges a run's history. Checkers are pure functions of
// the history: they never import the simulator, Redis or plotting.
package checker

import (
	"sort"
)

// Op is one lock-belief record of the history, as the simulator's workload
// writes it: a process's call and its outcome.
type Op struct {
	T      int64  // true time, ns
	Proc   string // process name
	Kind   string // call | ok | fail | unknown
	Op     string // acquire | release
	OpID   int64
	Until  int64 // for an ok acquire: true time its validity ends (0: until release)
	Detail string
}

// Hold is an interval of true time in which Proc believed it held the lock.
type Hold struct {
	Proc       string
	Start, End int64
}

// Holds derives belief intervals: from an acquire's ok until the earliest of
// its validity deadline, the next release call, or end.
func Holds(ops []Op, end int64) []Hold {
	open := map[string]*Hold{}
	var out []Hold
	closeAt := func(p string, t int64) {
		if h := open[p]; h != nil {
			if t < h.End {
				h.End = t
			}
			if h.End > h.Start {
				out = append(out, *h)
			}
			delete(open, p)
		}
	}
	for _, o := range ops {
		switch {
		case o.Op == "acquire" && o.Kind == "ok":
			closeAt(o.Proc, o.T)
			e := end
			if o.Until != 0 && o.Until < e {
				e = o.Until
			}
			open[o.Proc] = &Hold{Proc: o.Proc, Start: o.T, End: e}
		case o.Op == "release" && o.Kind == "call":
			closeAt(o.Proc, o.T)
		}
	}
	procs := make([]string, 0, len(open))
	for p := range open {
		procs = append(procs, p)
	}
	sort.Strings(procs)
	for _, p := range procs {
		closeAt(p, end)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Start != out[j].Start {
			return out[i].Start < out[j].Start
		}
		return out[i].Proc < out[j].Proc
	})
	return out
}

// Overlap is a stretch of true time in which two processes both believed
// they held the lock.
type Overlap struct {
	A, B       string
	Start, End int64
}

// Overlaps finds every pair of belief intervals of different processes that
// intersect, in O(n log n + k) for k overlaps (a sweep over sorted starts).
func Overlaps(holds []Hold) []Overlap {
	hs := append([]Hold(nil), holds...)
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Start != hs[j].Start {
			return hs[i].Start < hs[j].Start
		}
		return hs[i].Proc < hs[j].Proc
	})
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
			if a.Proc == h.Proc {
				continue
			}
			out = append(out, Overlap{A: a.Proc, B: h.Proc, Start: h.Start, End: min(a.End, h.End)})
		}
		active = append(active, h)
	}
	return out
}
