package checker

import (
	"testing"
	"time"

	"github.com/locksim/locksim/event"
)

// set-nx-del: c0's lease expires, c1 acquires, c0's plain DEL succeeds and
// removes c1's lock, c2 acquires while c1 still believes, and c1's own DEL
// then removes c2's lock (the cascade). When c0's release is refused, c2
// keeps failing until c1 releases.
func foreignRelease(releaseOutcome event.Kind) History {
	b := newHistory("", 0, "", "c0", "c1", "c2")
	b.acquire("c0", 1, 0, 10, "ok", 100)
	b.acquire("c1", 1, 50, 110, "ok", 210)
	b.op("c0", "release", 2, 150, 160, releaseOutcome, 0)
	if releaseOutcome == event.KindOK {
		b.acquire("c2", 1, 120, 170, "ok", 270)
	} else {
		b.acquire("c2", 1, 120, 170, "fail", 0)
		b.acquire("c2", 2, 190, 195, "ok", 295)
	}
	b.op("c1", "release", 2, 180, 190, "ok", 0)
	b.op("c2", "release", 3, 250, 260, "ok", 0)
	return b.history(0, 300)
}

func TestForeignReleaseCaught(t *testing.T) {
	n, v := Ownership(foreignRelease("ok"))
	want := OwnershipViolation{Client: "c0", Op: OwnRelease, AcquiredAt: 10, At: 150, Other: "c1", OtherAt: 110}
	if n != 2 || v == nil || *v != want {
		t.Fatalf("ownership: %d, %+v; want 2 (c0's, then c1's), first %+v", n, v, want)
	}
	r := Check(foreignRelease("ok"), Options{})
	if r.OwnershipViolations != 2 || r.Verdict != VerdictUnsafe {
		t.Errorf("Check: ownership %d verdict %s; reasons %q", r.OwnershipViolations, r.Verdict, r.Reasons)
	}
	// c1 (110..180) and c2 (170..250) overlap: the consequence.
	if r.LeaseOverlaps != 1 || r.FirstOverlap.A != "c1" || r.FirstOverlap.B != "c2" {
		t.Errorf("overlaps %d, first %+v; want c1 and c2", r.LeaseOverlaps, r.FirstOverlap)
	}
}

// With compare-and-delete the stale release fails: no violation.
func TestRefusedReleaseIsNotAViolation(t *testing.T) {
	for _, outcome := range []event.Kind{event.KindFail, event.KindUnknown} {
		if n, v := Ownership(foreignRelease(outcome)); n != 0 || v != nil {
			t.Errorf("release %s: %d violations, first %+v; want none", outcome, n, v)
		}
	}
}

// A client's own release after only its own acquisitions is fine, and so
// is another client acquiring after the release call.
func TestOwnReleaseIsNotAViolation(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1")
	b.acquire("c0", 1, 0, 10, "ok", 100)
	b.acquire("c0", 3, 40, 50, "ok", 150) // re-acquired (after a release that failed)
	b.op("c0", "release", 4, 60, 70, "ok", 0)
	b.acquire("c1", 1, 20, 65, "ok", 165) // acquired after c0's release call
	b.op("c1", "release", 2, 80, 90, "ok", 0)
	if n, v := Ownership(b.history(0, 200)); n != 0 {
		t.Errorf("%d violations, first %+v; want none", n, v)
	}
}

func TestStaleRenewalCaught(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1")
	b.acquire("c0", 1, 0, 10, "ok", 100)
	b.acquire("c1", 1, 50, 110, "ok", 210)
	b.renew("c0", 1, 120, 220) // the watchdog extended a lock c1 holds
	n, v := Ownership(b.history(0, 300))
	if n != 1 || v == nil || v.Op != OwnRenew || v.Other != "c1" || v.At != 120 {
		t.Errorf("%d, %+v; want c0's renewal at 120 after c1's acquisition", n, v)
	}
}

