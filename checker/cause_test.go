package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

const ms = int64(time.Millisecond)

// acq is c's acquisition of value v: called at call, ok at ok.
func acq(c string, id, call, ok int64, v string) []Event {
	return []Event{
		{T: call, Proc: c, Kind: event.KindCall, Op: event.OpAcquire, OpID: id},
		{T: ok, Proc: c, Kind: event.KindOK, Op: event.OpAcquire, OpID: id, Detail: v},
	}
}

// set is c's command that created key k on node n holding v, with a TTL.
func set(n, c string, t, ttl int64, v string) KeyChange {
	return KeyChange{T: t, Sent: t - ms/2, Local: t, Node: n, Key: "lock", Peer: c, Cmd: "set lock " + v + " nx",
		Now: v, Exists: true, ExpireAt: t + ttl}
}

func overlap(a, b string, t int64) *Violation {
	return &Violation{Kind: KindLeaseOverlap, T: t, Clients: []string{a, b}, Detail: "lease overlap"}
}

func mustHave(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("cause lacks %q:\n%s", w, got)
		}
	}
}

func TestCauseNone(t *testing.T) {
	if got := Cause(History{}, KeyLog{}, nil); got != "" {
		t.Fatalf("no violation, cause %q", got)
	}
	v := overlap("c0", "c1", 5*ms)
	if got := Cause(History{}, KeyLog{}, v); !strings.HasPrefix(got, "cause unknown: no involved client held") {
		t.Fatalf("no holds: %q", got)
	}
	h := History{Events: acq("c0", 1, 0, ms, "")}
	if got := Cause(h, KeyLog{}, overlap("c0", "c1", 5*ms)); !strings.Contains(got, "recorded no lease value") {
		t.Fatalf("no value: %q", got)
	}
}

// Another client's plain SET overwrote the holder's value.
func TestCauseOverwritten(t *testing.T) {
	h := History{Events: append(acq("c0", 1, 0, 2*ms, "v0"), acq("c1", 1, 10*ms, 20*ms, "v1")...)}
	h.Events = append(h.Events[:2], Event{T: 9 * ms, Proc: "c1", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1}, h.Events[3])
	over := KeyChange{T: 15 * ms, Sent: 14 * ms, Local: 15 * ms, Node: "n0", Key: "lock", Peer: "c1", Cmd: "set lock v1",
		Was: "v0", Existed: true, Now: "v1", Exists: true, WasExpireAt: 3001 * ms}
	got := Cause(h, KeyLog{Changes: []KeyChange{set("n0", "c0", ms, 3000*ms, "v0"), over}}, overlap("c0", "c1", 20*ms))
	mustHave(t, got, "why c1 could take c0's key (acquired at 2ms) at 20ms", "was overwritten (to v1) by c1's set lock v1, sent at 14ms, landed at 15ms (its acquire, op 1, called at 9ms)")
}

// The value went away with no command, no expiry due, no crash: the log
// cannot tell, and says so; a capped log says it too.
func TestCauseUnknown(t *testing.T) {
	h := History{Events: append(acq("c0", 1, 0, 2*ms, "v0"), acq("c1", 1, 5*ms, 20*ms, "v1")...)}
	log := KeyLog{Changes: []KeyChange{set("n0", "c0", ms, 3000*ms, "v0"), set("n0", "c1", 19*ms, 3000*ms, "v1")}, Capped: true}
	got := Cause(h, log, overlap("c0", "c1", 20*ms))
	mustHave(t, got, "for a reason the key log cannot tell (unknown)", "then c1's set lock v1 nx created it anew at 19ms", "the key log was capped")
}

