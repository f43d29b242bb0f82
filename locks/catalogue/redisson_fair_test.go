package catalogue_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/locks"
	locksimrun "github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

const (
	fairLockRE   = `eval <script 1453 bytes> 3 lock redisson_lock_queue:\{lock\} redisson_lock_timeout:\{lock\} 30000 ` + uuidRE + `:1 5000 [0-9]+`
	fairUnlockRE = `eval <script [0-9]+ bytes> 4 lock redisson_lock_queue:\{lock\} redisson_lock_timeout:\{lock\} redisson_lock__channel:\{lock\} 0 30000 ` + uuidRE + `:1 [0-9]+`
	fairFailedRE = `eval <script [0-9]+ bytes> 2 redisson_lock_queue:\{lock\} redisson_lock_timeout:\{lock\} ` + uuidRE + `:1 5000`
)

// queueNote records the fair lock's queue and timeout set as a note.
func queueNote(p *sim.Proc) {
	ctx := p.Context()
	q, _ := p.Nodes()[0].LRange(ctx, "redisson_lock_queue:{lock}", 0, -1).Result()
	z, _ := p.Nodes()[0].ZCard(ctx, "redisson_lock_timeout:{lock}").Result()
	p.Record(sim.Event{Kind: "note", Detail: fmt.Sprint(len(q)), Value: z})
}

// noHello drops go-redis's connection handshakes.
func noHello(cmds []sim.Event) []sim.Event {
	var out []sim.Event
	for _, c := range cmds {
		if !strings.HasPrefix(c.Cmd, "hello ") {
			out = append(out, c)
		}
	}
	return out
}

// redisson-fair's commands and order: c0 holds from 0 to 3 s; c1 asks at
// 1 s and c2 at 1.5 s: each joins the queue (its reply: the wait the
// script estimates) and polls every 100 ms. After c0's release c2's polls
// still find c1 at the head: c1 is granted first, then c2 after c1's
// release, in request order; the queue and the timeout set end empty. A
// waiter whose tryLock(5 s) runs out (c3: asks at 4.2 s, c2 holds until
// 10.1 s) leaves the queue at 9.2 s by the acquireFailed script.
func TestRedissonFairCommands(t *testing.T) {
	info := mustGet(t, "redisson-fair")
	if !info.Fair || !info.Reentrant || !info.Renews || info.Topology != locks.Single || info.TTL != 30*time.Second || info.Source == "" || info.Weakness == "" {
		t.Fatalf("catalogue entry: %+v", info)
	}
	cfg := world(5, 16*time.Second, 0, perClient(map[string]sim.Program{
		"c0": once(info, 3*time.Second),
		"c1": after(time.Second, once(info, time.Second)),
		"c2": after(1500*time.Millisecond, once(info, 6*time.Second)),
		"c3": after(4200*time.Millisecond, once(info, time.Second)),
	}, after(15*time.Second, queueNote)))
	cfg.HistoryCommands = true
	res := run(t, cfg)
	oks := events(res, "", "acquire", "ok")
	if len(oks) != 3 || oks[0].Proc != "c0" || oks[1].Proc != "c1" || oks[2].Proc != "c2" {
		t.Fatalf("grants %+v, want c0, c1, c2 in request order", oks)
	}
	if d := time.Duration(oks[1].T); d < 3*time.Second || d > 3200*time.Millisecond {
		t.Fatalf("c1 granted at %v, want within a poll (100 ms) of c0's release at 3 s", d)
	}
	c2 := noHello(commands(res, "c2"))
	if len(c2) < 10 {
		t.Fatalf("c2 polled %d times", len(c2))
	}
	matchCommands(t, c2[:1], []string{fairLockRE + ` -> :[0-9]+`})
	matchCommands(t, c2[len(c2)-2:], []string{fairLockRE + ` -> \$-1`, fairUnlockRE + ` -> :1`})
	c3 := noHello(commands(res, "c3"))
	matchCommands(t, c3[len(c3)-1:], []string{fairFailedRE + ` -> \$-1`})
	if f := events(res, "c3", "acquire", "fail"); len(f) != 1 || f[0].Detail != locks.ErrNotAcquired.Error() {
		t.Fatalf("c3's tryLock: %+v", f)
	}
	if n := events(res, "c4", "", "note"); len(n) != 1 || n[0].Detail != "0" || n[0].Value != 0 {
		t.Fatalf("queue and timeout set at the end: %+v", n)
	}
	t.Logf("c2 polled %d times; c3 %d", len(c2), len(c3))
}

