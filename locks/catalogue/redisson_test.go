package catalogue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	locksimrun "github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

const (
	holderRE = `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:1`
	lockRE   = `eval <script 339 bytes> 1 lock `
	unlockRE = `eval <script 305 bytes> 2 lock redisson_lock__channel:\{lock\} 0 `
	renewRE  = `eval <script 120 bytes> 1 lock 30000 ` + holderRE
)

// redisson-lock's commands, one client: the lock script (nil: held), a
// renewal every 10 s by the watchdog while a 25 s section runs, and the
// unlock script (1: deleted and published). Reentrant: a second acquire
// by the same holder counts 2 in the hash, the first unlock leaves 1
// (reply 0) and the second deletes (reply 1).
func TestRedissonLockCommands(t *testing.T) {
	info := mustGet(t, "redisson-lock")
	if !info.Reentrant || info.Topology != locks.Single || info.TTL != 30*time.Second || info.Source == "" || info.Weakness == "" {
		t.Fatalf("catalogue entry: %+v", info)
	}

	t.Run("watchdog", func(t *testing.T) {
		cfg := world(1, 40*time.Second, 0, once(info, 25*time.Second))
		cfg.HistoryCommands = true
		res := run(t, cfg)
		if len(events(res, "c0", "release", "ok")) != 1 {
			t.Fatal("acquire/release did not succeed")
		}
		matchCommands(t, commands(res, "c0"), []string{lockRE + `30000 ` + holderRE + ` -> \$-1`,
			renewRE + ` -> :1`, renewRE + ` -> :1`, unlockRE + `30000 ` + holderRE + ` -> :1`})
	})

	t.Run("reentrant", func(t *testing.T) {
		prog := func(p *sim.Proc) {
			env := locks.Env{Primary: p.Nodes()[0], Clock: p, Rand: p.Rand(), Client: p.Name(), Key: "lock", Hooks: locks.Hooks{Go: p.Go}}
			lk, _ := info.New(env)
			ctx := p.Context()
			outer, err1 := lk.Acquire(ctx)
			inner, err2 := lk.Acquire(ctx)
			if err1 != nil || err2 != nil || outer.Value != inner.Value {
				panic("reentrant acquire failed")
			}
			count, _ := p.Nodes()[0].HGet(ctx, "lock", inner.Value).Result()
			err1 = lk.Release(ctx, inner)
			exists, _ := p.Nodes()[0].Exists(ctx, "lock").Result()
			err2 = lk.Release(ctx, outer)
			err3 := lk.Release(ctx, outer)
			p.Record(sim.Event{Kind: "note", Detail: strings.Join([]string{count, fmtErr(err1), fmtErr(err2), fmtErr(err3)}, " "), Value: exists})
		}
		cfg := world(1, 5*time.Second, 0, prog)
		cfg.HistoryCommands = true
		res := run(t, cfg)
		matchCommands(t, commands(res, "c0"), []string{lockRE + `30000 ` + holderRE + ` -> \$-1`, lockRE + `30000 ` + holderRE + ` -> \$-1`,
			`hget lock ` + holderRE + ` -> 2`, unlockRE + `30000 ` + holderRE + ` -> :0`, `exists lock -> :1`,
			unlockRE + `30000 ` + holderRE + ` -> :1`, unlockRE + `30000 ` + holderRE + ` -> \$-1`})
		notes := events(res, "c0", "", "note")
		if len(notes) != 1 || notes[0].Detail != "2 nil nil "+locks.ErrNotOwner.Error() || notes[0].Value != 1 {
			t.Fatalf("count, releases: %+v", notes)
		}
	})
}

