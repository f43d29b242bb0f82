package run

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// effectsRun runs lockID in the no-faults world (seed 1) with the given
// schedule and returns the judged run and its fault effects.
func effectsRun(t *testing.T, lockID string, fs []faults.Fault) (*Judged, []FaultEffect) {
	t.Helper()
	return effectsRunIn(t, lockID, scenarios.Params{}, fs)
}

func effectsRunIn(t *testing.T, lockID string, p scenarios.Params, fs []faults.Fault) (*Judged, []FaultEffect) {
	t.Helper()
	info, err := catalogue.Get(lockID)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := scenarios.Build("no-faults", lockID, 1, p)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faults = fs
	j, err := runChecked(sim.TestBubble(t), cfg, "no-faults", info, checker.Options{SkipPorcupine: true})
	if err != nil {
		t.Fatal(err)
	}
	es := Effects(j.History, j.Result, j.Job.Config)
	if len(es) != len(fs) {
		t.Fatalf("Effects returned %d entries for %d faults", len(es), len(fs))
	}
	return j, es
}

// firstHold is c0's first hold and the gap after it, in the run without
// faults: the same seed runs the same prefix until a fault lands, so a
// fault placed inside the hold finds it there.
func firstHold(t *testing.T, lockID string) (hold checker.Hold, gapMid int64) {
	t.Helper()
	j, _ := effectsRun(t, lockID, nil)
	var holds []checker.Hold
	for _, h := range checker.Holds(j.History.LockOps(), j.History.End) {
		if h.Start > int64(time.Second) && h.End < j.History.Heal {
			holds = append(holds, h)
		}
	}
	if len(holds) < 2 {
		t.Fatalf("want two holds in the safety phase, got %d", len(holds))
	}
	a, b := holds[0], holds[1]
	if b.Start-a.End < int64(2*time.Millisecond) {
		t.Fatalf("no gap between the first holds: %v", holds[:2])
	}
	return a, (a.End + b.Start) / 2
}

// A node crash or clock jump bites when its node holds a live lock key:
// placed in the middle of a hold it bites, placed in a gap when nobody
// holds it does not (the gap is between two holds of a one-node lock, so
// the key is gone). The same faults on an idle node (a world of three
// nodes for a one-node lock) do not reach the lock.
func TestEffectsNodeFaults(t *testing.T) {
	for _, kind := range []faults.Kind{faults.Crash, faults.ClockJump, faults.NodePause} {
		t.Run(string(kind), func(t *testing.T) {
			hold, gap := firstHold(t, "set-nx-cad")
			mk := func(at int64, target string) faults.Fault {
				f := faults.Fault{Kind: kind, Start: time.Duration(at), Targets: []string{target}}
				if kind == faults.ClockJump {
					f.Jump = time.Second
				} else {
					f.Duration = time.Millisecond
				}
				return f
			}
			mid := (hold.Start + hold.End) / 2
			if _, es := effectsRun(t, "set-nx-cad", []faults.Fault{mk(mid, "n0")}); !es[0].Reached || !es[0].Bit {
				t.Errorf("in the middle of %s's hold [%v, %v]: %+v, want reached and bit", hold.Proc, time.Duration(hold.Start), time.Duration(hold.End), es[0])
			}
			if _, es := effectsRun(t, "set-nx-cad", []faults.Fault{mk(gap, "n0")}); !es[0].Reached || es[0].Bit || !strings.Contains(es[0].Why, "no live lock key") {
				t.Errorf("in the gap at %v: %+v, want reached, not bit, no live key", time.Duration(gap), es[0])
			}
			if _, es := effectsRunIn(t, "set-nx-cad", scenarios.Params{Nodes: 3}, []faults.Fault{mk(mid, "n2")}); !es[0].Injected || es[0].Reached || es[0].Bit {
				t.Errorf("on an idle node: %+v, want injected, not reached", es[0])
			}
		})
	}
}

