package catalogue_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	locksimrun "github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

// redisson-waitaof's commands (Redisson 3.51.0's syncedEval): with
// appendonly yes (waitaof-power-loss's everysec) INFO ALL says
// aof_enabled:1 and the lock script is followed by WAITAOF 1 2 1000,
// answered at the next fsync tick; without an AOF (no-faults) by WAIT 2
// 1000, as redisson-wait.
func TestRedissonWaitAOFCommands(t *testing.T) {
	info := mustGet(t, "redisson-waitaof")
	if info.Source == "" || info.Weakness == "" || info.Topology != locks.Replicated || info.TTL != 30*time.Second || !info.Renews {
		t.Fatalf("catalogue entry: %+v", info)
	}
	lock := fmt.Sprintf("eval <script %d bytes> 1 lock:resource 30000 ", len(catalogue.Redisson47LockScript))
	for scenario, want := range map[string]string{"waitaof-power-loss": "waitAOF 1 2 1000 -> *2", "no-faults": "wait 2 1000 -> :2"} {
		p := short
		if scenario == "waitaof-power-loss" {
			p = scenarios.Params{Clients: 1, Liveness: time.Second} // its faults need its 60 s
		}
		cmds := cmdsOf(t, scenario, "redisson-waitaof", "c0", 1, p)
		i := 0
		for i < len(cmds) && !strings.HasPrefix(cmds[i], lock) {
			i++
		}
		if i+1 >= len(cmds) || cmds[i+1] != want {
			t.Fatalf("%s: after the lock script want %q; commands: %q", scenario, want, cmds)
		}
	}
}

// The verdicts the scenarios expect, at their pinned seeds: under
// appendfsync no every WAITAOF answers 0 replicas and redisson-waitaof
// never holds (liveness, redisson #6920) while redisson-wait's WAIT works;
// a power loss under everysec loses the lock redisson-wait's WAIT
// acknowledged in memory, not the one WAITAOF saw fsynced.
func TestRedissonWaitAOFVerdicts(t *testing.T) {
	for _, c := range []struct {
		scenario, lock string
		seed           uint64
		want           checker.Verdict
	}{
		{"waitaof-fsync-no", "redisson-waitaof", 1, checker.VerdictLiveness},
		{"waitaof-fsync-no", "redisson-wait", 1, checker.VerdictSafe},
		{"waitaof-power-loss", "redisson-wait", 4, checker.VerdictUnsafe},
		{"waitaof-power-loss", "redisson-waitaof", 4, checker.VerdictSafe},
	} {
		if testing.Short() && c.scenario == "waitaof-fsync-no" {
			continue // 90 s of virtual time with a 1 s WAITAOF every try
		}
		j := judge(t, locksimrun.Spec{Scenario: c.scenario, Lock: c.lock, Seed: c.seed})
		if j.Verdict() != c.want {
			t.Errorf("%s %s seed %d: %s, want %s: %v", c.scenario, c.lock, c.seed, j.Verdict(), c.want, j.Check.Reasons)
		}
	}
}
