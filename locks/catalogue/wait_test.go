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
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	locksimrun "github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

// cmdsOf lists client c's commands on the nodes, in order, without the
// connection's own (HELLO, PING).
func cmdsOf(t *testing.T, scenario, lock, c string, seed uint64, p scenarios.Params) []string {
	t.Helper()
	cfg, err := scenarios.Build(scenario, lock, seed, p)
	if err != nil {
		t.Fatal(err)
	}
	cfg.HistoryCommands = true
	res := run(t, cfg)
	var out []string
	for _, ev := range res.History {
		if ev.Kind != event.KindCmd || ev.Peer != c || ev.Cmd == "ping" || strings.HasPrefix(ev.Cmd, "hello") {
			continue
		}
		if (ev.Cmd == "WAIT(done)" || ev.Cmd == "WAITAOF(done)") && len(out) > 0 {
			out[len(out)-1] += ev.Reply // a WAIT or WAITAOF that blocked: its reply
			continue
		}
		out = append(out, ev.Cmd+" -> "+ev.Reply)
	}
	return out
}

// set-nx-wait's commands, in a world whose replicas acknowledge: SET NX
// PX, then WAIT 1 1000 answered 1, later the compare-and-delete.
func TestSetNXWaitCommands(t *testing.T) {
	info := mustGet(t, "set-nx-wait")
	if info.Source == "" || info.Weakness == "" || info.Topology != locks.Replicated {
		t.Fatalf("catalogue entry: %+v", info)
	}
	cmds := cmdsOf(t, "no-faults", "set-nx-wait", "c0", 1, short)
	if len(cmds) < 3 {
		t.Fatalf("commands: %q", cmds)
	}
	if !regexp.MustCompile(`^set lock:resource [0-9a-f]{20} ex 10 nx -> \+OK$`).MatchString(cmds[0]) {
		t.Fatalf("first command %q, want SET NX with the 10 s lease", cmds[0])
	}
	if cmds[1] != "wait 1 1000 -> :1" {
		t.Fatalf("second command %q, want WAIT 1 1000 answered 1", cmds[1])
	}
	rest := slices.DeleteFunc(slices.Clone(cmds[2:]), func(c string) bool { return strings.HasPrefix(c, "STORE.") })
	if len(rest) == 0 || (!strings.HasPrefix(rest[0], "evalsha ") && !strings.HasPrefix(rest[0], "eval ")) {
		t.Fatalf("after the section %q, want the compare-and-delete script", rest)
	}
}

// With no replica able to acknowledge within the timeout (both cut off
// from the primary), set-nx-wait gives the key back and its try fails:
// SET NX, WAIT 1 1000 answered 0, the compare-and-delete, and Acquire
// returns ErrNotAcquired.
func TestSetNXWaitShortGivesBack(t *testing.T) {
	cmds := cmdsOf(t, "wait-minority", "set-nx-wait", "c0", 1, scenarios.Params{})
	for i := 0; i+2 < len(cmds); i++ {
		if strings.HasPrefix(cmds[i], "set lock:resource ") && cmds[i+1] == "wait 1 1000 -> :0" {
			if !strings.HasPrefix(cmds[i+2], "evalsha ") && !strings.HasPrefix(cmds[i+2], "eval ") {
				t.Fatalf("after a WAIT answered 0: %q, want the compare-and-delete", cmds[i+2])
			}
			return
		}
	}
	t.Fatalf("no SET, WAIT answered 0 by the isolated primary: %q", cmds)
}

// redisson-wait's commands, as Redisson 4.7.0's syncedEval sends them for
// one client: the WAIT/WAITAOF probe, INFO ALL for connected_slaves, then
// the lock script followed by WAIT 2 1000 (two replicas connected).
func TestRedissonWaitCommands(t *testing.T) {
	info := mustGet(t, "redisson-wait")
	if info.Source == "" || info.Weakness == "" || info.Topology != locks.Replicated || info.TTL != 30*time.Second || !info.Renews {
		t.Fatalf("catalogue entry: %+v", info)
	}
	cmds := cmdsOf(t, "no-faults", "redisson-wait", "c0", 1, short)
	if len(cmds) < 5 {
		t.Fatalf("commands: %q", cmds)
	}
	lock := fmt.Sprintf("eval <script %d bytes> 1 lock:resource 30000 ", len(catalogue.Redisson47LockScript))
	want := []string{"wait 0 0 -> ", "waitaof 0 0 0", "info all -> ", lock, "WAIT"}
	for i, w := range want {
		if !strings.HasPrefix(cmds[i], w) && !strings.HasPrefix(cmds[i], strings.ToLower(w)) {
			t.Fatalf("command %d is %q, want %q…; all: %q", i, cmds[i], w, cmds[:5])
		}
	}
	if !strings.HasPrefix(cmds[4], "wait 2 1000") {
		t.Fatalf("WAIT %q, want WAIT 2 1000", cmds[4])
	}
}