// A client pause bites when its client holds a lease (or has a winning
// acquisition in flight); a pause of a client between its holds does not.
func TestEffectsClientPause(t *testing.T) {
	hold, _ := firstHold(t, "set-nx-cad")
	j0, _ := effectsRun(t, "set-nx-cad", nil)
	// A moment when hold.Proc neither held nor was acquiring with success.
	holds := checker.Holds(j0.History.LockOps(), j0.History.End)
	wins := winningAcquisitions(j0.History)
	idle := int64(-1)
	for at := hold.End + int64(time.Millisecond); at < j0.History.Heal; at += int64(time.Millisecond) {
		if !heldAt(holds, hold.Proc, at) && !wins.inFlight(hold.Proc, at) {
			idle = at
			break
		}
	}
	if idle < 0 {
		t.Fatal("no idle moment of the first holder")
	}
	pause := func(at int64) faults.Fault {
		return faults.Fault{Kind: faults.ClientPause, Start: time.Duration(at), Duration: time.Millisecond, Targets: []string{hold.Proc}}
	}
	if _, es := effectsRun(t, "set-nx-cad", []faults.Fault{pause((hold.Start + hold.End) / 2)}); !es[0].Bit {
		t.Errorf("pause in the middle of a hold: %+v, want bit", es[0])
	}
	if _, es := effectsRun(t, "set-nx-cad", []faults.Fault{pause(idle)}); !es[0].Reached || es[0].Bit {
		t.Errorf("pause of an idle client at %v: %+v, want reached, not bit", time.Duration(idle), es[0])
	}
	// A targeted pause after the check always lands on a winning
	// acquisition in flight.
	at := faults.Fault{Kind: faults.ClientPause, Start: time.Second, Duration: time.Millisecond, Targets: []string{"c0"}, At: string(locks.PointAfterCheck)}
	if _, es := effectsRun(t, "set-nx-cad", []faults.Fault{at}); !es[0].Bit {
		t.Errorf("pause at after-check: %+v, want bit", es[0])
	}
}

// A client clock fault reaches a lock that reads its clock (the
// catalogue's locks, through locks.Env.Clock) and not a library that
// reads time.Now (one bubble, one clock): that is said, never counted as
// reached.
func TestEffectsClientClock(t *testing.T) {
	jump := []faults.Fault{{Kind: faults.ClockJump, Start: time.Second, Jump: time.Second, Targets: []string{"c0"}}}
	if _, es := effectsRun(t, "set-nx-cad", jump); !es[0].Reached || !es[0].Bit {
		t.Errorf("set-nx-cad: %+v, want reached and bit (c0 acquires after the jump)", es[0])
	}
	for _, lib := range []string{"redsync", "redislock", "gocron"} {
		if _, es := effectsRun(t, lib, jump); !es[0].Injected || es[0].Reached || !strings.Contains(es[0].Why, "time.Now") {
			t.Errorf("%s: %+v, want injected, not reached, the reason naming time.Now", lib, es[0])
		}
	}
}

// A partition bites when it holds the lock's traffic, or the protected
// resource's (a write held on its way to the storage is what fencing is
// for: delayed-write's faults); one between two clients, which never talk,
// reaches nothing.
func TestEffectsPartition(t *testing.T) {
	part := func(to string) []faults.Fault {
		return []faults.Fault{{Kind: faults.Partition, Start: time.Second, Duration: 8 * time.Second, From: []string{"c0"}, To: []string{to}}}
	}
	if _, es := effectsRun(t, "set-nx-cad", part("n0")); !es[0].Bit {
		t.Errorf("c0<->n0: %+v, want bit", es[0])
	}
	if _, es := effectsRun(t, "set-nx-cad", part("store")); !es[0].Reached || !es[0].Bit {
		t.Errorf("c0<->store: %+v, want bit (the resource's traffic)", es[0])
	}
	if _, es := effectsRun(t, "set-nx-cad", part("c1")); es[0].Reached || es[0].Bit {
		t.Errorf("c0<->c1: %+v, want not reached", es[0])
	}
}

// The slow-client-clocks scenario: a 20% slow client clock reaches the
// catalogue's locks and not the libraries, and the report says so.
func TestClockReachSlowClients(t *testing.T) {
	for lock, want := range map[string]bool{"set-nx-cad": true, "redlock": true, "redsync": false, "redislock": false, "gocron": false} {
		info, _ := catalogue.Get(lock)
		cfg, err := scenarios.Build("slow-client-clocks", lock, 1, scenarios.Params{})
		if err != nil {
			t.Fatal(err)
		}
		j, err := runChecked(sim.TestBubble(t), cfg, "slow-client-clocks", info, checker.Options{SkipPorcupine: true})
		if err != nil {
			t.Fatal(err)
		}
		cr := ClockReaches(cfg, j.Result)
		if len(cr) != 3 {
			t.Fatalf("%s: %d client clocks, want 3", lock, len(cr))
		}
		for _, c := range cr {
			if c.Reached != want {
				t.Errorf("%s: %s reached = %v, want %v", lock, c.Client, c.Reached, want)
			}
		}
		if want && j.Check.Verdict != checker.VerdictUnsafe {
			t.Errorf("%s: verdict %s, want unsafe (its validity is on the slow clock)", lock, j.Check.Verdict)
		}
	}
}