// The case a user's correct lock hit: c0 acquired at 1.67 s and stopped;
// c1 acquired at 10.17 s; c0's compare-and-delete at 11.31 s found c1's
// value, deleted nothing and returned ok. With the nodes' record
// (KeyTruth) and no key-touch event, that is no violation; a real foreign
// release (a key-touch deleting c1's key) still is, and so is a renewal
// that re-timed c1's key. Without the record, the old inference from the
// return values reports the no-op.
func TestNoOpReleaseWithKeyTruth(t *testing.T) {
	const s = int64(time.Second)
	build := func(touch ...Event) History {
		b := newHistory("", 0, "", "c0", "c1")
		b.acquire("c0", 1, 1670*s/1000-1000, 1670*s/1000, "ok", 4670*s/1000)
		b.acquire("c1", 1, 10170*s/1000-1000, 10170*s/1000, "ok", 13170*s/1000)
		b.op("c0", "release", 2, 11310*s/1000, 11310*s/1000+2000, "ok", 0)
		b.add(touch...)
		h := b.history(20*s, 30*s)
		h.KeyTruth = true
		return h
	}
	h := build()
	if n, v := Ownership(h); n != 0 || v != nil {
		t.Errorf("a release that deleted nothing: %d violations, first %v; want none", n, v)
	}
	if c := Check(h, Options{}); c.OwnershipViolations != 0 || c.Verdict == VerdictUnsafe {
		t.Errorf("Check: %d ownership violations, verdict %s", c.OwnershipViolations, c.Verdict)
	}
	h.KeyTruth = false
	if n, _ := Ownership(h); n != 1 {
		t.Errorf("without the nodes' record the return values say %d violations, want 1 (the inference this fixes)", n)
	}

	del := Event{T: 11310*s/1000 + 1000, Proc: "n0", Kind: event.KindKeyTouch, Peer: "c0", Lock: "lock:resource", Result: event.ResultDel, Detail: "c1"}
	n, v := Ownership(build(del))
	want := OwnershipViolation{Client: "c0", Op: OwnRelease, AcquiredAt: 1670 * s / 1000, At: del.T, Other: "c1", OtherAt: 10170 * s / 1000, Node: "n0"}
	if n != 1 || v == nil || *v != want {
		t.Errorf("a release that deleted c1's key: %d, %+v; want 1, %+v", n, v, want)
	}
	if c := Check(build(del), Options{}); c.Verdict != VerdictUnsafe || c.First == nil || c.First.Kind != KindOwnership {
		t.Errorf("Check: verdict %s, first %+v; want unsafe by ownership", c.Verdict, c.First)
	}
	// Redlock's release deletes on several nodes: one violation.
	del2 := del
	del2.Proc, del2.T = "n1", del.T+10
	if n, _ := Ownership(build(del, del2)); n != 1 {
		t.Errorf("one release touching two nodes: %d violations, want 1", n)
	}
	renew := Event{T: 12 * s, Proc: "n0", Kind: event.KindKeyTouch, Peer: "c0", Lock: "lock:resource", Result: event.ResultExpire, Detail: "c1"}
	if n, v := Ownership(build(renew)); n != 1 || v.Op != OwnRenew {
		t.Errorf("a renewal that re-timed c1's key: %d, %+v; want 1 renew", n, v)
	}
}

