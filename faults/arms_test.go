package faults

import (
	"testing"
	"time"
)

// TestArmsReach: a point fires every fault armed there, in arming order,
// and the first pause armed there, one pause per reach; others stay armed;
// Clear empties.
func TestArmsReach(t *testing.T) {
	var a Arms
	a.ArmFault(0, Fault{Kind: Partition, At: "acquire", On: "c0"})
	a.ArmPause(1, Fault{Kind: ClientPause, At: "acquire", Duration: time.Second, Targets: []string{"c0"}})
	a.ArmFault(2, Fault{Kind: Delay, At: "releasing", On: "c0"})
	a.ArmFault(3, Fault{Kind: Loss, At: "acquire", On: "c0"})
	a.ArmPause(4, Fault{Kind: ClientPause, At: "acquire", Duration: 2 * time.Second, Targets: []string{"c0"}})

	fire, p := a.Reach("acquire")
	if len(fire) != 2 || fire[0].I != 0 || fire[1].I != 3 {
		t.Fatalf("fire %+v, want faults 0 and 3", fire)
	}
	if p == nil || p.Fault != 2 || p.D != int64(time.Second) || p.Point != "acquire" {
		t.Fatalf("pause %+v, want the first pause (fault 2)", p)
	}
	if fire, p := a.Reach("acquire"); fire != nil || p == nil || p.Fault != 5 {
		t.Fatalf("the second reach: fire %v, pause %+v; want no fault and the second pause (fault 5)", fire, p)
	}
	if fire, p := a.Reach("acquire"); fire != nil || p != nil {
		t.Fatalf("a second reach fired %v, %+v", fire, p)
	}
	if a.Empty() || a.Pauses() != 0 {
		t.Fatalf("the releasing fault should stay armed: empty %v, pauses %d", a.Empty(), a.Pauses())
	}
	a.Clear()
	if !a.Empty() {
		t.Fatal("Clear left something armed")
	}
}
