package checker

import (
	"slices"
	"testing"

	"github.com/locksim/locksim/event"
)

// held records a reentrant holder's acquire (call at call, ok at ret,
// believing until until) under identity who.
func (b *builder) held(c, who string, id, call, ret, until int64) *builder {
	return b.add(Event{T: call, Proc: c, Kind: event.KindCall, Op: event.OpAcquire, OpID: id},
		Event{T: ret, Proc: c, Kind: event.KindOK, Op: event.OpAcquire, OpID: id, Until: until, Detail: who})
}

// released records a release call at call and its ok at ret.
func (b *builder) released(c, who string, id, call, ret int64) *builder {
	return b.add(Event{T: call, Proc: c, Kind: event.KindCall, Op: event.OpRelease, OpID: id, Detail: who},
		Event{T: ret, Proc: c, Kind: event.KindOK, Op: event.OpRelease, OpID: id})
}

// A legal nested history: c0 acquires (outer, 10..), acquires again as the
// same holder inside its section (30), releases the inner (50) and works on
// until the outer release (80); c1 acquires only after that. One hold per
// client, no overlap, a safe verdict. Without nesting the inner release
// would end c0's hold at 50 and c1's acquisition at 90 would still be fine:
// the nested view must not invent an overlap either.
func TestNestedHoldsLegal(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1")
	b.held("c0", "u0:1", 1, 0, 10, 1000).
		held("c0", "u0:1", 2, 20, 30, 1030).
		released("c0", "u0:1", 3, 50, 55).
		released("c0", "u0:1", 4, 80, 85).
		held("c1", "u1:1", 1, 60, 90, 1090).
		released("c1", "u1:1", 2, 120, 125)
	h := b.history(0, 2000)
	got := Holds(h.LockOps(), h.End)
	want := []Hold{{"c0", 10, 80, false}, {"c1", 90, 120, false}}
	if !slices.Equal(got, want) {
		t.Fatalf("holds %v, want %v", got, want)
	}
	if r := Check(h, Options{SkipPorcupine: true}); r.Verdict != VerdictSafe || r.LeaseOverlaps != 0 {
		t.Fatalf("verdict %s, %d overlaps: %v", r.Verdict, r.LeaseOverlaps, r.Reasons)
	}
}

// A real violation inside a nested history is still caught: c1 acquires at
// 60, after c0's inner release (50) but while c0 still holds its outer
// acquisition (released at 80). Judging the inner release as the end of
// c0's hold would miss it; nested holds see c0 holding 10..80 and c1 from
// 60: an overlap of 20, an unsafe verdict.
func TestNestedHoldsViolation(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1")
	b.held("c0", "u0:1", 1, 0, 10, 1000).
		held("c0", "u0:1", 2, 20, 30, 1030).
		released("c0", "u0:1", 3, 50, 55).
		released("c0", "u0:1", 4, 80, 85).
		held("c1", "u1:1", 1, 58, 60, 1060).
		released("c1", "u1:1", 2, 120, 125)
	h := b.history(0, 2000)
	ov := Overlaps(Holds(h.LockOps(), h.End))
	if want := []Overlap{{A: "c0", B: "c1", Start: 60, End: 80}}; !slices.Equal(ov, want) {
		t.Fatalf("overlaps %v, want %v", ov, want)
	}
	r := Check(h, Options{SkipPorcupine: true})
	if r.Verdict != VerdictUnsafe || r.First == nil || r.First.Kind != KindLeaseOverlap {
		t.Fatalf("verdict %s (first %+v), want unsafe by lease overlap: %v", r.Verdict, r.First, r.Reasons)
	}
}

// Nesting follows the holder's identity and its depth: an inner
// acquisition extends the belief to its own deadline (the lock re-timed
// the key) and resumes a lapsed one; an acquire ok under another identity
// while a hold is open is a new hold (the old one ends there), and two
// nested levels need two inner releases before the outer one ends the
// hold.
func TestNestedHoldsDepthAndIdentity(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1")
	// c0: outer until 100, inner at 50 until 150, inner-inner at 60: the
	// hold lasts to the third release call (300).
	b.held("c0", "u0:1", 1, 0, 10, 100).
		held("c0", "u0:1", 2, 45, 50, 150).
		held("c0", "u0:1", 3, 55, 60, 400).
		released("c0", "u0:1", 4, 70, 71).
		released("c0", "u0:1", 5, 80, 81).
		released("c0", "u0:1", 6, 300, 301)
	// c1: believes until 20; an inner acquire at 30 (the belief had
	// lapsed) believes again from 30 to 90; then an acquire ok under
	// another identity at 95 starts a new hold.
	b.held("c1", "u1:1", 1, 0, 5, 20).
		held("c1", "u1:1", 2, 25, 30, 90).
		held("c1", "u1:9", 3, 93, 95, 500).
		released("c1", "u1:9", 4, 600, 601)
	h := b.history(0, 1000)
	got := Holds(h.LockOps(), h.End)
	want := []Hold{{"c1", 5, 20, false}, {"c0", 10, 300, false}, {"c1", 30, 90, false}, {"c1", 95, 500, false}}
	if !slices.Equal(got, want) {
		t.Fatalf("holds %v, want %v", got, want)
	}
}
