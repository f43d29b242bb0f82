package checker

import (
	"slices"
	"testing"
	"time"
)

// After the heal at 1000, c0 and c1 acquire but c2 only fails.
func TestLivenessStarvedClientCaught(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1", "c2")
	b.acquire("c2", 1, 0, 10, "ok", 500)
	b.op("c2", "release", 2, 400, 410, "ok", 0)
	b.acquire("c0", 1, 1000, 1010, "ok", 1500)
	b.op("c0", "release", 2, 1100, 1110, "ok", 0)
	b.acquire("c1", 1, 1200, 1210, "ok", 1700)
	b.op("c1", "release", 2, 1300, 1310, "ok", 0)
	b.acquire("c2", 3, 1050, 1060, "fail", 0)
	b.acquire("c2", 4, 1400, 1410, "fail", 0)
	h := b.history(1000, 2000)
	r := Liveness(h, Holds(h.LockOps(), h.End), 0)
	if !r.Judged || !r.Failure || !slices.Equal(r.Starved, []string{"c2"}) || r.Deadlock {
		t.Fatalf("%+v; want c2 starved, no deadlock", r)
	}
	if c := Check(h, Options{}); c.Verdict != VerdictLiveness {
		t.Errorf("Check verdict %s, want liveness; reasons %q", c.Verdict, c.Reasons)
	}
	// Capped: the end is cut off, liveness cannot be judged.
	h.Capped = true
	if r := Liveness(h, nil, 0); r.Judged || r.Failure {
		t.Errorf("capped: %+v; want not judged", r)
	}
	if c := Check(h, Options{}); c.Verdict != VerdictUnknown {
		t.Errorf("capped: verdict %s, want unknown", c.Verdict)
	}
}

// setnx-del: the key outlives its holder's release (a lost DEL); every
// later attempt fails.
func TestDeadlockCaught(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1")
	b.acquire("c0", 1, 0, 10, "ok", 0)
	b.op("c0", "release", 2, 100, 200, "unknown", 0)
	for i, t0 := range []int64{300, 800, 1200, 1600} {
		b.acquire("c1", int64(i+1), t0, t0+100, "fail", 0)
		b.acquire("c0", int64(i+3), t0+50, t0+150, "fail", 0)
	}
	h := b.history(1000, 2000)
	r := Liveness(h, Holds(h.LockOps(), h.End), 0)
	if !r.Deadlock || r.DeadlockSince != 10 || !r.Failure || len(r.Starved) != 2 {
		t.Errorf("%+v; want a deadlock since 10, both starved", r)
	}
	// Unavailable while trying: [300, 450], [800, 950], [1200, 1350],
	// [1600, 1750]: the longest is 150 from 300.
	if r.LongestUnavailableNS != 150 || r.LongestUnavailableStart != 300 {
		t.Errorf("longest unavailable %d from %d, want 150 from 300", r.LongestUnavailableNS, r.LongestUnavailableStart)
	}
	if r := Liveness(h, Holds(h.LockOps(), h.End), 100*time.Nanosecond); !r.Failure {
		t.Error("a window above MaxUnavailable is not a failure")
	}
}

// The unavailability window counts only time in which someone is trying
// and nobody believes: a holder's belief interrupts it, and so does a
// stretch in which nobody tries.
func TestLongestUnavailableWindow(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1")
	b.acquire("c0", 1, 0, 100, "ok", 300)         // trying 0..100, holds 100..300
	b.acquire("c1", 1, 50, 500, "fail", 0)        // trying 50..500: unavailable 300..500
	b.acquire("c1", 2, 600, 1500, "ok", 2000)     // 600..1500: unavailable (900)
	b.acquire("c0", 2, 1400, 0, "", 0)            // no reply: trying until the end
	b.op("c1", "release", 3, 1800, 1810, "ok", 0) // c1 holds 1500..1800
	h := b.history(0, 2000)
	n, start := unavailable(h, Holds(h.LockOps(), h.End))
	if n != 900 || start != 600 {
		t.Errorf("longest %d from %d, want 900 from 600", n, start)
	}
}

// Designs without a lock (version) progress by writes; a sold-out read
// counts as a completed round.
func TestLivenessVersionProgressByWrites(t *testing.T) {
	b := newHistory(ResourcePool, 1, FenceVersion, "c0", "c1")
	b.op("c0", "read", 1, 1000, 1010, "ok", 1)
	b.op("c0", "write", 2, 1020, 1030, "ok", 0)
	b.op("c1", "read", 1, 1100, 1110, "ok", 0) // sold out
	h := b.history(1000, 2000)
	if r := Liveness(h, nil, 0); r.Failure {
		t.Errorf("%+v; want no failure", r)
	}
	b = newHistory(ResourcePool, 5, FenceVersion, "c0", "c1")
	b.op("c0", "read", 1, 1000, 1010, "ok", 5)
	b.op("c0", "write", 2, 1020, 1030, "ok", 4)
	b.op("c1", "read", 1, 1100, 1110, "ok", 5)
	b.op("c1", "write", 2, 1120, 1130, "fail", 4)
	h = b.history(1000, 2000)
	if r := Liveness(h, nil, 0); !r.Failure || !slices.Equal(r.Starved, []string{"c1"}) {
		t.Errorf("%+v; want c1 starved", r)
	}
}

func TestLivenessNotJudgedWithoutPhase(t *testing.T) {
	b := newHistory("", 0, "", "c0")
	b.acquire("c0", 1, 0, 10, "fail", 0)
	h := b.history(2000, 2000)
	if r := Liveness(h, nil, 0); r.Judged || r.Failure {
		t.Errorf("%+v; want not judged (heal at the end)", r)
	}
}
