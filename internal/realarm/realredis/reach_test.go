package realredis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/realarm/realcoord"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

func fakeEnsemble(kind realcoord.Kind) *coord {
	ens := &realcoord.Ensemble{Kind: kind}
	for _, n := range coordMemberNames() {
		ens.Members = append(ens.Members, &realcoord.Member{Name: n})
	}
	return &coord{ens: ens}
}

// TestLeaderClockJumpNotInjected: a clock jump of the leader is not
// counted as injected and leaves no fault event, and the run lists it as
// not injected with the reason: when no member leads at its start (here:
// no member runs), and when the leader it resolves to is a member whose
// clock the real arm cannot step (etcd; ZooKeeper without libfaketime).
func TestLeaderClockJumpNotInjected(t *testing.T) {
	jump := faults.Fault{Kind: faults.ClockJump, Start: time.Second, Jump: 2 * time.Second, Targets: []string{faults.Leader}}
	for _, kind := range []realcoord.Kind{realcoord.Etcd, realcoord.ZooKeeper} {
		w := &world{coord: fakeEnsemble(kind)}
		w.startFault(0, jump)
		if w.stats.Faults != 0 || len(w.events) != 0 {
			t.Errorf("%s, no leader: %d injected, events %+v; want none", kind, w.stats.Faults, w.events)
		}
		if len(w.notInjected) != 1 || !strings.Contains(w.notInjected[0], "no member led at its start") || w.skipped[0] == "" {
			t.Errorf("%s, no leader: not injected %q, skipped %v; want the jump listed with why", kind, w.notInjected, w.skipped)
		}
		if why := w.notCarriedOut(jump, jump.WithLeader("zk1"), true); why != MemberClockNote {
			t.Errorf("%s, zk1 leads: %q, want it not carried out (%q)", kind, why, MemberClockNote)
		}
	}
	w := &world{}
	if why := w.notCarriedOut(jump, jump.WithLeader(""), false); !strings.Contains(why, "no coordination service") {
		t.Errorf("a world without a coordination service: %q", why)
	}
}

// TestLeaderClockJumpStartsFakeClocks: opted in to member clock jumps
// (MemberFakeTimeEnv), a jump of the leader starts ZooKeeper's members
// under libfaketime, as a jump naming a member does: without it the
// leader's jump could never be carried out.
func TestLeaderClockJumpStartsFakeClocks(t *testing.T) {
	t.Setenv(MemberFakeTimeEnv, "1")
	for _, targets := range [][]string{{faults.Leader}, {"zk2"}} {
		w := &world{cfg: sim.Config{Faults: []faults.Fault{{Kind: faults.ClockJump, Start: time.Second, Jump: time.Second, Targets: targets}}}}
		if !w.jumpsMemberClocks() {
			t.Errorf("a jump of %v: members not started under libfaketime", targets)
		}
	}
	w := &world{cfg: sim.Config{Faults: []faults.Fault{{Kind: faults.ClockJump, Start: time.Second, Jump: time.Second, Targets: []string{"c0"}}}}}
	if w.jumpsMemberClocks() {
		t.Errorf("a jump of c0 only started the members under libfaketime")
	}
}

