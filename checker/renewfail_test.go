package checker

import (
	"testing"

	"github.com/locksim/locksim/event"
)

// A renew-fail (locks.Env.RenewFailed) ends the open hold at its time,
// also a hold believed until release; a renew with Until 0 (Env.Renewed
// with a zero time) extends a hold to its release.
func TestHoldsRenewFail(t *testing.T) {
	ops := []Op{
		{T: 0, Proc: "c0", Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Until: 0},
		{T: 5, Proc: "c0", Kind: event.KindRenewFail, Op: event.OpAcquire, OpID: 1},
		{T: 10, Proc: "c0", Kind: event.KindCall, Op: event.OpRelease, OpID: 2},
		{T: 20, Proc: "c1", Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Until: 25},
		{T: 22, Proc: "c1", Kind: event.KindRenew, Op: event.OpAcquire, OpID: 1, Until: 0},
		{T: 40, Proc: "c1", Kind: event.KindCall, Op: event.OpRelease, OpID: 2},
	}
	got := Holds(ops, 100)
	want := []Hold{{Proc: "c0", Start: 0, End: 5}, {Proc: "c1", Start: 20, End: 40}}
	if len(got) != len(want) {
		t.Fatalf("holds %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Proc != want[i].Proc || got[i].Start != want[i].Start || got[i].End != want[i].End {
			t.Fatalf("hold %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
