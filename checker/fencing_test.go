package checker

import (
	"testing"

	"github.com/locksim/locksim/event"
)

// Kleppmann's pause, hand-built: c0's lease (until 100) ends while it is
// stopped; c1 acquires at 120 and writes; c0 wakes and reads at 150 and
// writes at 160 with its old token, which the storage refuses. c0's
// section is stale (one section, though it made two calls), nothing stale
// was accepted, the storage refused one write. c1's section is not stale.
func TestStaleSectionFenced(t *testing.T) {
	b := newHistory(ResourcePool, 10, FenceMaxToken, "c0", "c1")
	b.acquire("c0", 1, 0, 10, "ok", 100)
	b.acquire("c1", 1, 110, 120, "ok", 300)
	b.op("c1", "read", 2, 125, 126, "ok", 10)
	b.op("c1", "write", 3, 130, 131, "ok", 9)
	b.store("c1", 130, "ok", 9, "c1")
	b.op("c0", "read", 2, 150, 151, "ok", 9)
	b.op("c0", "write", 3, 160, 170, "fail", 8)
	b.add(Event{T: 165, Proc: "store", Kind: event.KindStoreWrite, Peer: "c0", Lock: "bonus-pool", Result: event.ResultFenced, Value: 8, Detail: "token 1 < highest 2"})
	h := b.history(100, 200) // (c1's acquisition at 120 is progress after the heal)
	r := Stale(h, Holds(h.LockOps(), h.End))
	want := StaleReport{Sections: 1, Accepted: 0, FencedRejections: 1, FirstClient: "c0", FirstT: 150}
	if r != want {
		t.Errorf("%+v, want %+v", r, want)
	}
	if c := Check(h, Options{SkipPorcupine: true}); c.Stale != want || c.Verdict != VerdictSafe {
		t.Errorf("Check: stale %+v verdict %s", c.Stale, c.Verdict)
	}
}

// Without fencing the same stale write is accepted: one stale section with
// an accepted write. A write sent inside the lease that reaches the storage
// after it ended (a delayed request) is stale too.
func TestStaleSectionAccepted(t *testing.T) {
	b := newHistory(ResourcePool, 10, FenceNone, "c0", "c1")
	b.acquire("c0", 1, 0, 10, "ok", 100)
	b.op("c0", "read", 2, 20, 21, "ok", 10)
	b.op("c0", "write", 3, 90, 200, "ok", 9) // sent at 90, inside the lease
	b.store("c0", 150, "ok", 9, "c0")        // handled at 150, after it
	h := b.history(1000, 2000)
	r := Stale(h, Holds(h.LockOps(), h.End))
	if r.Sections != 1 || r.Accepted != 1 || r.FencedRejections != 0 || r.FirstT != 150 {
		t.Errorf("%+v, want one stale section with an accepted write at 150", r)
	}
	// Inside the lease throughout: nothing stale.
	b = newHistory(ResourcePool, 10, FenceNone, "c0")
	b.acquire("c0", 1, 0, 10, "ok", 100)
	b.op("c0", "write", 3, 20, 30, "ok", 9)
	b.store("c0", 25, "ok", 9, "c0")
	h = b.history(1000, 2000)
	if r := Stale(h, Holds(h.LockOps(), h.End)); r != (StaleReport{}) {
		t.Errorf("%+v, want nothing stale", r)
	}
}