// getset-expiry's GETSET overwrites the value even when it loses, so the
// node names a loser as the key's last writer. c1 takes over c0's lock,
// whose lease ran out at 100 (c0 has not released it yet), by a winning
// GETSET, and its PEXPIRE then re-times a key whose value c2's losing
// GETSET just wrote: c1's own lock, no violation. c0, whose lease
// expired, then DELs that key while c1 holds: a violation, against c1
// (the holder), not c2 (the last writer, who holds nothing). After c1's
// release nobody holds, and a DEL of c2's value takes no one's lock.
func TestOwnershipLastWriterHoldsNothing(t *testing.T) {
	build := func(touch ...Event) History {
		b := newHistory("", 0, "", "c0", "c1", "c2")
		b.acquire("c0", 1, 0, 10, "ok", 100)
		b.acquire("c1", 1, 150, 200, "ok", 1000)
		b.acquire("c2", 1, 150, 400, "fail", 0)
		b.op("c0", "release", 2, 250, 260, "ok", 0)
		b.op("c1", "release", 2, 500, 510, "ok", 0)
		b.add(touch...)
		h := b.history(0, 1200)
		h.KeyTruth = true
		for i, e := range h.Events {
			if e.Op == event.OpAcquire && e.Kind == event.KindOK {
				h.Events[i].Detail = map[string]string{"c0": "v0", "c1": "v1"}[e.Proc]
			}
		}
		return h
	}
	// The key held c0's value, then c1's (its winning GETSET), then c2's.
	touch := func(t int64, peer string, result event.Result, owner string) Event {
		return Event{T: t, Proc: "n0", Kind: event.KindKeyTouch, Peer: peer, Lock: "lock:resource", Result: result, Detail: owner,
			Held: []string{"v0", "v1", "v2"}}
	}
	if n, v := Ownership(build(touch(190, "c1", "expire", "c2"))); n != 0 {
		t.Errorf("the holder re-timing its key a loser overwrote: %d violations, first %+v; want none", n, v)
	}
	n, v := Ownership(build(touch(255, "c0", "del", "c2")))
	want := OwnershipViolation{Client: "c0", Op: OwnRelease, AcquiredAt: 10, At: 255, Other: "c1", OtherAt: 200, Node: "n0"}
	if n != 1 || v == nil || *v != want {
		t.Errorf("an expired holder deleting the key c1 holds, last written by c2: %d, %+v; want 1, %+v", n, v, want)
	}
	if n, v := Ownership(build(touch(600, "c0", "del", "c2"))); n != 0 {
		t.Errorf("a delete after the holder's release: %d violations, first %+v; want none", n, v)
	}
	// A key that never held c1's value is not c1's: a delete of a value
	// written by an acquisition given up on (set-nx-del, a SET held in a
	// partition that lands late) takes nothing from c1, whose own key is
	// gone.
	other := touch(255, "c0", "del", "c2")
	other.Held = []string{"v2"}
	if n, v := Ownership(build(other)); n != 0 {
		t.Errorf("a delete of a key that never held c1's value: %d violations, first %+v; want none", n, v)
	}
	// A renewal keeps a hold alive past its first lease: had c0's watchdog
	// renewed it to 300, c1's re-timing at 190 extends c0's lock.
	h := build(Event{T: 90, Proc: "c0", Kind: event.KindRenew, Op: event.OpAcquire, OpID: 1, Lock: "lock:resource", Until: 300}, touch(190, "c1", "expire", "c2"))
	if n, v := Ownership(h); n != 1 || v.Other != "c0" || v.Op != OwnRenew {
		t.Errorf("a touch of a renewed hold: %d, %+v; want 1 renew against c0", n, v)
	}
}

