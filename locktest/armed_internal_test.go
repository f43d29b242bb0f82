package locktest

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/run"
)

// began is when the history's fault n (1-based) began (its "fault"
// event), and whether it did.
func began(o Outcome, n int) (int64, bool) {
	for _, e := range o.history.Events {
		if e.Proc == "world" && e.Kind == event.KindFault && e.Fault == n {
			return e.T, true
		}
	}
	return 0, false
}

// firstCall is the first call of op by client c at or after t.
func firstCall(o Outcome, c string, op event.Op, t int64) (int64, bool) {
	for _, e := range o.history.Events {
		if e.Proc == c && e.Kind == event.KindCall && e.Op == op && e.T >= t {
			return e.T, true
		}
	}
	return 0, false
}

// sameInstant: the fault began as the call was made (the engine's steps
// between the two take a nanosecond each, no more).
func sameInstant(fault, call int64) bool {
	return fault >= call && fault-call < int64(time.Microsecond)
}

// An armed partition begins when its client reaches the point, not at its
// start: at c0's first release after 5 s, the instant the release was
// called, and it holds the release in flight.
func TestArmedFaultBeginsAtPoint(t *testing.T) {
	start := 5 * time.Second
	fs := []faults.Fault{{Kind: faults.Partition, Start: start, Duration: 300 * time.Millisecond,
		From: []string{"c0"}, To: []string{"c1", "c2", "n0", "store"}, At: "releasing", On: "c0"}}
	out := Run(t, Library("set-nx-cad"), Options{}, 1, fs)
	at, ok := began(out, 1)
	if !ok {
		t.Fatalf("the armed partition never began; effects %+v", out.Effects)
	}
	call, ok := firstCall(out, "c0", event.OpRelease, int64(start))
	if !ok || !sameInstant(at, call) {
		t.Fatalf("began at t=%v, c0's first release after %v called at t=%v (found %v): want the same instant", time.Duration(at), start, time.Duration(call), ok)
	}
	if e := out.Effects[0]; !e.Injected || !e.Reached || !e.Bit {
		t.Fatalf("effects %+v, want injected, reached (the release was held) and bit", e)
	}
	if len(out.Unfired) != 0 {
		t.Fatalf("unfired %v, want none", out.Unfired)
	}
	// The same fault unarmed begins at its start.
	fs[0].At, fs[0].On = "", ""
	plain := Run(t, Library("set-nx-cad"), Options{}, 1, fs)
	if at, _ := began(plain, 1); at != int64(start) {
		t.Fatalf("unarmed: began at t=%v, want %v", time.Duration(at), start)
	}
}

// A clock jump armed at "acquire" on c1 steps c1's clock the instant c1
// calls Acquire (the workload's own point, whatever the lock marks).
func TestArmedJumpAtAcquire(t *testing.T) {
	start := 2 * time.Second
	fs := []faults.Fault{{Kind: faults.ClockJump, Start: start, Jump: time.Second, Targets: []string{"c1"}, At: "acquire", On: "c1"}}
	out := Run(t, Library("set-nx-cad"), Options{}, 3, fs)
	at, ok := began(out, 1)
	call, cok := firstCall(out, "c1", event.OpAcquire, int64(start))
	if !ok || !cok || !sameInstant(at, call) {
		t.Fatalf("began at t=%v (%v), c1's acquire at t=%v (%v): want the same instant", time.Duration(at), ok, time.Duration(call), cok)
	}
}

// A fault armed at a point its client never reaches (renewing, on a lock
// that does not renew) never begins: it is listed as unfired and not
// counted as injected, and the effects say why.
func TestArmedFaultNeverReached(t *testing.T) {
	fs := []faults.Fault{{Kind: faults.Crash, Start: time.Second, Duration: time.Second, Targets: []string{"n0"}, At: "renewing", On: "c0"}}
	out := Run(t, Library("set-nx-cad"), Options{}, 1, fs)
	if _, ok := began(out, 1); ok {
		t.Fatal("a fault armed at renewing began in a lock that never renews")
	}
	if len(out.Unfired) != 1 || out.Unfired[0].At != "renewing" {
		t.Fatalf("unfired %v, want the crash", out.Unfired)
	}
	if e := out.Effects[0]; e.Injected || !strings.Contains(e.Why, "c0 never reached renewing") {
		t.Fatalf("effects %+v, want not injected because c0 never reached renewing", e)
	}
	if out.Check.Verdict != "safe" {
		t.Fatalf("verdict %s: nothing happened, want safe", out.Check.Verdict)
	}
	if got := run.UnfiredPauses(out.history); len(got) != 1 {
		t.Fatalf("run.UnfiredPauses %v", got)
	}
}

// A failover can be armed (its targets name groups, its on a client),
// and begins at its client's point; on must name a client.
func TestArmedFailover(t *testing.T) {
	o := Options{Topology: "replicated"}
	fs := []faults.Fault{{Kind: faults.Failover, Start: 2 * time.Second, Duration: 2 * time.Second, At: "acquire", On: "c0"}}
	out := Run(t, Library("primary-replica"), o, 1, fs)
	if len(out.Effects) != 1 || !out.Effects[0].Injected {
		t.Fatalf("effects %+v, want the armed failover injected", out.Effects)
	}
	at, ok := began(out, 1)
	call, cok := firstCall(out, "c0", event.OpAcquire, int64(2*time.Second))
	if !ok || !cok || !sameInstant(at, call) {
		t.Fatalf("began at t=%v (%v), c0's acquire at t=%v (%v): want the same instant", time.Duration(at), ok, time.Duration(call), cok)
	}
	o = o.withDefaults()
	cfg, err := world(info(Library("primary-replica"), o), o, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faults = []faults.Fault{{Kind: faults.Crash, Start: time.Second, Duration: time.Second, Targets: []string{"n1"}, At: "acquire", On: "n0"}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `on "n0" is not a client`) {
		t.Fatalf("on a node: error %v", err)
	}
}
