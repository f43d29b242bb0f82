package checker

import "testing"

// fifoBase: c0 holds from 10; c1 asks at 20 and c2 at 30 while it holds;
// c3 asks at 40 and gives up at 45 (a request that is no longer waiting).
func fifoBase() *builder {
	b := newHistory("", 0, "", "c0", "c1", "c2", "c3")
	b.heldIn("c0", "", "u0:1", 1, 0, 10, 1000).released("c0", "u0:1", 2, 100, 101).
		acquire("c3", 1, 40, 45, "fail", 0)
	return b
}

// A FIFO history: after c0's release, c1 (asked at 20) is granted at 110,
// then c2 (asked at 30) at 210; a nested acquisition of c2 at 220 is not a
// grant. Four grants, none overtaking: the fair order.
func TestOvertakingFIFO(t *testing.T) {
	b := fifoBase()
	b.heldIn("c1", "", "u1:1", 1, 20, 110, 1000).released("c1", "u1:1", 2, 200, 201).
		heldIn("c2", "", "u2:1", 1, 30, 210, 1000).
		heldIn("c2", "", "u2:1", 2, 215, 220, 1000).released("c2", "u2:1", 3, 230, 231).released("c2", "u2:1", 4, 300, 301)
	h := b.history(0, 2000)
	grants, overtakes, first := Overtaking(h)
	if grants != 3 || overtakes != 0 || first != nil {
		t.Fatalf("grants %d, overtakes %d, first %v; want 3, 0, none", grants, overtakes, first)
	}
	r := Check(h, Options{SkipPorcupine: true})
	if r.Liveness.Grants != 3 || r.Liveness.Overtakes != 0 || r.Verdict != VerdictSafe {
		t.Fatalf("check: %d grants, %d overtakes, %s", r.Liveness.Grants, r.Liveness.Overtakes, r.Verdict)
	}
}

// A later request granted first: c2 (asked at 30) is granted at 110 while
// c1 (asked at 20) still waits; c1 gets it at 210. One of three grants
// overtook, c2 ahead of c1; c3's abandoned request does not count. Safe
// all the same: fairness is a figure, not a verdict.
func TestOvertakingLaterFirst(t *testing.T) {
	b := fifoBase()
	b.heldIn("c2", "", "u2:1", 1, 30, 110, 1000).released("c2", "u2:1", 2, 200, 201).
		heldIn("c1", "", "u1:1", 1, 20, 210, 1000).released("c1", "u1:1", 2, 300, 301)
	h := b.history(0, 2000)
	grants, overtakes, first := Overtaking(h)
	want := Overtake{Client: "c2", CallNS: 30, AtNS: 110, Waiter: "c1", WaitNS: 20, Ahead: 1}
	if grants != 3 || overtakes != 1 || first == nil || *first != want {
		t.Fatalf("grants %d, overtakes %d, first %+v; want 3, 1, %+v", grants, overtakes, first, want)
	}
	r := Check(h, Options{SkipPorcupine: true})
	if r.Liveness.Overtakes != 1 || r.Verdict != VerdictSafe {
		t.Fatalf("check: %d overtakes, %s: %v", r.Liveness.Overtakes, r.Verdict, r.Reasons)
	}
	t.Log(first)
}