// A touch that lands while the reply of the key's winning write is still
// in the network (set-nx-del seed 6 after its partition healed: c0's
// held DEL deleted a key holding "c3" 1.2 ms before c3's acquire
// returned ok) is not counted: a second cold review showed that the key
// there was a stale copy of c3's SET (sent on a connection c3 had
// closed), and c3's live SET created the key it holds after the DEL.
// With the client's name as the value the two cannot be told apart; the
// lease-overlap and resource checks see what follows from a real one.
func TestOwnershipTouchInFlightNotCounted(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c3")
	b.acquire("c0", 1, 0, 10, "ok", 0)
	b.add(Event{T: 50, Proc: "c3", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		Event{T: 90, Proc: "c3", Kind: event.KindUnknown, Op: event.OpAcquire, OpID: 1},
		Event{T: 100, Proc: "c3", Kind: event.KindCall, Op: event.OpAcquire, OpID: 2},
		Event{T: 150, Proc: "n0", Kind: event.KindKeyTouch, Peer: "c0", Lock: "lock:resource", Result: event.ResultDel, Detail: "c3", Held: []string{"c3"}},
		Event{T: 200, Proc: "c3", Kind: event.KindOK, Op: event.OpAcquire, OpID: 2, Until: 2000, Detail: "c3"})
	b.op("c0", "release", 2, 140, 170, "ok", 0)
	h := b.history(0, 2200)
	h.KeyTruth = true
	if n, v := Ownership(h); n != 0 {
		t.Errorf("a delete of a stale copy's key before c3's live write: %d violations, first %+v; want none", n, v)
	}
	// A re-timing in that moment counts: the key was not replaced
	// (RedissonMultiLock's closing PEXPIRE on another client's round).
	for i, e := range h.Events {
		if e.Kind == event.KindKeyTouch {
			h.Events[i].Result = event.ResultExpire
		}
	}
	n, v := Ownership(h)
	if n != 1 || v.Other != "c3" || v.Op != OwnRenew || v.OtherAt != 200 {
		t.Errorf("a re-timing of the key c3's acquisition in flight holds: %d, %+v; want 1 renew against c3, its ok at 200", n, v)
	}
}

// The cold reviews' cases: a winner in flight behind a loser's write (not
// counted, as any touch in flight), reentrant holds, and readers.
func TestOwnershipReviewCases(t *testing.T) {
	kt := func(t int64, peer string, result event.Result, owner string, held ...string) Event {
		return Event{T: t, Proc: "n0", Kind: event.KindKeyTouch, Peer: peer, Lock: "lock:resource", Result: result, Detail: owner, Held: held}
	}
	ok := func(t int64, p string, id int64, until int64, detail string, mode event.Result) Event {
		return Event{T: t, Proc: p, Kind: event.KindOK, Op: event.OpAcquire, OpID: id, Until: until, Detail: detail, Result: mode}
	}
	call := func(t int64, p string, op event.Op, id int64) Event {
		return Event{T: t, Proc: p, Kind: event.KindCall, Op: op, OpID: id}
	}
	hist := func(es ...Event) History {
		b := newHistory("", 0, "", "c0", "c1", "c2")
		b.add(es...)
		h := b.history(0, 2000)
		h.KeyTruth = true
		return h
	}
	// getset-expiry: c1's winning GETSET (v1) landed, its ok is still in
	// flight; c2's losing GETSET wrote v2; c0, its lease over, DELs.
	n, v := Ownership(hist(call(0, "c0", "acquire", 1), ok(10, "c0", 1, 100, "v0", ""),
		call(150, "c1", "acquire", 1), call(160, "c2", "acquire", 1),
		kt(200, "c0", "del", "c2", "v0", "v1", "v2"), call(190, "c0", "release", 2),
		ok(300, "c1", 1, 1300, "v1", ""), Event{T: 400, Proc: "c2", Kind: event.KindFail, Op: event.OpAcquire, OpID: 1}))
	if n != 0 {
		t.Errorf("a delete while the winner's ok is in flight behind a loser's write (not counted: in flight): %d, %+v; want none", n, v)
	}
	// Reentrant: c1's outer hold (10), inner hold (30) and inner release
	// (40); c0's DEL at 50 takes the outer hold, released only at 100.
	n, v = Ownership(hist(call(5, "c1", "acquire", 1), ok(10, "c1", 1, 1000, "u1", ""), call(25, "c1", "acquire", 2), ok(30, "c1", 2, 1000, "u1", ""),
		call(40, "c1", "release", 3), kt(50, "c0", "del", "c1", "u1"), call(100, "c1", "release", 4)))
	if n != 1 || v.Other != "c1" {
		t.Errorf("a delete between an inner and the outer release: %d, %+v; want 1 against c1", n, v)
	}
	// The second review's: an inner reentrant hold whose lease was over
	// on return; its release call must not end the live outer hold.
	n, v = Ownership(hist(call(0, "c1", "acquire", 1), ok(10, "c1", 1, 1000, "u1", ""),
		call(20, "c1", "acquire", 2), ok(300, "c1", 2, 250, "u1", ""),
		call(350, "c1", "release", 3), kt(400, "c0", "del", "c1", "u1"), call(900, "c1", "release", 4)))
	if n != 1 || v.Other != "c1" {
		t.Errorf("a delete after a dead inner hold's release, the outer live: %d, %+v; want 1 against c1", n, v)
	}
	// And a reader whose read ok was over on return still reads: its
	// watchdog's renewal of the shared hash is no violation against
	// another reader.
	n, v = Ownership(hist(call(0, "c0", "acquire", 1), ok(40000, "c0", 1, 30000, "u0", ModeRead),
		call(100, "c1", "acquire", 1), ok(200, "c1", 1, 30200, "u1", ModeRead),
		Event{T: 30000, Proc: "c1", Kind: event.KindRenew, Op: event.OpAcquire, OpID: 1, Until: 60000},
		Event{T: 41000, Proc: "c0", Kind: event.KindRenew, Op: event.OpAcquire, OpID: 1, Until: 71000},
		kt(41000, "c0", "expire", "c1", "mode,u0", "mode,u0,u1")))
	if n != 0 {
		t.Errorf("a reader's renewal after a dead read ok: %d violations, first %+v; want none", n, v)
	}
	// Readers: c0 reads, c1's read acquisition is in flight when c0's
	// watchdog re-times the shared hash c1 wrote last.
	n, v = Ownership(hist(call(0, "c0", "acquire", 1), ok(10, "c0", 1, 1000, "u0", ModeRead),
		call(40, "c1", "acquire", 1), kt(50, "c0", "expire", "c1", "mode,u0", "mode,u0,u1"), ok(60, "c1", 1, 1000, "u1", ModeRead)))
	if n != 0 {
		t.Errorf("a reader re-timing the hash another reader's acquisition in flight wrote: %d violations, first %+v; want none", n, v)
	}
}