// A node clock drift bites when a lock key lives on its node while it
// runs, not only when one is live as it begins: a drift from t=0, before
// any key exists, bites once clients write keys under it; one that ends
// before any acquisition does not.
func TestEffectsNodeDrift(t *testing.T) {
	hold, _ := firstHold(t, "set-nx-cad")
	drift := func(d time.Duration) []faults.Fault {
		return []faults.Fault{{Kind: faults.ClockDrift, Start: 0, Duration: d, DriftPPM: 100000, Targets: []string{"n0"}}}
	}
	if _, es := effectsRun(t, "set-nx-cad", drift(10*time.Second)); !es[0].Bit {
		t.Errorf("drift over the safety phase: %+v, want bit", es[0])
	}
	if _, es := effectsRun(t, "set-nx-cad", drift(time.Millisecond)); es[0].Bit || !strings.Contains(es[0].Why, "while it ran") {
		t.Errorf("drift of 1 ms at t=0 (the first hold starts at %v): %+v, want not bit", time.Duration(hold.Start), es[0])
	}
}

// A consensus lock keeps no key on a Redis node, so the engine cannot see
// its winning try: a pause after its check, on an acquisition that ends
// ok, bites (pause-after-check × zk-fencing read "0 of 600 bit" and was
// drawn untested).
func TestEffectsConsensusPause(t *testing.T) {
	info, _ := catalogue.Get("zk-fencing")
	cfg, err := scenarios.Build("pause-after-check", "zk-fencing", 1, scenarios.Params{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := runChecked(sim.TestBubble(t), cfg, "pause-after-check", info, checker.Options{SkipPorcupine: true})
	if err != nil {
		t.Fatal(err)
	}
	if j.Result.KeysSeen {
		t.Fatal("a consensus world created a Redis lock key")
	}
	es := Effects(j.History, j.Result, cfg)
	if c := Count(es); c.Injected == 0 || c.Bit != c.Injected {
		t.Fatalf("effects %+v: want every after-check pause to bite", es)
	}
}

// A client clock fault on a lock that never reads its clock, in the whole
// safety phase, is told apart from one that missed by timing.
func TestNeverReadClock(t *testing.T) {
	res := &sim.Result{LockClock: []int64{-1, 5}}
	for _, c := range []struct {
		targets []string
		want    bool
	}{{[]string{"c0"}, true}, {[]string{"c1"}, false}, {[]string{"c0", "c1"}, false}, {[]string{"n0"}, false}, {[]string{"c9"}, false}} {
		if got := NeverReadClock(res, c.targets); got != c.want {
			t.Errorf("NeverReadClock(%v) = %v, want %v", c.targets, got, c.want)
		}
	}
}

// The summary's promotion note is left out only when the fault's Why
// names the promoted node as a word of its own: "n1" inside "n10" is
// another node. (Before namesNode, a substring match dropped the note for
// n1 when Why named n10.)
func TestPromotedNote(t *testing.T) {
	for _, tc := range []struct {
		e    FaultEffect
		want string
	}{
		{FaultEffect{}, ""},
		{FaultEffect{Promoted: "n1"}, "; promoted n1"},
		{FaultEffect{Promoted: "n1", PromotedLacking: true}, "; promoted n1, which lacked a live lock key"},
		{FaultEffect{Promoted: "n1", Why: "the promoted replica n1 had every live lock key"}, ""},
		{FaultEffect{Promoted: "n1", Why: "its client never reached n1."}, ""},
		{FaultEffect{Promoted: "n1", Why: "(n1, n2)"}, ""},
		{FaultEffect{Promoted: "n1", Why: "the promoted replica n10 had every live lock key"}, "; promoted n1"},
		{FaultEffect{Promoted: "n1", Why: "its client never reached n11", PromotedLacking: true}, "; promoted n1, which lacked a live lock key"},
		{FaultEffect{Promoted: "n1", Why: "no primary to crash"}, "; promoted n1"},
	} {
		if got := tc.e.promotedNote(); got != tc.want {
			t.Errorf("Promoted %q, Why %q: got %q, want %q", tc.e.Promoted, tc.e.Why, got, tc.want)
		}
	}
}
