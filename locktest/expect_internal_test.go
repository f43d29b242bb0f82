package locktest

import (
	"context"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
)

// A lock that does not renew gets no advice to mark PointRenewing when
// pauses drawn there never fire; one that says it renews does, and so
// does a search aimed at renewals.
func TestRenewingWarning(t *testing.T) {
	drawn, fired := map[string]int{"renewing": 9, "before-write": 9}, map[string]int{"before-write": 9}
	for _, c := range []struct {
		o    Options
		want bool
	}{
		{Options{}, false},
		{Options{Renews: true}, true},
		{Options{PausePoints: []locks.PausePoint{locks.PointRenewing}}, true},
	} {
		ws := c.o.warnings(drawn, fired, clockTally{})
		got := len(ws) == 1 && strings.Contains(ws[0], "env.At(locks.PointRenewing)")
		if got != c.want || (!c.want && len(ws) > 0) {
			t.Errorf("Renews %v, PausePoints %v: warnings %q, want the renewing one: %v", c.o.Renews, c.o.PausePoints, ws, c.want)
		}
	}
	if drawn["renewing"] != 9 {
		t.Error("warnings changed the caller's tally")
	}
}

// ExpectUnsafe with ExpectClass passes over violations of another class:
// a correct lock (set-nx-cad) paused before its write breaks the resource
// (Kleppmann's late write, which every lease lock without fencing has),
// so a search that expects a double hold fails, saying what it found
// instead; the same search expecting a resource violation passes.
func TestExpectClassPassesOverOthers(t *testing.T) {
	o := Options{Kinds: []faults.Kind{faults.ClientPause}, PausePoints: []locks.PausePoint{locks.PointBeforeWrite},
		Checks: 20, Seed: 1, ExpectClass: checker.ClassDoubleHold}
	out, msg := expectUnsafe(t, Library("set-nx-cad"), o)
	if out != nil {
		t.Fatalf("found a double hold in the correct lock:\n%s", Describe(t, *out))
	}
	for _, want := range []string{"expected the lock to be unsafe (class double-hold)", "of the 20 random schedules", "were unsafe in another way", "class resource"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	t.Log(msg)
	o.ExpectClass = checker.ClassResource
	if out, msg := expectUnsafe(t, Library("set-nx-cad"), o); out == nil || out.Check.Class != checker.ClassResource {
		t.Errorf("expecting a resource violation: %v %s", out, msg)
	}
}

// Options that cannot run are errors naming the field.
func TestOptionsCheck(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Targets: "servers"}, `Options.Targets "servers"`},
		{Options{ReadWrite: true, ReadFraction: 1.5}, "Options.ReadFraction 1.5: out of range"},
		{Options{ReadFraction: 0.5}, "Options.ReadWrite is not"},
		{Options{ExpectClass: "overlap"}, `Options.ExpectClass "overlap"`},
		{Options{ExpectKind: "double-hold"}, `Options.ExpectKind "double-hold"`},
		{Options{Targets: NodeMinority}, "has no minority"},
		{Options{Targets: ClientsOnly, Kinds: []faults.Kind{faults.Crash}}, "can land on the targets"},
		{Options{PausePoints: []locks.PausePoint{"later"}}, `pause point "later"`},
	} {
		err := c.o.withDefaults().check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.o, err, c.want)
		}
	}
	if err := (Options{Topology: locks.Independent, Targets: NodeMinority}).withDefaults().check(); err != nil {
		t.Errorf("a minority of 5 nodes: %v", err)
	}
}

// writeOnly is a lock without a read mode.
type writeOnly struct{}

func (writeOnly) Acquire(context.Context) (locks.Lease, error) { return locks.Lease{}, nil }
func (writeOnly) Release(context.Context, locks.Lease) error   { return nil }

// ReadWrite on a lock without AcquireRead is refused at the factory (a
// run then fails the test with this error), not silently run with write
// sections only.
func TestReadWriteNeedsReadLock(t *testing.T) {
	in := Options{ReadWrite: true}.withTraits(locks.Info{New: func(locks.Env) (locks.Lock, error) { return writeOnly{}, nil }})
	_, err := in.New(locks.Env{})
	if err == nil || !strings.Contains(err.Error(), "Options.ReadWrite is set, but the factory's lock (locktest.writeOnly) has no AcquireRead") {
		t.Errorf("error %v", err)
	}
	if !in.ReadWrite {
		t.Error("the lock's info does not say read-write")
	}
}
