package catalogue_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	locksimrun "github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// redisson-multilock's commands, as RedissonRedLock.tryLock(500, 30000)
// issues them over three groups: on each group's primary (n0, n3, n6) the
// RLock script with a 1 s lease (2 × waitTime) and the client's own
// RedissonClient id, then PEXPIRE 30000 on each lock it took, and
// unlock's script on every group. The three ids differ (three clients).
func TestRedissonMultiLockCommands(t *testing.T) {
	info := mustGet(t, "redisson-multilock")
	if info.Source == "" || info.Weakness == "" || info.Topology != locks.Groups || info.TTL != 30*time.Second {
		t.Fatalf("catalogue entry: %+v", info)
	}
	cfg, err := scenarios.Build("no-faults", "redisson-multilock", 1, scenarios.Params{Clients: 1, Duration: 5 * time.Second, Liveness: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Topology.Groups != 3 || len(cfg.Nodes) != 9 {
		t.Fatalf("world: %d groups of %d nodes, want 3 of 9", cfg.Topology.Groups, len(cfg.Nodes))
	}
	cfg.HistoryCommands = true
	res := run(t, cfg)
	// The trace abbreviates a script to its length.
	lockRE := regexp.MustCompile(fmt.Sprintf(`^eval <script %d bytes> 1 lock:resource 1000 ([0-9a-f-]+:1)$`, len(catalogue.RedissonLockScript)))
	unlock := fmt.Sprintf("eval <script %d bytes> 2 lock:resource redisson_lock__channel:{lock:resource} 0 1000 ", len(catalogue.RedissonUnlockScript))
	var seq []string
	ids := map[string]string{}
	for _, ev := range res.History {
		if ev.Kind != event.KindCmd || ev.Peer != "c0" || ev.Cmd == "ping" || strings.HasPrefix(ev.Cmd, "hello") {
			continue
		}
		switch m := lockRE.FindStringSubmatch(ev.Cmd); {
		case m != nil:
			seq = append(seq, ev.Proc+" lock")
			if old, ok := ids[ev.Proc]; ok && old != m[1] {
				t.Fatalf("%s: holder id changed from %s to %s", ev.Proc, old, m[1])
			}
			ids[ev.Proc] = m[1]
		case ev.Cmd == "pexpire lock:resource 30000":
			seq = append(seq, ev.Proc+" pexpire")
		case strings.HasPrefix(ev.Cmd, unlock) && strings.TrimPrefix(ev.Cmd, unlock) == ids[ev.Proc]:
			seq = append(seq, ev.Proc+" unlock")
		}
	}
	want := []string{"n0 lock", "n3 lock", "n6 lock", "n0 pexpire", "n3 pexpire", "n6 pexpire", "n0 unlock", "n3 unlock", "n6 unlock"}
	if len(seq) < len(want) || !slices.Equal(seq[:len(want)], want) {
		t.Fatalf("c0's first round: %q, want %q", seq[:min(len(seq), 12)], want)
	}
	if len(ids) != 3 || ids["n0"] == ids["n3"] || ids["n3"] == ids["n6"] || ids["n0"] == ids["n6"] {
		t.Fatalf("holder ids per group: %v, want three different RedissonClient ids", ids)
	}
}

// redisson-multilock's documented weakness: a failover that loses the key
// of a bare majority. multilock-bare-majority takes g2 down while a client
// locks (it gets g0 and g1 only), fails g0 over before its replicas have
// the key, and brings g2 back: the other client takes g0 and g2. The same
// failovers with g2 up are harmless to a holder with all three keys: in
// both worlds, every overlap's first holder took exactly two (a bare
// majority also arises without downtime, when a round reaches a group
// before the last holder's release does: seed 4 with g2 up), and the world
// with g2's downtime breaks on more seeds.
func TestRedissonMultiLockBareMajority(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 3
	}
	// keysOfFirst is how many groups the overlap's first holder took.
	keysOfFirst := func(j *locksimrun.Judged) int {
		o := j.Check.FirstOverlap
		keys := 0
		for _, ev := range j.Result.History {
			if ev.Proc == o.A && ev.Kind == event.KindOK && ev.Op == event.OpAcquire && ev.T <= o.Start {
				keys = len(strings.Split(ev.Detail, ","))
			}
		}
		return keys
	}
	unsafe, unsafeUp := 0, 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		spec := locksimrun.Spec{Scenario: "multilock-bare-majority", Lock: "redisson-multilock", Seed: seed}
		job, err := spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		up := *job
		up.Config.Faults = slices.DeleteFunc(slices.Clone(job.Config.Faults), func(f faults.Fault) bool { return f.Kind == faults.Crash })
		if n := len(up.Config.Faults); n != 4 {
			t.Fatalf("seed %d: %d faults left, want the 4 failovers of g0", seed, n)
		}
		for _, w := range []struct {
			name  string
			job   *locksimrun.Job
			count *int
		}{{"g2 down", job, &unsafe}, {"g2 up", &up, &unsafeUp}} {
			j, err := w.job.Run(sim.TestBubble(t))
			if err != nil || j.Err != nil {
				t.Fatalf("seed %d, %s: %v %v", seed, w.name, err, j.Err)
			}
			if j.Result.Stats.Failovers != 4 {
				t.Errorf("seed %d, %s: %d failovers, want 4", seed, w.name, j.Result.Stats.Failovers)
			}
			switch j.Verdict() {
			case checker.VerdictSafe:
				continue
			case checker.VerdictUnsafe:
			default:
				t.Fatalf("seed %d, %s: %s: %v", seed, w.name, j.Verdict(), j.Check.Reasons)
			}
			*w.count++
			if j.Check.FirstOverlap == nil {
				t.Fatalf("seed %d, %s: unsafe without a lease overlap: %v", seed, w.name, j.Check.Reasons)
			}
			if k := keysOfFirst(j); k != 2 {
				t.Errorf("seed %d, %s: the overlap's first holder %s took %d groups, want a bare majority of 2", seed, w.name, j.Check.FirstOverlap.A, k)
			}
		}
	}
	if unsafe == 0 || unsafe <= unsafeUp {
		t.Fatalf("unsafe on %d of %d seeds with g2's downtime, %d with g2 up: want some, and more than with g2 up", unsafe, seeds, unsafeUp)
	}
	t.Logf("unsafe: %d of %d seeds with g2's downtime, %d with g2 up; every overlap's first holder had a bare majority", unsafe, seeds, unsafeUp)
}

