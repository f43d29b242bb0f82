package checker

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/locksim/locksim/event"
)

func TestRenewExtendsBelief(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1")
	b.acquire("c0", 1, 0, 10, "ok", 100)
	b.renew("c0", 1, 80, 200)  // extends: 10..200
	b.renew("c0", 1, 150, 120) // a shorter deadline does not shrink it
	b.acquire("c1", 1, 50, 150, "ok", 400)
	b.op("c0", "release", 2, 300, 310, "ok", 0)
	h := b.history(0, 1000)
	got := Holds(h.LockOps(), h.End)
	want := []Hold{{"c0", 10, 200, false}, {"c1", 150, 400, false}}
	if !slices.Equal(got, want) {
		t.Fatalf("holds %v, want %v", got, want)
	}
	ov := Overlaps(got)
	if len(ov) != 1 || ov[0] != (Overlap{A: "c0", B: "c1", Start: 150, End: 200}) {
		t.Errorf("overlaps %v, want c0/c1 150..200 (the renewal made it)", ov)
	}
}

func TestRenewAfterLapseResumesBelief(t *testing.T) {
	b := newHistory("", 0, "", "c0")
	b.acquire("c0", 1, 0, 10, "ok", 100)
	b.renew("c0", 1, 150, 300) // lapsed at 100, believes again from 150
	b.renew("c0", 7, 250, 900) // another acquisition's renewal: ignored
	b.op("c0", "release", 2, 280, 290, "ok", 0)
	b.renew("c0", 1, 295, 900) // after the release call: ignored
	h := b.history(0, 1000)
	got := Holds(h.LockOps(), h.End)
	want := []Hold{{"c0", 10, 100, false}, {"c0", 150, 280, false}}
	if !slices.Equal(got, want) {
		t.Errorf("holds %v, want %v", got, want)
	}
}

func TestHoldsBasics(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1", "c2")
	b.acquire("c0", 1, 0, 10, "ok", 0)      // until release
	b.acquire("c1", 1, 0, 20, "ok", 15)     // valid until before the ok: empty
	b.acquire("c2", 1, 0, 30, "unknown", 0) // no belief
	b.acquire("c1", 2, 40, 50, "ok", 5000)  // capped at end
	b.op("c0", "release", 2, 60, 70, "fail", 0)
	h := b.history(0, 1000)
	got := Holds(h.LockOps(), h.End)
	want := []Hold{{"c0", 10, 60, false}, {"c1", 50, 1000, false}}
	if !slices.Equal(got, want) {
		t.Errorf("holds %v, want %v", got, want)
	}
	// Out-of-order input still gives sorted holds; Overlaps sorts its own
	// copy and leaves the input alone.
	in := []Hold{{"b", 5, 20, false}, {"a", 0, 10, false}, {"a", 15, 30, false}}
	ov := Overlaps(in)
	wantOv := []Overlap{{"a", "b", 5, 10}, {"b", "a", 15, 20}}
	if !slices.Equal(ov, wantOv) || in[0].Proc != "b" {
		t.Errorf("overlaps %v, want %v (input untouched: %v)", ov, wantOv, in)
	}
}

