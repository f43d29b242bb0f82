package realredis

import (
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/realarm/realcoord"
)

// TestMemberClockFaultNotInjected: a clock fault naming only members the
// real arm cannot step (etcd, or ZooKeeper without libfaketime) is not
// counted as injected and leaves no fault event, and the run says why; a
// fault that also names a client is carried out (the client's clock).
func TestMemberClockFaultNotInjected(t *testing.T) {
	ens := &realcoord.Ensemble{Kind: realcoord.Etcd}
	for _, n := range coordMemberNames() {
		ens.Members = append(ens.Members, &realcoord.Member{Name: n})
	}
	w := &world{coord: &coord{ens: ens}}
	jump := faults.Fault{Kind: faults.ClockJump, Start: time.Second, Jump: 2 * time.Second, Targets: []string{"zk0", "zk1", "zk2"}}
	drift := faults.Fault{Kind: faults.ClockDrift, Start: time.Second, Duration: time.Second, DriftPPM: 1000, Targets: []string{"zk1"}}
	for _, f := range []faults.Fault{jump, drift} {
		if why := w.coordNotCarriedOut(f); why != MemberClockNote {
			t.Errorf("%v: %q, want it not carried out (%q)", f, why, MemberClockNote)
		}
		w.startFault(0, f)
	}
	if w.stats.Faults != 0 || len(w.events) != 0 {
		t.Errorf("after two member clock faults not carried out: %d injected, events %+v; want none", w.stats.Faults, w.events)
	}
	if w.clockNote != MemberClockNote {
		t.Errorf("the run's node clocks line %q, want %q", w.clockNote, MemberClockNote)
	}
	mixed := jump
	mixed.Targets = []string{"zk0", "c0"}
	if why := w.coordNotCarriedOut(mixed); why != "" {
		t.Errorf("a jump of zk0 and c0: %q, want it carried out (c0's clock)", why)
	}
	delay := faults.Fault{Kind: faults.Delay, Start: time.Second, Duration: time.Second, Delay: 50 * time.Millisecond, From: []string{"zk0"}, To: []string{"zk1", "zk2"}}
	w.startFault(1, delay)
	if w.stats.Faults != 0 || len(w.events) != 0 || len(w.notInjected) != 3 {
		t.Errorf("after the two clock faults and a delay between etcd members: %d injected, events %+v, not injected %q; want none injected, and the three said", w.stats.Faults, w.events, w.notInjected)
	}
	toClient := delay
	toClient.To = []string{"c0"}
	if why := w.coordNotCarriedOut(toClient); why != "" {
		t.Errorf("a delay from zk0 to c0: %q, want it carried out (the client's proxies)", why)
	}
	if why := w.coordNotCarriedOut(faults.Fault{Kind: faults.Crash, Targets: []string{"zk0"}}); why != "" {
		t.Errorf("a member crash: %q, want it carried out", why)
	}
}