// A Redlock round: the holder's value on three nodes; one expired (its
// clock jumped), one deleted by a command whose send time is unknown, one
// still there; the second holder won on a node the holder never reached.
func TestCauseNodes(t *testing.T) {
	jump := faults.Fault{Kind: faults.ClockJump, Start: 100 * time.Millisecond, Targets: []string{"n0"}, Jump: 10 * time.Second}
	h := History{Faults: []faults.Fault{jump}, Events: []Event{
		{T: 0, Proc: "c0", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		{T: 3 * ms, Proc: "c0", Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Detail: "v0"},
		{T: 50 * ms, Proc: "c1", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		{T: 100 * ms, Proc: "world", Kind: event.KindFault, Fault: 1, Detail: jump.String()},
		{T: 200 * ms, Proc: "c1", Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Detail: "v1"},
	}}
	del := KeyChange{T: 150 * ms, Local: 150 * ms, Node: "n1", Key: "lock", Peer: "c2", Cmd: "del lock", Was: "v0", Existed: true}
	reborn := set("n0", "c1", 160*ms, 3000*ms, "v1")
	reborn.Local = reborn.T + int64(10*time.Second)
	log := KeyLog{Changes: []KeyChange{set("n0", "c0", ms, 3000*ms, "v0"), set("n1", "c0", 2*ms, 3000*ms, "v0"), set("n2", "c0", 2*ms, 3000*ms, "v0"),
		del, reborn, set("n3", "c1", 170*ms, 3000*ms, "v1")}}
	got := Cause(h, log, overlap("c0", "c1", 200*ms))
	mustHave(t, got,
		"on n0, c0's key lock (set at 1ms: set lock v0 nx) expired by n0's clock, due at 3.001s on it, which "+jump.String()+" moved (gone by 160ms; a TTL of 3s)",
		"on n1, c0's key lock (set at 2ms: set lock v0 nx) was deleted by c2's del lock, landed at 150ms (sent at an unknown time)",
		"on n2, c0's key lock (set at 2ms: set lock v0 nx) was still there at 200ms",
		"on n3 (key lock) c0's value never was: c1's set lock v1 nx created the key there at 170ms")
}

// An ownership violation follows the key the release touched, not the
// releaser's own; a renewal by another client that shortened the key
// shows.
func TestCauseOwnershipAndRetime(t *testing.T) {
	h := History{Events: []Event{
		{T: 0, Proc: "c0", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		{T: ms, Proc: "c0", Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Detail: "v0"},
		{T: 3000 * ms, Proc: "c1", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		{T: 3002 * ms, Proc: "c1", Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Detail: "v1"},
		{T: 3100 * ms, Proc: "c0", Kind: event.KindCall, Op: event.OpRelease, OpID: 2},
		{T: 3101 * ms, Proc: "c0", Kind: event.KindUnknown, Op: event.OpRelease, OpID: 2},
	}}
	retime := KeyChange{T: 3050 * ms, Sent: 3049 * ms, Local: 3050 * ms, Node: "n0", Key: "lock", Peer: "c2", Cmd: "pexpire lock 10",
		Was: "v1", Existed: true, Now: "v1", Exists: true, WasExpireAt: 6001 * ms, ExpireAt: 3060 * ms}
	del := KeyChange{T: 3200 * ms, Sent: 3100 * ms, Local: 3200 * ms, Node: "n0", Key: "lock", Peer: "c0", Cmd: "del lock", Was: "v1", Existed: true}
	log := KeyLog{Changes: []KeyChange{set("n0", "c0", ms, 3000*ms, "v0"), set("n0", "c1", 3001*ms, 3000*ms, "v1"), retime, del}}
	v := &Violation{Kind: KindOwnership, T: 3200 * ms, Clients: []string{"c0", "c1"}}
	got := Cause(h, log, v)
	mustHave(t, got, "why c1's key went away (acquired at 3.002s)",
		"was deleted by c0's del lock, sent at 3.1s, landed at 3.2s (its release, op 2, called at 3.1s, had returned unknown at 3.101s: the command landed 100ms after it was sent)")
	// Without the delete the key expires early, re-timed by c2.
	h.Events = append(h.Events[:4], acq("c0", 3, 3100*ms, 3150*ms, "v2")...)
	log.Changes = append(log.Changes[:3], set("n0", "c0", 3110*ms, 3000*ms, "v2"))
	got = Cause(h, log, overlap("c1", "c0", 3150*ms))
	mustHave(t, got, "expired by n0's clock at ~3.06s (a TTL of 3s; re-timed by c2 at 3.05s (pexpire lock 10))")
}

// A hash value (Redisson: field names) and a lease over several keys
// (comma-separated) match their key values.
func TestCauseHolds(t *testing.T) {
	for _, c := range []struct {
		key, lease string
		want       bool
	}{{"a", "a", true}, {"a,b", "b", true}, {"b", "a,b", true}, {"a", "b", false}, {"", "a", false}, {"a", "", false}} {
		if got := holds(c.key, c.lease); got != c.want {
			t.Errorf("holds(%q, %q) = %v", c.key, c.lease, got)
		}
	}
}

// TestPromoted: a failover's detail names the promoted node with or
// without a cluster's shard note after it (the old suffix match missed
// "n0 -> n1 (cluster shard 0, slots 0-5460)").
func TestPromoted(t *testing.T) {
	for detail, want := range map[string]string{
		"n0 -> n1": "n1", "n0 -> n1 (cluster shard 0, slots 0-5460)": "n1", "n10 -> n11": "n11", "no arrow": "",
	} {
		if got := promoted(detail); got != want {
			t.Errorf("promoted(%q) = %q, want %q", detail, got, want)
		}
	}
}

// TestNeverHadLastPromotion: a node promoted twice is told with its
// promotion before the command, not its first (a cluster's shard failed
// over six times named the one of 12 s earlier).
func TestNeverHadLastPromotion(t *testing.T) {
	c := &causer{holder: "c1", h: History{Events: []Event{
		{T: 3 * ms, Proc: "sentinel", Kind: event.KindFailover, Detail: "n0 -> n1 (cluster shard 0, slots 0-5460)"},
		{T: 9 * ms, Proc: "sentinel", Kind: event.KindFailover, Detail: "n1 -> n0 (cluster shard 0, slots 0-5460)"},
		{T: 15 * ms, Proc: "sentinel", Kind: event.KindFailover, Detail: "n0 -> n1 (cluster shard 0, slots 0-5460)"},
		{T: 30 * ms, Proc: "sentinel", Kind: event.KindFailover, Detail: "n1 -> n0 (cluster shard 0, slots 0-5460)"},
	}}}
	got := c.neverHad(KeyChange{T: 20 * ms, Node: "n1", Key: "lock", Peer: "c0", Cmd: "set lock v0 nx"})
	mustHave(t, got, "promoted by the failover at 15ms (n0 -> n1 (cluster shard 0, slots 0-5460))", "created the key there at 20ms")
}
