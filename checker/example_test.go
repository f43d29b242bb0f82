package checker_test

import (
	"fmt"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
)

// Two clients read the bonus pool at 10 and both write 9: a lost update.
// The storage's log shows it, and no order of whole critical sections
// explains what the clients saw.
func ExampleCheck() {
	h := checker.History{
		Clients:  []string{"c0", "c1"},
		Resource: checker.ResourcePool,
		Initial:  10,
		End:      100,
		Events: []checker.Event{
			{T: 10, Proc: "c0", Kind: event.KindCall, Op: event.OpRead, OpID: 1},
			{T: 20, Proc: "c0", Kind: event.KindOK, Op: event.OpRead, OpID: 1, Value: 10},
			{T: 30, Proc: "c1", Kind: event.KindCall, Op: event.OpRead, OpID: 1},
			{T: 40, Proc: "c1", Kind: event.KindOK, Op: event.OpRead, OpID: 1, Value: 10},
			{T: 50, Proc: "c0", Kind: event.KindCall, Op: event.OpWrite, OpID: 2, Value: 9},
			{T: 55, Proc: "store", Kind: event.KindStoreWrite, Peer: "c0", Lock: "bonus-pool", Result: event.ResultOK, Value: 9, Detail: "version=1 owner=a"},
			{T: 60, Proc: "c0", Kind: event.KindOK, Op: event.OpWrite, OpID: 2, Value: 9},
			{T: 70, Proc: "c1", Kind: event.KindCall, Op: event.OpWrite, OpID: 2, Value: 9},
			{T: 75, Proc: "store", Kind: event.KindStoreWrite, Peer: "c1", Lock: "bonus-pool", Result: event.ResultOK, Value: 9, Detail: "version=2 owner=b"},
			{T: 80, Proc: "c1", Kind: event.KindOK, Op: event.OpWrite, OpID: 2, Value: 9},
		},
	}
	r := checker.Check(h, checker.Options{})
	fmt.Println(r.Verdict, r.ResourceViolations, r.Porcupine)
	fmt.Println(r.FirstResourceViolation)
	// Output:
	// unsafe 1 illegal
	// c1 wrote 9 to bonus-pool at t=75ns, expected 8 (previous 9): lost update: the value did not move
}
