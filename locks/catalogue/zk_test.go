package catalogue_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/locks"
	locksimrun "github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// zk-lock's and zk-fencing's commands, as the recipe issues them: a
// session (then heartbeats), an ephemeral sequential create tagged with
// the attempt, the children list (lowest holds), EXISTS polls of the
// predecessor while waiting, and a delete of the client's own node. With
// fencing, each acquisition's token is its node's creation revision: the
// tokens grow strictly in the order the nodes were created.
func TestZKLockCommands(t *testing.T) {
	for _, id := range []string{"zk-lock", "zk-fencing"} {
		t.Run(id, func(t *testing.T) {
			info := mustGet(t, id)
			if info.Source == "" || info.Weakness == "" || info.Topology != locks.Consensus || info.TTL != 3*time.Second {
				t.Fatalf("catalogue entry: %+v", info)
			}
			cfg, err := scenarios.Build("no-faults", id, 1, scenarios.Params{Clients: 3, Duration: 10 * time.Second, Liveness: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			cfg.HistoryCommands = true
			res := run(t, cfg)
			// c0's commands on the members, without the handshake and the
			// deferred replies' (done) lines.
			var cmds []string
			for _, ev := range res.History {
				if ev.Kind == event.KindCmd && ev.Peer == "c0" && strings.HasPrefix(ev.Proc, "zk") && strings.HasPrefix(ev.Cmd, "ZK.") && !strings.Contains(ev.Cmd, "(done)") {
					cmds = append(cmds, ev.Cmd)
				}
			}
			if len(cmds) < 5 {
				t.Fatalf("c0 sent %d commands: %q", len(cmds), cmds)
			}
			// Retries on NOTLEADER repeat a command: compare distinct steps.
			steps := slices.Compact(slices.Clone(cmds))
			want := []string{`^ZK\.SESSION 3000$`, `^ZK\.CREATE /locks/lock:resource \d+ c0-1$`, `^ZK\.CHILDREN /locks/lock:resource$`}
			for i, re := range want {
				if !regexp.MustCompile(re).MatchString(steps[i]) {
					t.Fatalf("c0's step %d is %q, want %s (all: %q)", i, steps[i], re, steps[:min(len(steps), 8)])
				}
			}
			count := func(prefix string) int {
				n := 0
				for _, c := range cmds {
					if strings.HasPrefix(c, prefix) {
						n++
					}
				}
				return n
			}
			for _, p := range []string{"ZK.HEARTBEAT ", "ZK.DELETE /locks/lock:resource/lock-", "ZK.EXISTS /locks/lock:resource/lock-"} {
				if count(p) == 0 {
					t.Errorf("c0 never sent %s", p)
				}
			}
			acq := events(res, "", "acquire", "ok")
			if len(acq) < 10 {
				t.Fatalf("%d acquisitions", len(acq))
			}
			slices.SortFunc(acq, func(a, b sim.Event) int { return int(a.T - b.T) })
			for i, ev := range acq {
				switch {
				case id == "zk-lock" && ev.Token != 0:
					t.Fatalf("zk-lock acquisition with token %d", ev.Token)
				case id == "zk-fencing" && (ev.Token <= 0 || i > 0 && ev.Token <= acq[i-1].Token):
					t.Fatalf("acquisition %d (%s at %v) has token %d after %d", i, ev.Proc, sec(ev.T), ev.Token, acq[max(i-1, 0)].Token)
				}
			}
			if len(overlaps(res)) != 0 {
				t.Fatalf("overlaps without faults: %+v", overlaps(res))
			}
		})
	}
}

// TestZKPauseAfterCheck: the documented weakness. c0 pauses right after
// it acquired, for 4.5 s, longer than its 3 s session: the leader expires
// the session (its node goes), another client acquires while c0 still
// believes it holds, and c0's late write reaches the storage. zk-lock is
// unsafe; zk-fencing's storage refuses c0's stale token and stays right.
func TestZKPauseAfterCheck(t *testing.T) {
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		j := judge(t, locksimrun.Spec{Scenario: "pause-after-check", Lock: "zk-lock", Seed: seed})
		if j.Verdict() != checker.VerdictUnsafe {
			t.Fatalf("zk-lock seed %d: %s, want unsafe: %v", seed, j.Verdict(), j.Check.Reasons)
		}
		expired := 0
		for _, ev := range j.Result.History {
			if ev.Kind == event.KindZKExpire {
				expired++
			}
		}
		if expired == 0 {
			t.Fatalf("zk-lock seed %d: unsafe, but no session expired", seed)
		}
		f := judge(t, locksimrun.Spec{Scenario: "pause-after-check", Lock: "zk-fencing", Seed: seed})
		if f.Verdict() != checker.VerdictSafe {
			t.Fatalf("zk-fencing seed %d: %s, want safe: %v", seed, f.Verdict(), f.Check.Reasons)
		}
		fenced := 0
		for _, ev := range f.Result.History {
			if ev.Proc == "store" && ev.Result == event.ResultFenced {
				fenced++
			}
		}
		if fenced == 0 {
			t.Fatalf("zk-fencing seed %d: safe, but the storage fenced nothing (the pause did not bite)", seed)
		}
		t.Logf("seed %d: zk-lock unsafe (%s, %d session expiries); zk-fencing safe, %d operations fenced", seed, j.Check.First.Kind, expired, fenced)
	}
}

// token-regression's consensus row: the same six failures as the Redis
// rows' failovers, as crashes of the raft members in turn. Some crash the
// leader (a new one is elected); the tokens (creation revisions) still
// grow strictly in grant order, and the run is safe, where the
// Redis-minted fencing row repeats tokens (TestBuiltinScenarios).
func TestZKFencingTokenRegression(t *testing.T) {
	seeds := 2
	if testing.Short() {
		seeds = 1
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		j := judge(t, locksimrun.Spec{Scenario: "token-regression", Lock: "zk-fencing", Seed: seed})
		if j.Verdict() != checker.VerdictSafe {
			t.Fatalf("seed %d: %s, want safe: %v", seed, j.Verdict(), j.Check.Reasons)
		}
		leader, leaderCrashes, crashes := "", 0, 0
		var tokens []int64
		for _, ev := range j.Result.History {
			switch {
			case ev.Kind == event.KindZKLeader:
				leader = ev.Proc
			case ev.Kind == event.KindCrash && strings.HasPrefix(ev.Proc, "zk"):
				crashes++
				if ev.Proc == leader {
					leaderCrashes++
				}
			case ev.Kind == event.KindOK && ev.Op == event.OpAcquire:
				tokens = append(tokens, ev.Token)
			}
		}
		if crashes != 6 || leaderCrashes == 0 {
			t.Fatalf("seed %d: %d member crashes, %d of the leader; want 6, some of the leader", seed, crashes, leaderCrashes)
		}
		for i := 1; i < len(tokens); i++ {
			if tokens[i] <= tokens[i-1] {
				t.Fatalf("seed %d: grant %d has token %d after %d", seed, i, tokens[i], tokens[i-1])
			}
		}
		if len(tokens) < 10 {
			t.Fatalf("seed %d: %d grants", seed, len(tokens))
		}
		t.Logf("seed %d: safe; %d grants with increasing tokens through %d member crashes (%d of the leader)", seed, len(tokens), crashes, leaderCrashes)
	}
}
