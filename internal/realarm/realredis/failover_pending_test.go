package realredis

import "testing"

// A failover whose crash ended with no promotion leaves nothing awaited:
// a later +switch-master is not credited to it (promoted reads w.failing).
func TestFailoverEndedDropsItsPromotion(t *testing.T) {
	w := &world{failing: []pendingFailover{{fault: 0}, {fault: 2}, {fault: 0}}}
	w.failoverEnded(0)
	if len(w.failing) != 1 || w.failing[0].fault != 2 {
		t.Fatalf("awaited after fault 0's crash ended: %+v, want fault 2's only", w.failing)
	}
	w.failoverEnded(2)
	if len(w.failing) != 0 {
		t.Fatalf("awaited after both ended: %+v", w.failing)
	}
}
