package run

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// A hand-built history: a node drifting from t=0, c0's acquisition, its
// pause at after-check, c1's acquisition, the overlap. The story tells
// them in order, from the start of the involved acquisitions.
func TestExplainHandBuilt(t *testing.T) {
	s := time.Second
	drift := faults.Fault{Kind: faults.ClockDrift, Start: 0, Duration: 100 * s, Targets: []string{"n0"}, DriftPPM: 200000}
	pause := faults.Fault{Kind: faults.ClientPause, Start: s, Duration: 5 * s, Targets: []string{"c0"}, At: "after-check"}
	h := checker.History{Faults: []faults.Fault{drift, pause}, Events: []checker.Event{
		{T: 0, Proc: "world", Kind: "fault", Fault: 1, Detail: drift.String()},
		{T: int64(s), Proc: "world", Kind: "fault", Fault: 2, Detail: pause.String()},
		{T: int64(2 * s), Proc: "c0", Kind: "call", Op: "acquire"},
		{T: int64(2*s + 1e6), Proc: "c0", Kind: "pause", Fault: 2, Detail: pause.String()},
		{T: int64(3 * s), Proc: "c9", Kind: "ok", Op: "acquire", Until: int64(6 * s)}, // not involved
		{T: int64(5 * s), Proc: "c1", Kind: "ok", Op: "acquire", Until: int64(8 * s)},
		{T: int64(7 * s), Proc: "c0", Kind: "ok", Op: "acquire", Until: int64(5 * s)},
		{T: int64(9 * s), Proc: "c1", Kind: "ok", Op: "acquire", Until: int64(12 * s)}, // after the violation
	}}
	j := &Judged{History: h, Check: checker.Result{First: &checker.Violation{Kind: checker.KindLeaseOverlap, T: int64(7 * s), Since: int64(2 * s),
		Clients: []string{"c0", "c1"}, Detail: "lease overlap: 1, first c0 and c1 ..."}}}
	want := "in force since 0s: " + drift.String() + "; c0 paused at 2.001s (" + pause.String() + "); c1 acquired at 5s (believing until 8s); " +
		"c0 acquired at 7s with its lease already over (it believed until 5s); then lease overlap: 1, first c0 and c1 ..."
	if got := Explain(j); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if Explain(&Judged{}) != "" {
		t.Fatal("a run without a violation has a story")
	}
}

// A real run: Kleppmann's pause on set-nx-cad tells the pause and ends
// with the checker's violation.
func TestExplainRun(t *testing.T) {
	info, _ := catalogue.Get("set-nx-cad")
	cfg, err := scenarios.Build("pause-after-check", "set-nx-cad", 1, scenarios.Params{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := runChecked(sim.TestBubble(t), cfg, "pause-after-check", info, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	story := Explain(j)
	for _, want := range []string{"c0 paused at ", "at after-check", "with its lease already over", "then " + j.Check.First.Detail} {
		if !strings.Contains(story, want) {
			t.Errorf("story lacks %q:\n%s", want, story)
		}
	}
}

// A crash timed by the node's clock ended (its fault-end) before the story
// starts, long before its stated end: it is not "in force"; one still
// running is.
func TestExplainNodeClockCrash(t *testing.T) {
	s := time.Second
	ended := faults.Fault{Kind: faults.Crash, Start: s, Duration: 20 * s, Targets: []string{"n0"}, NodeClock: true}
	running := faults.Fault{Kind: faults.Crash, Start: s, Duration: 20 * s, Targets: []string{"n1"}, NodeClock: true}
	h := checker.History{Heal: int64(30 * s), Faults: []faults.Fault{ended, running}, Events: []checker.Event{
		{T: int64(s), Proc: "world", Kind: "fault", Fault: 1, Detail: ended.String()},
		{T: int64(s), Proc: "world", Kind: "fault", Fault: 2, Detail: running.String()},
		{T: int64(2 * s), Proc: "world", Kind: "fault-end", Fault: 1, Detail: ended.String()},
		{T: int64(5 * s), Proc: "c1", Kind: "ok", Op: "acquire", Until: int64(8 * s)},
	}}
	j := &Judged{History: h, Check: checker.Result{First: &checker.Violation{Kind: checker.KindLeaseOverlap, T: int64(6 * s), Since: int64(4 * s),
		Clients: []string{"c0", "c1"}, Detail: "overlap"}}}
	got := Explain(j)
	if strings.Contains(got, ended.String()) || !strings.Contains(got, "in force since 1s: "+running.String()) {
		t.Fatalf("story %q: want only the crash still running in force", got)
	}
}

// A delay spike over before the story starts still tells, while what it
// held up may land: redisson-lock's stale unlock (TestStaleSelfRelease),
// where c2's unlock sent in the spike lands after c2 locked again. A spike
// whose messages have all landed does not.
func TestExplainDelayLanding(t *testing.T) {
	s := time.Second
	spike := faults.Fault{Kind: faults.Delay, Start: 2 * s, Duration: s, From: []string{"c2"}, To: []string{"n0"}, Delay: s}
	early := faults.Fault{Kind: faults.Delay, Start: 0, Duration: s / 2, From: []string{"c1"}, To: []string{"n0"}, Delay: s / 2}
	h := checker.History{Faults: []faults.Fault{early, spike}, Events: []checker.Event{
		{T: 0, Proc: "world", Kind: "fault", Fault: 1, Detail: early.String()},
		{T: int64(2 * s), Proc: "world", Kind: "fault", Fault: 2, Detail: spike.String()},
		{T: int64(3*s + s/2), Proc: "c2", Kind: "ok", Op: "acquire", Until: int64(33 * s)},
		{T: int64(4 * s), Proc: "c0", Kind: "ok", Op: "acquire", Until: int64(34 * s)},
	}}
	j := &Judged{History: h, Check: checker.Result{First: &checker.Violation{Kind: checker.KindLeaseOverlap, T: int64(4 * s), Since: int64(3*s + s/2),
		Clients: []string{"c2", "c0"}, Detail: "lease overlap"}}}
	want := "messages held up by " + spike.String() + " landing until 4s; c2 acquired at 3.5s (believing until 33s); c0 acquired at 4s (believing until 34s); then lease overlap"
	if got := Explain(j); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// A cluster failover's story names the promotion in the key's shard, with
// its slots, and no other shard's.
func TestExplainClusterPromotion(t *testing.T) {
	info, _ := catalogue.Get("cluster-set-nx-cad")
	for seed := uint64(1); seed <= 6; seed++ {
		cfg, err := scenarios.Build("failover-cluster", "cluster-set-nx-cad", seed, scenarios.Params{})
		if err != nil {
			t.Fatal(err)
		}
		j, err := runChecked(sim.TestBubble(t), cfg, "failover-cluster", info, checker.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Check.First == nil {
			continue
		}
		story := Explain(j)
		if !strings.Contains(story, "promoted at ") || !strings.Contains(story, "(cluster shard 0, slots 0-5460)") {
			t.Errorf("seed %d: story lacks the promotion in the key's shard 0:\n%s", seed, story)
		}
		if strings.Contains(story, "(cluster shard 1,") || strings.Contains(story, "(cluster shard 2,") {
			t.Errorf("seed %d: story tells another shard's promotion:\n%s", seed, story)
		}
		return
	}
	t.Fatal("no unsafe seed of 1..6 to tell")
}
