package realredis

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/realarm/realcoord"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
)

// requireCoord skips a test that needs kind's servers when they are
// absent, except in CI (LOCKSIM_CI=1), where their absence fails.
func requireCoord(t *testing.T, kind realcoord.Kind) {
	t.Helper()
	requireRedis(t)
	if err := realcoord.Check(kind); err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatalf("consensus rows: %v", err)
		}
		t.Skipf("consensus rows skipped: %v", err)
	}
}

// coordProcs lists live processes whose command line names one of addrs
// (etcd's --listen-client-urls; a ZooKeeper member's zoo.cfg path is in
// its dir, so for ZooKeeper pass the dir).
func coordProcs(t *testing.T, needles []string) []string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-af", "etcd|QuorumPeerMain").Output()
	var mine []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		for _, n := range needles {
			if n != "" && strings.Contains(l, n) {
				mine = append(mine, l)
			}
		}
	}
	return mine
}

func TestEtcdDesignsAreRealOnly(t *testing.T) {
	if slices.Contains(catalogue.IDs(), "etcd-mutex") || !slices.Contains(catalogue.RealOnlyIDs(), "etcd-mutex") {
		t.Errorf("IDs %v / RealOnlyIDs %v: etcd-mutex must be real-only", catalogue.IDs(), catalogue.RealOnlyIDs())
	}
	j, err := run.Spec{Scenario: "pause-after-check", Lock: "etcd-mutex", Seed: 1}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(nil); err == nil || !strings.Contains(err.Error(), "real arm only") {
		t.Errorf("the simulator ran etcd-mutex: %v", err)
	}
	_, err = Build(run.Spec{Scenario: "pause-after-check", Lock: "etcd-mutex", Seed: 1}, 1500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "whole seconds") {
		t.Errorf("--ttl 1.5s on etcd: %v, want a refusal naming whole seconds", err)
	}
	jj, err := Build(run.Spec{Scenario: "member-crashes", Lock: "zk-lock", Seed: 1}, 0)
	if err != nil {
		t.Fatalf("member-crashes on real ZooKeeper: %v", err)
	}
	if jj.TTL != ConsensusTTL {
		t.Errorf("zk-lock's real TTL %v, want ConsensusTTL %v", jj.TTL, ConsensusTTL)
	}
}

// TestConsensusPauseAfterCheck: the fenced designs are safe on the real
// services with stale writes refused (the pause bit), and no member
// process or temp dir is left after the run or after an interrupt.
func TestConsensusPauseAfterCheck(t *testing.T) {
	for _, tc := range []struct {
		kind realcoord.Kind
		lock string
	}{{realcoord.Etcd, "etcd-fencing"}, {realcoord.ZooKeeper, "zk-fencing"}} {
		t.Run(tc.lock, func(t *testing.T) {
			requireCoord(t, tc.kind)
			tmp := t.TempDir()
			// A real run's seed fixes the fault schedule, not the
			// interleaving: the pause lands only when c0 next wins the
			// lock, so seeds run until one bites (at most 3); each
			// must be safe.
			var j *Job
			var dirs []string
			defer func() { setupHook = nil }()
			fenced := 0
			for seed := uint64(1); seed <= 3 && fenced == 0; seed++ {
				var err error
				j, err = Build(run.Spec{Scenario: "pause-after-check", Lock: tc.lock, Seed: seed}, 0)
				if err != nil {
					t.Fatal(err)
				}
				dirs = nil
				setupHook = func(w *world) error {
					for _, m := range w.coord.ens.Members {
						dirs = append(dirs, m.Dir)
					}
					if got := coordProcs(t, dirs); len(got) != realcoord.Members {
						t.Errorf("while running: %d member processes, want %d (%v)", len(got), realcoord.Members, got)
					}
					return nil
				}
				jd, err := j.RunAndJudge(context.Background(), tmp)
				if err != nil {
					t.Fatal(err)
				}
				r := jd.Report(j.Repro())
				if jd.Verdict() != checker.VerdictSafe {
					t.Errorf("%s seed %d: verdict %s, want safe (%v)", tc.lock, seed, jd.Verdict(), jd.Check.Reasons)
				}
				if fenced = r.FencedRejections; fenced == 0 {
					t.Logf("%s seed %d: no stale write refused: the pause did not bite this time", tc.lock, seed)
				}
				if got := coordProcs(t, dirs); len(got) > 0 {
					t.Errorf("after the run: %v", got)
				}
				empty(t, tmp)
			}
			if fenced == 0 {
				t.Errorf("%s: no stale write refused in 3 real runs: the pauses did not bite", tc.lock)
			}

			ctx, cancel := context.WithCancel(context.Background())
			dirs = nil
			setupHook = func(w *world) error {
				for _, m := range w.coord.ens.Members {
					dirs = append(dirs, m.Dir)
				}
				time.AfterFunc(700*time.Millisecond, cancel)
				return nil
			}
			if _, err := j.RunAndJudge(ctx, tmp); !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted run: %v, want context.Canceled", err)
			}
			if got := coordProcs(t, dirs); len(got) > 0 {
				t.Errorf("after an interrupted run: %v", got)
			}
			empty(t, tmp)
		})
	}
}