// One silent group of three stops redisson-multilock altogether, although
// two groups answer: each try waits for its command's reply (a timeout)
// before tryLock checks its 500 ms wait. multilock-silent-group holds every
// client's packets to g0's primary for the safety phase: no acquisition
// succeeds until the heal, and the run is a liveness failure, never unsafe.
func TestRedissonMultiLockSilentGroup(t *testing.T) {
	j := judge(t, locksimrun.Spec{Scenario: "multilock-silent-group", Lock: "redisson-multilock", Seed: 1})
	if j.Verdict() != checker.VerdictLiveness {
		t.Fatalf("%s: %v, want liveness", j.Verdict(), j.Check.Reasons)
	}
	heal := int64(60 * time.Second)
	before, after := 0, 0
	for _, ev := range j.Result.History {
		if ev.Kind == event.KindOK && ev.Op == event.OpAcquire {
			if ev.T < heal {
				before++
			} else {
				after++
			}
		}
	}
	if before != 0 || after == 0 {
		t.Fatalf("acquisitions: %d before the heal, %d after; want none before, some after", before, after)
	}
	if j.Result.Stats.Failovers != 0 {
		t.Fatalf("%d failovers: Sentinel still reaches n0, nothing should fail over", j.Result.Stats.Failovers)
	}
}

// With the last group silent instead, the round reaches its majority on
// g2's timeout and breaks out before checking its wait; its closing
// PEXPIRE 30 s lands after the 1 s sub-leases ran out, on keys other
// clients took meanwhile: an ownership violation (a key-touch of another
// client's key by the PEXPIRE), and the run is unsafe.
func TestRedissonMultiLockSilentLastGroup(t *testing.T) {
	j := judge(t, locksimrun.Spec{Scenario: "multilock-silent-last-group", Lock: "redisson-multilock", Seed: 1})
	if j.Verdict() != checker.VerdictUnsafe || j.Check.First.Kind != checker.KindOwnership {
		t.Fatalf("%s (%s): %v, want unsafe by ownership", j.Verdict(), j.Check.First.Kind, j.Check.Reasons)
	}
	touched := 0
	for _, ev := range j.Result.History {
		if ev.Kind == event.KindKeyTouch && ev.Result == event.ResultExpire && ev.Detail != ev.Peer {
			touched++
		}
	}
	if touched == 0 {
		t.Fatal("unsafe, but no PEXPIRE touched another client's key")
	}
}