// genLockOps draws a random small belief history: ≤ 6 clients, ≤ 8
// operations each, with unknown outcomes, renewals (some of another
// acquisition) and validity deadlines that may precede the ok. Times are
// distinct, in order.
func genLockOps(t *rapid.T) ([]Op, int64) {
	clients := rapid.IntRange(1, 6).Draw(t, "clients")
	type clientState struct {
		ops     int
		id      int64
		holding int64 // OpID of the acquisition the client believes, 0: none
		pending string
	}
	cs := make([]clientState, clients)
	var ops []Op
	now := int64(0)
	for step := 0; step < clients*8; step++ {
		c := rapid.IntRange(0, clients-1).Draw(t, "client")
		s := &cs[c]
		if s.ops >= 8 {
			continue
		}
		s.ops++
		now += int64(rapid.IntRange(1, 4).Draw(t, "gap"))
		name := fmt.Sprintf("c%d", c)
		switch {
		case s.pending == "acquire":
			s.pending = ""
			kind := rapid.SampledFrom([]event.Kind{event.KindOK, event.KindOK, event.KindFail, event.KindUnknown}).Draw(t, "acquire outcome")
			until := int64(0)
			if rapid.IntRange(0, 3).Draw(t, "bounded") > 0 {
				until = now + int64(rapid.IntRange(-3, 25).Draw(t, "validity"))
			}
			ops = append(ops, Op{T: now, Proc: name, Kind: kind, Op: event.OpAcquire, OpID: s.id, Until: until})
			if kind == event.KindOK {
				s.holding = s.id
			}
		case s.pending == "release":
			s.pending = ""
			kind := rapid.SampledFrom([]event.Kind{event.KindOK, event.KindFail, event.KindUnknown}).Draw(t, "release outcome")
			ops = append(ops, Op{T: now, Proc: name, Kind: kind, Op: event.OpRelease, OpID: s.id})
		default:
			switch rapid.IntRange(0, 2).Draw(t, "action") {
			case 0:
				s.id++
				s.pending = "acquire"
				ops = append(ops, Op{T: now, Proc: name, Kind: event.KindCall, Op: event.OpAcquire, OpID: s.id})
			case 1:
				id := s.holding
				if rapid.IntRange(0, 4).Draw(t, "stray renewal") == 0 {
					id = s.id + 7
				}
				ops = append(ops, Op{T: now, Proc: name, Kind: event.KindRenew, Op: event.OpAcquire, OpID: id,
					Until: now + int64(rapid.IntRange(-2, 25).Draw(t, "renewal"))})
			default:
				s.id++
				s.pending = "release"
				s.holding = 0
				ops = append(ops, Op{T: now, Proc: name, Kind: event.KindCall, Op: event.OpRelease, OpID: s.id})
			}
		}
	}
	return ops, now + int64(rapid.IntRange(0, 50).Draw(t, "tail"))
}

// believes is the oracle's belief of c at the integer instant τ (the unit
// interval [τ, τ+1)), by replaying c's records up to τ: the latest
// acquisition that succeeded by τ, not ended by a release call, believed
// until the largest deadline among its ok and its renewals by τ.
func believes(ops []Op, c string, tau, end int64) bool {
	var acq *Op
	deadline := int64(0)
	dl := func(u int64) int64 {
		if u == 0 || u > end {
			return end
		}
		return u
	}
	for i := range ops {
		o := &ops[i]
		if o.Proc != c || o.T > tau {
			continue
		}
		switch {
		case o.Op == event.OpAcquire && o.Kind == event.KindOK:
			acq, deadline = o, dl(o.Until)
		case o.Op == event.OpAcquire && o.Kind == event.KindRenew && acq != nil && (o.OpID == acq.OpID || o.OpID == 0):
			deadline = max(deadline, dl(o.Until))
		case o.Op == event.OpRelease && o.Kind == event.KindCall:
			acq = nil
		}
	}
	return acq != nil && tau < deadline
}

// The overlap checker against a brute-force oracle: beliefs instant by
// instant, overlaps as every pair of clients at every instant.
func TestOverlapsMatchBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops, end := genLockOps(t)
		holds := Holds(ops, end)
		overlaps := Overlaps(holds)
		procs := map[string]bool{}
		for _, o := range ops {
			procs[o.Proc] = true
		}
		names := sortedKeys(procs)
		covered := func(hs []Hold, c string, tau int64) bool {
			for _, h := range hs {
				if h.Proc == c && h.Start <= tau && tau < h.End {
					return true
				}
			}
			return false
		}
		for _, c := range names {
			for tau := int64(0); tau < end; tau++ {
				if got, want := covered(holds, c, tau), believes(ops, c, tau, end); got != want {
					t.Fatalf("%s at %d: Holds says %v, oracle %v; holds %v", c, tau, got, want, holds)
				}
			}
		}
		// Per unordered pair: instants of overlap.
		got := map[[2]string]int64{}
		for _, o := range overlaps {
			if o.A == o.B || o.End <= o.Start {
				t.Fatalf("bad overlap %+v", o)
			}
			k := [2]string{min(o.A, o.B), max(o.A, o.B)}
			got[k] += o.End - o.Start
		}
		for i, a := range names {
			for _, b := range names[i+1:] {
				var want int64
				for tau := int64(0); tau < end; tau++ {
					if believes(ops, a, tau, end) && believes(ops, b, tau, end) {
						want++
					}
				}
				if got[[2]string{a, b}] != want {
					t.Fatalf("%s/%s overlap %d ns, oracle %d; holds %v overlaps %v", a, b, got[[2]string{a, b}], want, holds, overlaps)
				}
			}
		}
	})
}
