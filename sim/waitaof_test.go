package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
)

// WAITAOF's answer and its timing under each persistence mode, in a
// primary n0 with replicas n1 and n2 of the same mode. The SET is at
// 1.3 s, so an everysec node's next fsync tick is at 2 s (0.7 s later);
// WAITAOF's timeout is 1.5 s.
func TestWaitAOFPerFsyncMode(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	for _, tc := range []struct {
		mode          Persistence
		local, reps   int
		reply, detail string        // reply "l,r", or the error's text
		rttMin        time.Duration // the reply comes no sooner than this
		rttMax        time.Duration // and no later
	}{
		// always: fsynced before the reply; the replicas' FACKs come back
		// with their acks, a round trip.
		{mode: PersistAlways, local: 1, reps: 2, reply: "1,2", rttMax: 5 * time.Millisecond},
		// everysec: at the next tick, 2 s, on every node (the call starts
		// at 1.3004 s, after the SET's round trip).
		{mode: PersistEverysec, local: 1, reps: 2, reply: "1,2", rttMin: 699 * time.Millisecond, rttMax: 705 * time.Millisecond},
		// no: nobody ever fsyncs; the answer is the timeout's.
		{mode: PersistNo, local: 1, reps: 2, reply: "0,0", rttMin: timeout, rttMax: timeout + 5*time.Millisecond},
		{mode: PersistNo, local: 0, reps: 1, reply: "0,0", rttMin: timeout, rttMax: timeout + 5*time.Millisecond},
		// none: numlocal 1 is an error; replicas without an AOF never count.
		{mode: PersistNone, local: 1, reps: 0, detail: "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."},
		{mode: PersistNone, local: 0, reps: 1, reply: "0,0", rttMin: timeout, rttMax: timeout + 5*time.Millisecond},
		// nothing asked: at once, with what is fsynced already (always: all).
		{mode: PersistAlways, local: 0, reps: 0, reply: "1,2", rttMax: time.Millisecond},
		{mode: PersistEverysec, local: 0, reps: 0, reply: "0,0", rttMax: time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%s/%d-%d", tc.mode, tc.local, tc.reps), func(t *testing.T) {
			cfg := biteConfig(3, 1, 4*time.Second)
			cfg.Topology = Topology{Replicated: true, DownAfter: 10 * time.Second}
			for i := range cfg.Nodes {
				cfg.Nodes[i].Persistence = tc.mode
			}
			cfg.Program = func(p *Proc) {
				sleepUntil(p, 1300*time.Millisecond)
				do(p, "set", func() (string, error) { return p.Primary().Set(p.Context(), "k", "v", 0).Result() })
				do(p, "waitaof", func() (string, error) {
					v, err := p.Primary().WaitAOF(p.Context(), tc.local, tc.reps, timeout).Result()
					return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(v)), ","), "[]"), err
				})
			}
			w := one(t, opsOf(t, runBite(t, cfg), "c0"), "waitaof")
			if tc.detail != "" {
				if w.Result != resErr || w.Detail != tc.detail {
					t.Fatalf("want the error %q, got %v", tc.detail, w)
				}
				return
			}
			if w.Result != resOK || w.Reply != tc.reply || w.rtt() < tc.rttMin || w.rtt() > tc.rttMax {
				t.Fatalf("want [%s] after %v..%v, got %v after %v", tc.reply, tc.rttMin, tc.rttMax, w, w.rtt())
			}
		})
	}
}

// WAITAOF is refused on a replica and with bad arguments, with Redis's
// errors.
func TestWaitAOFErrors(t *testing.T) {
	cfg := biteConfig(2, 1, 2*time.Second)
	cfg.Topology = Topology{Replicated: true, DownAfter: 10 * time.Second}
	for i := range cfg.Nodes {
		cfg.Nodes[i].Persistence = PersistAlways
	}
	cases := [][]any{{"waitaof", 0, 0, 0}, {"waitaof", 2, 0, 0}, {"waitaof", 0, -1, 0}, {"waitaof", 0, 0, -1}, {"waitaof", "x", 0, 0}}
	cfg.Program = func(p *Proc) {
		do(p, "replica", func() (string, error) { return "", p.Nodes()[1].Do(p.Context(), cases[0]...).Err() })
		for i, c := range cases[1:] {
			do(p, fmt.Sprint("bad", i), func() (string, error) { return "", p.Primary().Do(p.Context(), c...).Err() })
		}
	}
	ops := opsOf(t, runBite(t, cfg), "c0")
	for op, want := range map[string]string{
		"replica": "ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.",
		"bad0":    "ERR value is out of range, value must between 0 and 1",
		"bad1":    "ERR value is out of range, must be positive",
		"bad2":    "ERR timeout is negative",
		"bad3":    "ERR value is not an integer or out of range",
	} {
		if got := one(t, ops, op); got.Result != resErr || got.Detail != want {
			t.Errorf("%s: want %q, got %v", op, want, got)
		}
	}
}

