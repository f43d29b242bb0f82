package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/sim"
)

// withoutCoordination makes the world builder and the client program see
// no registered coordination service until t ends, as in a program that
// imports no locks/catalogue (this package's tests import it). Not for a
// parallel test.
func withoutCoordination(t *testing.T) {
	old := lookupCoordination
	lookupCoordination = func() (sim.Coordination, bool) { return sim.Coordination{}, false }
	t.Cleanup(func() { lookupCoordination = old })
}

// TestConsensusWorldNeedsCoordination: a consensus lock's world, in a
// program that registered no coordination service, is an error naming the
// scenario, the lock and the import that registers one; other locks'
// worlds still build; and the client program of a consensus world run
// without one records that error instead of panicking.
func TestConsensusWorldNeedsCoordination(t *testing.T) {
	c, ok := sim.LookupCoordination()
	if !ok || len(c.Members) != 3 {
		t.Fatalf("the catalogue registered %+v (%v), want the 3-member zk service", c, ok)
	}
	p := Params{Duration: 2 * time.Second, Liveness: time.Second}
	cfg, err := Build("no-faults", "zk-lock", 1, p)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cfg.Services); n != 4 {
		t.Fatalf("zk-lock's world has %d services, want the storage and 3 members", n)
	}

	withoutCoordination(t)
	_, err = Build("leader-partition", "zk-lock", 1, p)
	if err == nil {
		t.Fatal("zk-lock's world built with no coordination service registered")
	}
	for _, want := range []string{"leader-partition", "zk-lock", "github.com/locksim/locksim/locks/catalogue"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if _, err := Build("no-faults", "set-nx-cad", 1, p); err != nil {
		t.Errorf("set-nx-cad needs no coordination service: %v", err)
	}

	res, err := sim.Run(sim.TestBubble(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	errs := 0
	for _, ev := range res.History {
		if ev.Kind == event.KindError && strings.Contains(ev.Detail, "needs a coordination service") {
			errs++
		}
		if ev.Op == event.OpAcquire {
			t.Fatalf("a client acquired with no coordination service: %+v", ev)
		}
	}
	if errs != cfg.Clients {
		t.Errorf("%d clients recorded the missing coordination service, want %d", errs, cfg.Clients)
	}
}