// TestFaultReach: each fault of the schedule is said carried out at its
// fault event's time, or not injected and why.
func TestFaultReach(t *testing.T) {
	job, err := BuildScaled(run.Spec{Scenario: "no-faults", Lock: "set-nx-cad", Seed: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	safety := job.Config.Duration
	job.Config.Faults = []faults.Fault{
		{Kind: faults.ClockJump, Start: time.Second, Jump: time.Second, Targets: []string{faults.Leader}},
		{Kind: faults.Crash, Start: 2 * time.Second, Duration: time.Second, Targets: []string{"n0"}},
		{Kind: faults.ClientPause, Start: time.Second, Duration: time.Second, Targets: []string{"c0"}, At: "after-check"},
		{Kind: faults.Crash, Start: safety, Duration: time.Second, Targets: []string{"n0"}},
		{Kind: faults.Crash, Start: 3 * time.Second, Duration: time.Second, Targets: []string{"n0"}},
		{Kind: faults.ClientPause, Start: 1600 * time.Millisecond, Duration: time.Second, Targets: []string{"c1"}, At: "acquiring"},
		{Kind: faults.Partition, Start: 2500 * time.Millisecond, Duration: time.Second, From: []string{faults.Leader}, To: []string{"zk0", "zk1", "zk2"}},
		{Kind: faults.Delay, Start: 3 * time.Second, Duration: time.Second, From: []string{"c0"}, To: []string{"n0"}, Delay: time.Second, At: "releasing", On: "c0"},
		{Kind: faults.Crash, Start: 3 * time.Second, Duration: time.Second, Targets: []string{"n0"}, At: "renewing", On: "c1"},
	}
	evs := []sim.Event{
		{T: int64(1001 * time.Millisecond), Proc: "world", Kind: event.KindFault, Fault: 3},
		{T: int64(1502 * time.Millisecond), Proc: "c0", Kind: event.KindPause, Fault: 3},
		{T: int64(1601 * time.Millisecond), Proc: "world", Kind: event.KindFault, Fault: 6},
		{T: int64(2501 * time.Millisecond), Proc: "world", Kind: event.KindFault, Fault: 7, Detail: "partition@2.5s+1s zk1<->zk0,zk2"},
		{T: int64(2003 * time.Millisecond), Proc: "world", Kind: event.KindFault, Fault: 2},
		{T: int64(3400 * time.Millisecond), Proc: "world", Kind: event.KindFault, Fault: 8},
	}
	jd := &Judged{Judged: &run.Judged{Job: job.Job, Result: &sim.Result{History: evs}}, Real: job,
		Info: &Info{Skipped: map[int]string{0: "it names the leader, and no member led at its start"}}}
	got := jd.FaultReach()
	want := []string{
		"not injected: it names the leader, and no member led at its start",
		"carried out at t=2.003s",
		"armed at t=1.001s, fired at t=1.502s (its client reached after-check)",
		"not injected: it begins after the safety phase",
		"not injected: the run had stopped or healed before it began",
		"armed at t=1.601s, never fired: its client did not reach acquiring while it waited (not counted as injected)",
		"carried out at t=2.501s as partition@2.5s+1s zk1<->zk0,zk2",
		"armed, began at t=3.4s (its client c0 reached releasing)",
		"armed, never began: its client c1 did not reach renewing while it waited (not counted as injected)",
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("fault %d: %q, want %q", i+1, got, want[i])
		}
	}
}

// TestSummarySaysReach: the real run's summary marks each fault of its
// list with its reach, lists the one not carried out under "not
// injected:", and says its stalls and a cut trace.
func TestSummarySaysReach(t *testing.T) {
	job, err := BuildScaled(run.Spec{Scenario: "no-faults", Lock: "set-nx-cad", Seed: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	job.Config.Faults = []faults.Fault{
		{Kind: faults.Crash, Start: time.Second, Duration: time.Second, Targets: []string{"n0"}},
		{Kind: faults.ClockJump, Start: 2 * time.Second, Jump: time.Second, Targets: []string{faults.Leader}},
	}
	why := "it names the leader, and no member led at its start (an election, or the members down or paused)"
	res := &sim.Result{History: []sim.Event{{T: int64(time.Second), Proc: "world", Kind: event.KindFault, Fault: 1}}, Stats: sim.Stats{Faults: 1}}
	jd := &Judged{Judged: job.Job.Judge(res, nil), Real: job, Info: &Info{TTL: job.TTL, Scale: job.Scale,
		NotInjected: []string{job.Config.Faults[1].String() + ": " + why}, Skipped: map[int]string{1: why},
		Stalls: Stalls{PeriodNS: int64(StallPeriod), Wakeups: 100, MaxNS: int64(30 * time.Millisecond), MaxAtNS: int64(time.Second), OverNS: int64(job.TTL / 4)}}}
	jd.TraceCut = &TraceCut{Kept: 10, NotKept: 5, MaxBytes: 1 << 20}
	r := jd.Report(job.Repro())
	r.TraceFile = "t.jsonl"
	var b strings.Builder
	jd.WriteSummary(&b, r)
	for _, want := range []string{
		"not injected:   " + job.Config.Faults[1].String() + ": " + why,
		"                " + job.Config.Faults[0].String() + "  [carried out at t=1s]",
		"                " + job.Config.Faults[1].String() + "  [not injected: " + why + "]",
		"stalls:         largest 30ms at 1.000 s; 0 of 100 wake-ups later than TTL/4 = 125ms",
		"trace file:     t.jsonl; trace cut at 10 events: 5 not kept",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "machine:") {
		t.Errorf("a safe run labelled the machine's:\n%s", b.String())
	}
}

// TestArmedFaultReal: on the real arm an armed partition begins when its
// client reaches the point (c0's first release after its start, before
// c0 calls anything else), and one armed at a point its
// client never reaches (renewing, set-nx-cad) never begins and is listed
// as unfired; each is counted once (2 scheduled, 1 injected).
func TestArmedFaultReal(t *testing.T) {
	requireRedis(t)
	j := short(t, "no-faults", "set-nx-cad", 1)
	start := j.Config.Duration / 4
	j.Config.Faults = []faults.Fault{
		{Kind: faults.Partition, Start: start, Duration: 20 * time.Millisecond, From: []string{"c0"}, To: []string{"n0"}, At: "releasing", On: "c0"},
		{Kind: faults.Crash, Start: start, Duration: 20 * time.Millisecond, Targets: []string{"n0"}, At: "renewing", On: "c1"},
	}
	jd, err := j.RunAndJudge(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var began, call int64 = -1, -1
	for _, e := range jd.Result.History {
		if e.Proc == "world" && e.Kind == event.KindFault && e.Fault == 1 && began < 0 {
			began = e.T
		}
		if e.Proc == "c0" && e.Kind == event.KindCall && e.Op == event.OpRelease && e.T >= int64(start) && call < 0 {
			call = e.T
		}
	}
	if began < 0 || call < 0 || began < call {
		t.Fatalf("the armed partition began at t=%v, c0's first release after %v at t=%v: want it begun as the release was called", time.Duration(began), start, time.Duration(call))
	}
	for _, e := range jd.Result.History {
		if e.Proc == "c0" && e.Kind == event.KindCall && e.T > call && e.T < began {
			t.Fatalf("c0 called %s at t=%v, after its release's call at t=%v and before the armed partition began at t=%v: it began later than the release", e.Op, time.Duration(e.T), time.Duration(call), time.Duration(began))
		}
	}
	if got := jd.Result.Stats.Faults - len(run.UnfiredPauses(jd.History)); jd.Result.Stats.Faults != 2 || got != 1 {
		t.Fatalf("%d faults counted, %d injected; want 2 and 1 (each counted once, armed or fired)", jd.Result.Stats.Faults, got)
	}
	if un := run.UnfiredPauses(jd.History); len(un) != 1 || un[0].At != "renewing" {
		t.Fatalf("unfired %v, want the crash armed at renewing", un)
	}
	reach := jd.FaultReach()
	if !strings.Contains(reach[0], "armed, began") || !strings.Contains(reach[1], "never began") {
		t.Fatalf("reach %q", reach)
	}
}

// TestArmedFaultDriver: a driver's client reaches the workload's own
// points too (acquire, releasing), so a fault armed there begins in a
// driver run as in a Go one.
func TestArmedFaultDriver(t *testing.T) {
	requireRedis(t)
	requirePythonRedis(t)
	j := short(t, "no-faults", "set-nx-cad", 1)
	if err := j.WithDriver(repoDriver(t, "python-set-nx-cad")); err != nil {
		t.Fatal(err)
	}
	start := j.Config.Duration / 4
	j.Config.Faults = []faults.Fault{
		{Kind: faults.Partition, Start: start, Duration: 20 * time.Millisecond, From: []string{"c0"}, To: []string{"n0"}, At: "releasing", On: "c0"},
		{Kind: faults.Delay, Start: start, Duration: 20 * time.Millisecond, From: []string{"c1"}, To: []string{"n0"}, Delay: time.Millisecond, At: "acquire", On: "c1"},
	}
	jd, err := j.RunAndJudge(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if un := run.UnfiredPauses(jd.History); len(un) != 0 {
		t.Fatalf("unfired %v: want both armed faults begun at the driver client's points", un)
	}
	if got := jd.Result.Stats.Faults - len(run.UnfiredPauses(jd.History)); got != 2 {
		t.Fatalf("%d injected, want 2", got)
	}
}