// Fairness, measured in no-faults: the fair lock's grants overtake an
// earlier waiting request far less often than redisson-lock's (whose
// waiters race), and every client progresses after the heal (Fair: a
// starving client would fail liveness). They still overtake: each grant
// lowers every waiter's queue timeout by the wait time (5 s), and each
// waiter that gives up lowers those behind it too, so under this churn a
// waiter's timeout passes and the next script drops it from the queue as
// stale; it rejoins at the tail, behind later requests.
func TestRedissonFairOrder(t *testing.T) {
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		fair := judge(t, locksimrun.Spec{Scenario: "no-faults", Lock: "redisson-fair", Seed: seed})
		plain := judge(t, locksimrun.Spec{Scenario: "no-faults", Lock: "redisson-lock", Seed: seed})
		fl, pl := fair.Check.Liveness, plain.Check.Liveness
		if fair.Verdict() != checker.VerdictSafe || !fl.FairnessRequired || len(fl.Starved) != 0 {
			t.Fatalf("seed %d: redisson-fair %s (fairness required %v, starved %v): %v", seed, fair.Verdict(), fl.FairnessRequired, fl.Starved, fair.Check.Reasons)
		}
		fr, pr := float64(fl.Overtakes)/float64(fl.Grants), float64(pl.Overtakes)/float64(pl.Grants)
		if fl.Grants == 0 || pl.Grants == 0 || fr >= pr/2 {
			t.Fatalf("seed %d: redisson-fair %d of %d grants overtook, redisson-lock %d of %d", seed, fl.Overtakes, fl.Grants, pl.Overtakes, pl.Grants)
		}
		t.Logf("seed %d: redisson-fair %d of %d grants overtook an earlier waiting request (first: %v); redisson-lock %d of %d", seed, fl.Overtakes, fl.Grants, fl.FirstOvertake, pl.Overtakes, pl.Grants)
	}
}

// redisson-fair's documented weakness is redisson-lock's: a pause of the
// holder longer than the 30 s lease (right after the check, or just as its
// watchdog is about to renew) lets the key expire under it, and the next
// waiter in the queue takes it.
func TestRedissonFairPausedHolder(t *testing.T) {
	for _, sc := range []string{"pause-after-check", "watchdog-starved"} {
		j := judge(t, locksimrun.Spec{Scenario: sc, Lock: "redisson-fair", Seed: 1})
		if j.Verdict() != checker.VerdictUnsafe {
			t.Fatalf("%s: %s, want unsafe: %v", sc, j.Verdict(), j.Check.Reasons)
		}
		t.Logf("%s seed 1: unsafe (%s): %s", sc, j.Check.First.Kind, j.Check.First.Detail)
	}
}

// The fair lock is reentrant as RLock is (its script's HEXISTS branch):
// no-faults with the workload's reentrant section nests and stays safe,
// and the nested acquisitions are no grants for the overtaking figure.
func TestRedissonFairReentrant(t *testing.T) {
	info := mustGet(t, "redisson-fair")
	j := reentrantRun(t, info, 1)
	n := nestedAcquires(j.History)
	lv := j.Check.Liveness
	if j.Verdict() != checker.VerdictSafe || n == 0 || lv.Grants+n != len(okAcquires(j.History)) {
		t.Fatalf("%s with %d nested acquisitions, %d grants of %d acquire oks: %v", j.Verdict(), n, lv.Grants, len(okAcquires(j.History)), j.Check.Reasons)
	}
	t.Logf("safe, %d nested acquisitions, %d of %d grants overtook", n, lv.Overtakes, lv.Grants)
}

func okAcquires(h checker.History) []checker.Event {
	var out []checker.Event
	for _, e := range h.Events {
		if e.Op == event.OpAcquire && e.Kind == event.KindOK {
			out = append(out, e)
		}
	}
	return out
}
