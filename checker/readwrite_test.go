package checker

import (
	"slices"
	"testing"

	"github.com/locksim/locksim/event"
)

// heldIn records an acquire (call at call, ok at ret, believing until
// until) of a read-write lock in mode (ModeRead, or "" for a write hold)
// under identity who.
func (b *builder) heldIn(c string, mode event.Result, who string, id, call, ret, until int64) *builder {
	return b.add(Event{T: call, Proc: c, Kind: event.KindCall, Op: event.OpAcquire, OpID: id},
		Event{T: ret, Proc: c, Kind: event.KindOK, Op: event.OpAcquire, OpID: id, Until: until, Detail: who, Result: mode})
}

// Readers may overlap readers: c0 and c1 hold the read lock at once
// (20..100 and 50..150), and c2 reads inside both. Three read holds, no
// overlap, a safe verdict, and no ownership violation although the last
// reader's release deletes the hash that another reader wrote last (the
// nodes' key-touch record).
func TestReadHoldsShare(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1", "c2")
	b.heldIn("c0", ModeRead, "u0:1", 1, 10, 20, 1000).released("c0", "u0:1", 2, 100, 101).
		heldIn("c1", ModeRead, "u1:1", 1, 40, 50, 1000).released("c1", "u1:1", 2, 150, 151).
		heldIn("c2", ModeRead, "u2:1", 1, 60, 70, 1000).released("c2", "u2:1", 2, 90, 91).
		add(Event{T: 150, Proc: "n1", Kind: event.KindKeyTouch, Peer: "c1", Lock: "lock", Result: event.ResultDel, Detail: "c2"},
			Event{T: 120, Proc: "n1", Kind: event.KindKeyTouch, Peer: "c1", Lock: "lock", Result: event.ResultExpire, Detail: "c0"})
	h := b.history(0, 2000)
	h.KeyTruth = true
	holds := Holds(h.LockOps(), h.End)
	want := []Hold{{"c0", 20, 100, true}, {"c1", 50, 150, true}, {"c2", 70, 90, true}}
	if !slices.Equal(holds, want) {
		t.Fatalf("holds %v, want %v", holds, want)
	}
	if ov := Overlaps(holds); len(ov) != 0 {
		t.Fatalf("read holds overlapping were reported: %v", ov)
	}
	r := Check(h, Options{SkipPorcupine: true})
	if r.Verdict != VerdictSafe || r.LeaseOverlaps != 0 || r.OwnershipViolations != 0 {
		t.Fatalf("verdict %s, %d overlaps, %d ownership: %v", r.Verdict, r.LeaseOverlaps, r.OwnershipViolations, r.Reasons)
	}
	// Without key truth the ownership rule reads the acquisitions: a
	// reader releasing after another reader acquired took nothing.
	h.KeyTruth = false
	if n, v := Ownership(h); n != 0 {
		t.Fatalf("ownership without key truth: %d, first %v", n, v)
	}
}

// A writer overlaps nobody: a write hold overlapping a read hold, in
// either order, and two write holds overlapping are each caught.
func TestWriteHoldOverlapsCaught(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode0      event.Result
		mode1      event.Result
		start, end int64
	}{
		{"reader-then-writer", ModeRead, "", 50, 100},
		{"writer-then-reader", "", ModeRead, 50, 100},
		{"writer-writer", ModeWrite, "", 50, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHistory("", 0, "", "c0", "c1")
			b.heldIn("c0", tc.mode0, "u0:1", 1, 10, 20, 1000).released("c0", "u0:1", 2, 100, 101).
				heldIn("c1", tc.mode1, "u1:1", 1, 40, 50, 1000).released("c1", "u1:1", 2, 150, 151)
			h := b.history(0, 2000)
			ov := Overlaps(Holds(h.LockOps(), h.End))
			if want := []Overlap{{A: "c0", B: "c1", Start: tc.start, End: tc.end}}; !slices.Equal(ov, want) {
				t.Fatalf("overlaps %v, want %v", ov, want)
			}
			r := Check(h, Options{SkipPorcupine: true})
			if r.Verdict != VerdictUnsafe || r.First == nil || r.First.Kind != KindLeaseOverlap {
				t.Fatalf("verdict %s (first %+v), want unsafe by lease overlap: %v", r.Verdict, r.First, r.Reasons)
			}
			// The earlier holder's release after the other's acquisition
			// is an ownership violation unless both were readers.
			if n, _ := Ownership(h); n != 1 {
				t.Fatalf("ownership violations %d, want 1", n)
			}
		})
	}
}

// A legal history of mixed holds: readers c0 and c1 share 10..60, the
// writer c2 holds alone 70..120 (its release at 120), then readers c0 and
// c3 share again from 130, c3 inside c0's hold, and a nested read
// acquisition of c3 keeps its hold shared. Safe; a writer acquiring at 125
// would still be fine, one acquiring at 140 is caught against both.
func TestMixedHoldsLegal(t *testing.T) {
	build := func(writerAt int64) History {
		b := newHistory("", 0, "", "c0", "c1", "c2", "c3")
		b.heldIn("c0", ModeRead, "u0:1", 1, 5, 10, 1000).released("c0", "u0:1", 2, 60, 61).
			heldIn("c1", ModeRead, "u1:1", 1, 15, 20, 1000).released("c1", "u1:1", 2, 55, 56).
			heldIn("c2", "", "u2:1:write", 1, 30, 70, 1000).released("c2", "u2:1:write", 2, 120, 121).
			heldIn("c0", ModeRead, "u0:1", 3, 80, 130, 1000).released("c0", "u0:1", 4, 200, 201).
			heldIn("c3", ModeRead, "u3:1", 1, 90, 135, 1000).
			heldIn("c3", ModeRead, "u3:1", 2, 150, 155, 1000).released("c3", "u3:1", 3, 160, 161).
			released("c3", "u3:1", 4, 180, 181)
		if writerAt > 0 {
			b.heldIn("c1", "", "u1:1:write", 3, writerAt-1, writerAt, 1000).released("c1", "u1:1:write", 4, 300, 301)
		}
		return b.history(0, 2000)
	}
	h := build(0)
	holds := Holds(h.LockOps(), h.End)
	want := []Hold{{"c0", 10, 60, true}, {"c1", 20, 55, true}, {"c2", 70, 120, false}, {"c0", 130, 200, true}, {"c3", 135, 180, true}}
	if !slices.Equal(holds, want) {
		t.Fatalf("holds %v, want %v", holds, want)
	}
	if r := Check(h, Options{SkipPorcupine: true}); r.Verdict != VerdictSafe || r.LeaseOverlaps != 0 || r.OwnershipViolations != 0 {
		t.Fatalf("verdict %s, %d overlaps, %d ownership: %v", r.Verdict, r.LeaseOverlaps, r.OwnershipViolations, r.Reasons)
	}
	ov := Overlaps(Holds(build(140).LockOps(), 2000))
	if want := []Overlap{{A: "c0", B: "c1", Start: 140, End: 200}, {A: "c3", B: "c1", Start: 140, End: 180}}; !slices.Equal(ov, want) {
		t.Fatalf("a writer at 140: overlaps %v, want %v", ov, want)
	}
	if r := Check(build(140), Options{SkipPorcupine: true}); r.Verdict != VerdictUnsafe {
		t.Fatalf("a writer at 140: %s, want unsafe", r.Verdict)
	}
}
