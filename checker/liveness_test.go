package checker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
)

// After the heal at 1000, c0 and c1 acquire but c2 only fails: a fairness
// figure (c2 starved, waiting 950 from its attempt at 1050 to the end),
// not a failure for a design that promises no fairness; a failure when the
// caller requires fairness, or when the design promises it and a later
// request was granted while the starved client waited.
func TestLivenessStarvedClientIsFairness(t *testing.T) {
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
	r := Liveness(h, Holds(h.LockOps(), h.End), Options{})
	if !r.Judged || r.Failure || !slices.Equal(r.Starved, []string{"c2"}) || r.Deadlock {
		t.Fatalf("%+v; want c2 starved, no failure, no deadlock", r)
	}
	if r.LongestWaitNS != 950 || r.LongestWaitClient != "c2" {
		t.Errorf("longest wait %d by %s, want 950 by c2", r.LongestWaitNS, r.LongestWaitClient)
	}
	if c := Check(h, Options{}); c.Verdict != VerdictSafe {
		t.Errorf("Check verdict %s, want safe; reasons %q", c.Verdict, c.Reasons)
	}
	if c := Check(h, Options{RequireFairness: true}); c.Verdict != VerdictLiveness {
		t.Errorf("fairness required: verdict %s, want liveness; reasons %q", c.Verdict, c.Reasons)
	}
	// A design that promises fairness (FIFO) owes c2 nothing here: its
	// tries failed at once and no grant overtook a waiting request of
	// its. When c2 waits from 1150 to 1250 while c1, asking at 1200, is
	// granted at 1210, the starvation is unfair: a liveness failure.
	fair := h
	fair.Fair = true
	if c := Check(fair, Options{}); c.Verdict != VerdictSafe || !c.Liveness.FairnessRequired || len(c.Liveness.StarvedOvertaken) != 0 {
		t.Errorf("a design that promises fairness, c2 never overtaken: verdict %s, want safe; reasons %q", c.Verdict, c.Reasons)
	}
	b.acquire("c2", 5, 1150, 1250, "fail", 0)
	fair = b.history(1000, 2000)
	fair.Fair = true
	if c := Check(fair, Options{}); c.Verdict != VerdictLiveness || !slices.Equal(c.Liveness.StarvedOvertaken, []string{"c2"}) {
		t.Errorf("a design that promises fairness, c2 overtaken while waiting: verdict %s, want liveness; reasons %q", c.Verdict, c.Reasons)
	}
	// Capped: the end is cut off, liveness cannot be judged.
	h.Capped = true
	if r := Liveness(h, nil, Options{}); r.Judged || r.Failure {
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
	r := Liveness(h, Holds(h.LockOps(), h.End), Options{})
	if !r.Deadlock || r.DeadlockSince != 10 || !r.Failure || len(r.Starved) != 2 {
		t.Errorf("%+v; want a deadlock since 10, both starved", r)
	}
	// Unavailable while trying: [300, 450], [800, 950], [1200, 1350],
	// [1600, 1750]: the longest is 150 from 300.
	if r.LongestUnavailableNS != 150 || r.LongestUnavailableStart != 300 {
		t.Errorf("longest unavailable %d from %d, want 150 from 300", r.LongestUnavailableNS, r.LongestUnavailableStart)
	}
	if r := Liveness(h, Holds(h.LockOps(), h.End), Options{MaxUnavailable: 100 * time.Nanosecond}); !r.Failure {
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
	if r := Liveness(h, nil, Options{}); r.Failure {
		t.Errorf("%+v; want no failure", r)
	}
	b = newHistory(ResourcePool, 5, FenceVersion, "c0", "c1")
	b.op("c0", "read", 1, 1000, 1010, "ok", 5)
	b.op("c0", "write", 2, 1020, 1030, "ok", 4)
	b.op("c1", "read", 1, 1100, 1110, "ok", 5)
	b.op("c1", "write", 2, 1120, 1130, "fail", 4)
	h = b.history(1000, 2000)
	if r := Liveness(h, nil, Options{RequireFairness: true}); !r.Failure || !slices.Equal(r.Starved, []string{"c1"}) {
		t.Errorf("%+v; want c1 starved", r)
	}
}

func TestLivenessNotJudgedWithoutPhase(t *testing.T) {
	b := newHistory("", 0, "", "c0")
	b.acquire("c0", 1, 0, 10, "fail", 0)
	h := b.history(2000, 2000)
	if r := Liveness(h, nil, Options{}); r.Judged || r.Failure {
		t.Errorf("%+v; want not judged (heal at the end)", r)
	}
}

// Clients stuck in calls that began before the heal and never return are
// still trying: nobody progressing after the heal is a deadlock, even with
// no new call in the phase.
func TestDeadlockWithCallsOpenAcrossTheHeal(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1")
	b.acquire("c0", 1, 0, 10, "ok", 0)
	b.acquire("c1", 1, 500, 0, "", 0)
	b.acquire("c0", 2, 600, 0, "", 0)
	h := b.history(1000, 2000)
	r := Liveness(h, Holds(h.LockOps(), h.End), Options{})
	if !r.Deadlock || !r.Failure {
		t.Fatalf("%+v; want a deadlock", r)
	}
	if !strings.Contains(r.Reasons[0], "while clients kept trying") {
		t.Errorf("reason %q", r.Reasons[0])
	}
	// Nobody even trying after the heal (every client stuck) is no
	// progress either.
	b = newHistory("", 0, "", "c0")
	b.acquire("c0", 1, 0, 10, "ok", 0)
	h = b.history(1000, 2000)
	if r := Liveness(h, Holds(h.LockOps(), h.End), Options{}); !r.Deadlock || !r.Failure || !strings.Contains(r.Reasons[0], "every one was stuck") {
		t.Errorf("%+v; want a failure: nobody progressed", r)
	}
}

// A failed run says what held the clients back: refusals attributed to the
// client whose belief covered them (or to nobody: an orphaned key), and
// errors by kind and the node they name.
func TestLivenessBlockers(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1", "c2")
	b.acquire("c0", 1, 0, 10, "ok", 900) // c0 believes until 900, never releases
	b.add(
		Event{T: 1100, Proc: "c1", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		Event{T: 1200, Proc: "c1", Kind: event.KindUnknown, Op: event.OpAcquire, OpID: 1, Detail: "read tcp c1->n0: read: connection reset by peer"},
		Event{T: 1300, Proc: "c1", Kind: event.KindCall, Op: event.OpAcquire, OpID: 2},
		Event{T: 1400, Proc: "c1", Kind: event.KindUnknown, Op: event.OpAcquire, OpID: 2, Detail: "read tcp c1->n0: read: connection reset by peer"},
		Event{T: 1500, Proc: "c2", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		Event{T: 1600, Proc: "c2", Kind: event.KindUnknown, Op: event.OpAcquire, OpID: 1, Detail: "read tcp c2->n1: i/o timeout"},
		Event{T: 1700, Proc: "c2", Kind: event.KindCall, Op: event.OpAcquire, OpID: 2},
		Event{T: 1800, Proc: "c2", Kind: event.KindFail, Op: event.OpAcquire, OpID: 2, Detail: "lock not acquired"},
	)
	h := b.history(1000, 2000)
	r := Liveness(h, Holds(h.LockOps(), h.End), Options{})
	if !r.Deadlock {
		t.Fatalf("%+v; want a deadlock", r)
	}
	want := []Blocker{
		{Cause: "connection reset", Node: "n0", Count: 2, Clients: []string{"c1"}, FirstNS: 1200},
		{Cause: "timeout", Node: "n1", Count: 1, Clients: []string{"c2"}, FirstNS: 1600},
		{Cause: "not acquired: held by no client (the key outlived every belief)", Count: 1, Clients: []string{"c2"}, FirstNS: 1800},
	}
	if !slices.EqualFunc(r.Blockers, want, func(a, b Blocker) bool {
		return a.Cause == b.Cause && a.Node == b.Node && a.Count == b.Count && slices.Equal(a.Clients, b.Clients) && a.FirstNS == b.FirstNS
	}) {
		t.Errorf("blockers %+v, want %+v", r.Blockers, want)
	}
	last := r.Reasons[len(r.Reasons)-1]
	if !strings.Contains(last, "2× connection reset (n0) [c1]") {
		t.Errorf("the reasons must say what held the clients back: %q", r.Reasons)
	}
	// A refusal while another client believes it holds the lock names it.
	b = newHistory("", 0, "", "c0", "c1")
	b.acquire("c0", 1, 1000, 1010, "ok", 0)
	b.acquire("c1", 1, 1100, 1200, "fail", 0)
	h = b.history(1000, 2000)
	r = Liveness(h, Holds(h.LockOps(), h.End), Options{})
	if len(r.Blockers) != 1 || r.Blockers[0].Cause != "not acquired: held by c0" {
		t.Errorf("blockers %+v, want one: not acquired: held by c0", r.Blockers)
	}
}

// A liveness phase no longer than the lock's lease cannot show a deadlock:
// a key orphaned at the heal (an acquisition whose caller gave up) may
// legitimately block everyone that long. Longer, it can.
func TestDeadlockNeedsAPhaseLongerThanTheLease(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1")
	b.acquire("c0", 1, 0, 10, "ok", 50)
	for i, t0 := range []int64{1100, 1500, 1900} {
		b.acquire("c1", int64(i+1), t0, t0+50, "fail", 0)
	}
	h := b.history(1000, 2000)
	h.LeaseTTL = 1000
	r := Liveness(h, Holds(h.LockOps(), h.End), Options{})
	if r.Deadlock || r.Failure || !strings.Contains(strings.Join(r.Reasons, ";"), "not longer than the lock's lease") {
		t.Errorf("%+v; want not judged: the phase (1000) is not longer than the lease (1000)", r)
	}
	h.LeaseTTL = 999
	if r := Liveness(h, Holds(h.LockOps(), h.End), Options{}); !r.Deadlock || !r.Failure {
		t.Errorf("%+v; want a deadlock: the phase outlasts the lease", r)
	}
}