// A replica repointed to a new primary whose offsets are lower than the
// old one's must not report its old stream's fsynced offset (FACK) to it:
// WAITAOF counts it only after its first fsync tick under the new primary
// (Redis restarts a replica's AOF after a full sync and reports FACK 0
// until the rewrite is done). Everysec everywhere; n1 is cut off from n0
// and lags, n2 takes n0's three writes and fsyncs them at its 1 s tick.
// n0 crashes at 400 ms; Sentinel cannot reach n2 and promotes n1, whose
// offsets restart below n2's fsynced one; n2 is repointed to n1 at 1.8 s.
// The SET on n1 is at 3.3 s; n2's next tick, as n1's own, is at 4 s.
// (Before the reset of fsyncedRepl in applyRepl, n2 kept reporting its
// old offset, and WAITAOF 0 1 answered [0,1] one round trip after the
// SET.)
func TestWaitAOFStaleFACKAfterRepointing(t *testing.T) {
	cfg := biteConfig(3, 1, 5*time.Second)
	cfg.Topology = Topology{Replicated: true, DownAfter: 500 * time.Millisecond}
	for i := range cfg.Nodes {
		cfg.Nodes[i].Persistence = PersistEverysec
	}
	cfg.Faults = []faults.Fault{
		{Kind: faults.Partition, Start: 0, Duration: time.Second, From: []string{"n0"}, To: []string{"n1"}},
		{Kind: faults.Partition, Start: 300 * time.Millisecond, Duration: 1500 * time.Millisecond, From: []string{SentinelName}, To: []string{"n2"}},
		{Kind: faults.Failover, Start: 400 * time.Millisecond, Duration: 10 * time.Second},
	}
	cfg.Program = func(p *Proc) {
		for i := range 3 {
			sleepUntil(p, time.Duration(100*(i+1))*time.Millisecond)
			do(p, fmt.Sprint("old", i), func() (string, error) { return p.Primary().Set(p.Context(), "k", i, 0).Result() })
		}
		sleepUntil(p, 3300*time.Millisecond)
		do(p, "set", func() (string, error) { return p.Primary().Set(p.Context(), "k", "new", 0).Result() })
		do(p, "waitaof", func() (string, error) {
			v, err := p.Primary().WaitAOF(p.Context(), 0, 1, 1500*time.Millisecond).Result()
			return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(v)), ","), "[]"), err
		})
		doGet(p, "get/n2", p.Nodes()[2], "k")
	}
	res := runBite(t, cfg)
	if fo := engineEvents(res, SentinelName, "failover"); len(fo) != 1 || fo[0].Detail != "n0 -> n1" {
		t.Fatalf("want one failover n0 -> n1, got %+v", fo)
	}
	if rc := engineEvents(res, SentinelName, "reconfigure"); len(rc) != 1 || rc[0].Detail != "n2 -> replica of n1" || rc[0].T >= int64(2*time.Second) {
		t.Fatalf("want n2 repointed to n1 before its 2 s tick, got %+v", rc)
	}
	ops := opsOf(t, res, "c0")
	for i := range 3 {
		if o := one(t, ops, fmt.Sprint("old", i)); o.Result != resOK {
			t.Fatalf("a write to n0 failed: %v", o)
		}
	}
	if g := one(t, ops, "get/n2"); g.Result != resOK || g.Reply != "new" {
		t.Fatalf("n2 must follow n1: %v", g)
	}
	w := one(t, ops, "waitaof")
	if w.Result != resOK || w.Reply != "1,1" || w.Ret < int64(4*time.Second) || w.Ret > int64(4*time.Second+5*time.Millisecond) {
		t.Fatalf("WAITAOF 0 1 on n1: want [1,1] at n2's (and n1's) fsync tick (4 s), got %v", w)
	}
}
