package catalogue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks"
	locksimrun "github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// spin-retry's commands: one SET NX EX 10 and a compare-and-delete when
// the lock is free; when it is held, 22 SETs 50 ms apart (the first try and
// retryTimes 20, plus the one whose "lockRetryTime++ > retryTimes" throws),
// then the aspect's finally sends a compare-and-delete that deletes nothing
// and Acquire fails; the holder's release still finds its key.
func TestSpinRetryCommands(t *testing.T) {
	const v, sha = `[0-9a-f]{20}`, `[0-9a-f]{40}`
	info := mustGet(t, "spin-retry")
	if info.Source == "" || info.Weakness == "" || info.Topology != locks.Single || info.TTL != 10*time.Second {
		t.Fatalf("catalogue entry: %+v", info)
	}

	t.Run("free", func(t *testing.T) {
		cfg := world(1, 5*time.Second, 0, once(info, time.Second))
		cfg.HistoryCommands = true
		res := run(t, cfg)
		if len(events(res, "c0", "release", "ok")) != 1 {
			t.Fatal("acquire/release did not succeed")
		}
		matchCommands(t, commands(res, "c0"), []string{`set lock ` + v + ` ex 10 nx -> \+OK`,
			`evalsha ` + sha + ` 1 lock ` + v + ` -> -NOSCRIPT.*`, `eval <script 97 bytes> 1 lock ` + v + ` -> :1`})
	})

	t.Run("held", func(t *testing.T) {
		cfg := world(2, 10*time.Second, 0, perClient(map[string]sim.Program{"c0": once(info, 5*time.Second)},
			after(time.Second, once(info, time.Second))))
		cfg.HistoryCommands = true
		res := run(t, cfg)
		var sets []sim.Event
		var cads []sim.Event
		for _, c := range commands(res, "c1") {
			switch {
			case strings.HasPrefix(c.Cmd, "set lock "):
				sets = append(sets, c)
			case strings.HasPrefix(c.Cmd, "eval"):
				cads = append(cads, c)
			}
		}
		if len(sets) != 22 {
			t.Fatalf("c1 sent %d SETs, want 22", len(sets))
		}
		for _, s := range sets {
			if s.Reply == "+OK" {
				t.Fatalf("c1's SET at t=%v took the held lock", sec(s.T))
			}
		}
		span := time.Duration(sets[21].T - sets[0].T)
		if span < 21*50*time.Millisecond || span > 21*60*time.Millisecond {
			t.Fatalf("c1's 22 SETs span %v, want 21 sleeps of 50 ms plus round trips", span)
		}
		if len(cads) == 0 || !strings.HasSuffix(cads[len(cads)-1].Reply, ":0") {
			t.Fatalf("c1's give-up compare-and-delete: %+v", cads)
		}
		if f := events(res, "c1", "acquire", "fail"); len(f) != 1 || f[0].Detail != locks.ErrNotAcquired.Error() {
			t.Fatalf("c1's acquire: %+v", f)
		}
		if len(events(res, "c0", "release", "ok")) != 1 {
			t.Fatal("c0's release did not find its key: the give-up release deleted it")
		}
		t.Logf("c1 spun %d SETs over %v, gave up, and its compare-and-delete deleted nothing", len(sets), span)
	})
}

// judge runs spec and returns its judged run.
func judge(t *testing.T, spec locksimrun.Spec) *locksimrun.Judged {
	t.Helper()
	job, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Run(sim.TestBubble(t))
	if err != nil {
		t.Fatal(err)
	}
	if j.Err != nil {
		t.Fatalf("%s: run incomplete: %v", spec.Repro(), j.Err)
	}
	return j
}

// spin-retry's documented weakness is set-nx-cad's: a holder paused right
// after its SET succeeded, for 1.5 × the 10 s TTL, resumes and writes on a
// lease another client now holds. pause-after-check is unsafe with it on
// every seed tried, and no-faults is safe.
func TestSpinRetryPauseAfterCheck(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		j := judge(t, locksimrun.Spec{Scenario: "pause-after-check", Lock: "spin-retry", Seed: seed})
		if j.Verdict() != checker.VerdictUnsafe {
			t.Fatalf("seed %d: %s, want unsafe: %v", seed, j.Verdict(), j.Check.Reasons)
		}
		t.Logf("seed %d: unsafe (%s)", seed, j.Check.First.Kind)
		if j := judge(t, locksimrun.Spec{Scenario: "no-faults", Lock: "spin-retry", Seed: seed}); j.Verdict() != checker.VerdictSafe {
			t.Fatalf("no-faults seed %d: %s: %v", seed, j.Verdict(), j.Check.Reasons)
		}
	}
}