func fmtErr(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// A waiter's tryLock(500 ms): a try (the PTTL of the holder's key), an
// immediate second try (where Redisson subscribes), then it waits out the
// rest of its 500 ms (no unlock message is simulated; the PTTL, ~29 s, is
// longer) and fails without a third try. With “The SETNX command”'s tryLock(500,
// 10000) no watchdog runs: the key expires 10 s after it was taken and the
// holder's release, at 15 s, finds it gone.
func TestRedissonLockWaiterAndLeaseTime(t *testing.T) {
	info := mustGet(t, "redisson-lock")
	t.Run("waiter", func(t *testing.T) {
		cfg := world(2, 10*time.Second, 0, perClient(map[string]sim.Program{"c0": once(info, 5*time.Second)},
			after(time.Second, once(info, time.Second))))
		cfg.HistoryCommands = true
		res := run(t, cfg)
		cmds := commands(res, "c1")
		matchCommands(t, cmds, []string{lockRE + `30000 ` + holderRE + ` -> :2[89][0-9]{3}`, lockRE + `30000 ` + holderRE + ` -> :2[89][0-9]{3}`})
		fail := events(res, "c1", "acquire", "fail")
		if len(fail) != 1 || fail[0].Detail != locks.ErrNotAcquired.Error() {
			t.Fatalf("c1's tryLock: %+v", fail)
		}
		if d := time.Duration(fail[0].T - cmds[0].T); d < 490*time.Millisecond || d > 510*time.Millisecond {
			t.Fatalf("c1 gave up %v after its first try, want its 500 ms wait", d)
		}
		if len(events(res, "c0", "release", "ok")) != 1 {
			t.Fatal("c0's release failed")
		}
	})
	t.Run("lease-time", func(t *testing.T) {
		leased := info
		leased.New = func(env locks.Env) (locks.Lock, error) {
			return catalogue.NewRedissonLock(env, 500*time.Millisecond, 10*time.Second), nil
		}
		cfg := world(2, 20*time.Second, 0, perClient(map[string]sim.Program{"c0": once(leased, 15*time.Second)},
			after(11*time.Second, once(leased, time.Second))))
		cfg.HistoryCommands = true
		res := run(t, cfg)
		matchCommands(t, commands(res, "c0"), []string{lockRE + `10000 ` + holderRE + ` -> \$-1`, unlockRE + `10000 ` + holderRE + ` -> \$-1`})
		if len(events(res, "c1", "acquire", "ok")) != 1 {
			t.Fatal("c1 did not take the expired lease")
		}
		if f := events(res, "c0", "release", "fail"); len(f) != 1 || f[0].Detail != locks.ErrNotOwner.Error() {
			t.Fatalf("c0's release: %+v", f)
		}
	})
}

// delInnerRelease is a broken reentrant lock: its inner release deletes the
// key (a plain DEL, as a non-reentrant lock's release would) while the
// outer acquisition still holds.
type delInnerRelease struct {
	*catalogue.RedissonLock
	depth int
}

func (d *delInnerRelease) Acquire(ctx context.Context) (locks.Lease, error) {
	l, err := d.RedissonLock.Acquire(ctx)
	if err == nil {
		d.depth++
	}
	return l, err
}

func (d *delInnerRelease) Release(ctx context.Context, l locks.Lease) error {
	d.depth--
	if d.depth > 0 {
		return d.Env.Primary.Del(ctx, d.Env.Key).Err()
	}
	return d.RedissonLock.Release(ctx, l)
}

// reentrantRun runs no-faults with the workload's reentrant section.
func reentrantRun(t *testing.T, info locks.Info, seed uint64) *locksimrun.Judged {
	t.Helper()
	s, err := scenarios.Get("no-faults")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := s.File.Parts(info, seed, scenarios.Params{})
	if err != nil {
		t.Fatal(err)
	}
	parts.Workload.Reentrant = true
	parts.Config.Program = scenarios.Program(parts.Lock, parts.Workload)
	j, err := locksimrun.NewJob("no-faults", parts.Lock, parts.Config, checker.Options{}).Run(sim.TestBubble(t))
	if err != nil || j.Err != nil {
		t.Fatalf("seed %d: %v %v", seed, err, j.Err)
	}
	return j
}

// nestedAcquires counts acquire oks of a client that already holds with
// the same holder value (the reentrant section's inner acquisitions).
func nestedAcquires(h checker.History) int {
	open := map[string]string{}
	depth := map[string]int{}
	n := 0
	for _, e := range h.Events {
		switch {
		case e.Op == event.OpAcquire && e.Kind == event.KindOK:
			if v, ok := open[e.Proc]; ok && v == e.Detail {
				n++
				depth[e.Proc]++
				continue
			}
			open[e.Proc] = e.Detail
		case e.Op == event.OpRelease && e.Kind == event.KindCall:
			if depth[e.Proc] > 0 {
				depth[e.Proc]--
				continue
			}
			delete(open, e.Proc)
		}
	}
	return n
}

// The workload's reentrant section on redisson-lock: every holder acquires
// again inside its section, works, releases the inner level and works on
// under the outer one. Redisson's count keeps the key through the inner
// release: no-faults stays safe. A lock whose inner release deletes the key
// lets another client in during the second half: the checker, which holds
// nested acquisitions as one, finds the overlap.
func TestRedissonLockReentrantWorkload(t *testing.T) {
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	info := mustGet(t, "redisson-lock")
	broken := info
	broken.New = func(env locks.Env) (locks.Lock, error) {
		return &delInnerRelease{RedissonLock: catalogue.NewRedissonLock(env, 500*time.Millisecond, 0)}, nil
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		j := reentrantRun(t, info, seed)
		n := nestedAcquires(j.History)
		if j.Verdict() != checker.VerdictSafe || n == 0 {
			t.Fatalf("seed %d: %s with %d nested acquisitions: %v", seed, j.Verdict(), n, j.Check.Reasons)
		}
		b := reentrantRun(t, broken, seed)
		if b.Verdict() != checker.VerdictUnsafe || b.Check.LeaseOverlaps == 0 {
			t.Fatalf("seed %d: the inner DEL gave %s with %d overlaps: %v", seed, b.Verdict(), b.Check.LeaseOverlaps, b.Check.Reasons)
		}
		t.Logf("seed %d: redisson-lock safe with %d nested acquisitions; inner DEL unsafe, %d lease overlaps, first %s", seed, n, b.Check.LeaseOverlaps, b.Check.First.Kind)
	}
}

// redisson-lock's documented weakness is the watchdog's: a pause of the
// holder longer than the 30 s lease (right after the check, or just as
// its watchdog is about to renew) lets the key expire under it.
func TestRedissonLockStarvedWatchdog(t *testing.T) {
	for _, sc := range []string{"pause-after-check", "watchdog-starved"} {
		j := judge(t, locksimrun.Spec{Scenario: sc, Lock: "redisson-lock", Seed: 1})
		if j.Verdict() != checker.VerdictUnsafe {
			t.Fatalf("%s: %s, want unsafe: %v", sc, j.Verdict(), j.Check.Reasons)
		}
		t.Logf("%s seed 1: unsafe (%s): %s", sc, j.Check.First.Kind, j.Check.First.Detail)
	}
}