// The lost acknowledgement: in wait-ack-lost the replica that
// acknowledged the lock key crashes with the primary and Sentinel promotes
// the lagging one, so both WAIT locks are unsafe at the pinned seed (the
// trace of set-nx-wait seed 1: c1's WAIT 1 answered 1 by n1 at 7.22 s, n0
// and n1 crash at 10 s, n2 promoted without the key, c0's SET NX on n2
// and its WAIT answered by n1 back at 12 s). In wait-ack-promoted, the
// same world without n1's crash, Sentinel promotes the acknowledging
// replica and both are safe at the same seeds: the harness can fail them
// and does not cry wolf.
func TestWaitLostAckUnsafePromotedSafe(t *testing.T) {
	seeds := []uint64{1, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, lock := range []string{"set-nx-wait", "redisson-wait"} {
		for _, seed := range seeds {
			j := judge(t, locksimrun.Spec{Scenario: "wait-ack-lost", Lock: lock, Seed: seed})
			if j.Verdict() != checker.VerdictUnsafe {
				t.Fatalf("wait-ack-lost %s seed %d: %s, want unsafe: %v", lock, seed, j.Verdict(), j.Check.Reasons)
			}
			if j := judge(t, locksimrun.Spec{Scenario: "wait-ack-promoted", Lock: lock, Seed: seed}); j.Verdict() != checker.VerdictSafe {
				t.Fatalf("wait-ack-promoted %s seed %d: %s, want safe: %v", lock, seed, j.Verdict(), j.Check.Reasons)
			}
		}
	}
}

// short is a one-client, 5 s world for the command sequences.
var short = scenarios.Params{Clients: 1, Duration: 5 * time.Second, Liveness: time.Second}

// A replica leaves (wait-replica-returns: n2 down from 30 s to 90 s):
// redisson-wait's WAIT 2 1000 answers 1, the count is read again from INFO
// (connected_slaves 1) and the next WAIT asks for 1 (Redisson 4.7.0's
// CommandAsyncService.java:1217-1220). Nothing is lost: safe.
func TestRedissonWaitCountFollowsReplicas(t *testing.T) {
	cmds := cmdsOf(t, "wait-replica-returns", "redisson-wait", "c0", 1, scenarios.Params{})
	short := slices.IndexFunc(cmds, func(c string) bool { return c == "wait 2 1000 -> :1" })
	if short < 0 || !slices.Contains(cmds[:short], "wait 2 1000 -> :2") {
		t.Fatalf("want WAIT 2 answered 2, then 1 once n2 is down: %q", cmds)
	}
	info := slices.IndexFunc(cmds[short:], func(c string) bool { return strings.HasPrefix(c, "info all") })
	lower := slices.IndexFunc(cmds[short:], func(c string) bool { return strings.HasPrefix(c, "wait 1 1000") })
	if info < 0 || lower < 0 || info > lower {
		t.Fatalf("after the short WAIT: INFO ALL then WAIT 1 wanted: %q", cmds[short:])
	}
	raised := slices.Contains(cmds[short+lower:], "wait 2 1000 -> :2")
	t.Logf("count raised again after n2 returned: %v", raised)
	if j := judge(t, locksimrun.Spec{Scenario: "wait-replica-returns", Lock: "redisson-wait", Seed: 1}); j.Verdict() != checker.VerdictSafe {
		t.Fatalf("%s: %v, want safe", j.Verdict(), j.Check.Reasons)
	}
}

// wait-minority: n0, cut off with c0, still counts the replicas Sentinel
// repointed (the partition hides their REPLICAOF), so redisson-wait keeps
// sending WAIT 2, which answers 0, and never holds on the minority side.
// (With INFO counting only the replicas that follow n0 now, Redisson read
// connected_slaves 0, sent no WAIT and locked on n0: unsafe on 10 of 10
// seeds.)
func TestRedissonWaitMinorityPrimary(t *testing.T) {
	if j := judge(t, locksimrun.Spec{Scenario: "wait-minority", Lock: "redisson-wait", Seed: 1}); j.Verdict() != checker.VerdictSafe {
		t.Fatalf("%s: %v, want safe", j.Verdict(), j.Check.Reasons)
	}
}

// wait-minority × set-nx-wait seed 4: at the heal Sentinel demotes n0
// while c0's WAIT is pending there. n0 answers it -UNBLOCKED before its
// clients are dropped, as Redis does on REPLICAOF, and go-redis does not
// retry that on the new primary: safe. (When the simulator only dropped
// the connection, go-redis retried the WAIT on n1, whose replica answered
// 1 for writes that were not c0's, and c0 held a key it had deleted:
// unsafe on 3 of 10 seeds, this one among them.)
func TestWaitUnblockedOnDemotion(t *testing.T) {
	j := judge(t, locksimrun.Spec{Scenario: "wait-minority", Lock: "set-nx-wait", Seed: 4})
	if j.Verdict() != checker.VerdictSafe {
		t.Fatalf("%s: %v, want safe", j.Verdict(), j.Check.Reasons)
	}
	cmds := cmdsOf(t, "wait-minority", "set-nx-wait", "c0", 4, scenarios.Params{})
	if !slices.ContainsFunc(cmds, func(c string) bool { return strings.HasPrefix(c, "WAIT(unblocked) -> -UNBLOCKED") }) {
		t.Fatal("no WAIT was answered -UNBLOCKED: the demotion did not meet a pending WAIT")
	}
}
