package realredis

import (
	"testing"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/sim"
)

// TestExpiries: a key that went while its holder held it is the holder's
// expiry, told at the time it went, even when the holder's acquire ok is
// recorded after (paused at after-check); a key released before it went,
// or re-created by an acquire called after it went, is not.
func TestExpiries(t *testing.T) {
	const k = "/locks/x/lease1"
	acq := func(tm int64, p string, id int64, kind event.Kind) sim.Event {
		return sim.Event{T: tm, Proc: p, Kind: kind, Op: event.OpAcquire, OpID: id, Detail: map[bool]string{true: k}[kind == event.KindOK]}
	}
	rel := sim.Event{T: 30, Proc: "c0", Kind: event.KindCall, Op: event.OpRelease, OpID: 2, Detail: k}
	w := &world{coord: &coord{}}
	w.events = []sim.Event{
		acq(10, "c0", 1, event.KindCall), acq(20, "c0", 1, event.KindOK), rel, // a hold released
		acq(40, "c0", 3, event.KindCall), // called, paused inside Acquire
		acq(90, "c0", 3, event.KindOK),   // its ok, after the key went at 60
		acq(95, "c0", 4, event.KindCall), acq(99, "c0", 4, event.KindOK),
	}
	w.coord.gone = []goneNode{{t: 35, name: k, what: "lease expired"}, {t: 60, name: k, what: "lease expired"}, {t: 200, name: "/locks/x/other", what: "lease expired"}}
	w.expiries()
	var got []sim.Event
	for _, e := range w.events {
		if e.Kind == event.KindZKExpire {
			got = append(got, e)
		}
	}
	if len(got) != 1 || got[0].T != 60 || got[0].Proc != "c0" {
		t.Fatalf("expiries: %+v, want one, c0's at 60 (the deletion at 35 followed a release call)", got)
	}
	for i := 1; i < len(w.events); i++ {
		if w.events[i].T < w.events[i-1].T {
			t.Fatalf("events out of time order after the insert: %v then %v", w.events[i-1].T, w.events[i].T)
		}
	}
}
