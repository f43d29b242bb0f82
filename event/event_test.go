package event

import "testing"

// TestWireWords pins every constant's string: the words are written into
// trace files, their SHA-256 hashes and results.json, so a renamed value
// would change every trace hash and every report.
func TestWireWords(t *testing.T) {
	for _, c := range []struct {
		got  string
		want string
	}{
		{string(KindHeal), "heal"}, {string(KindStop), "stop"}, {string(KindFault), "fault"},
		{string(KindFaultEnd), "fault-end"}, {string(KindPause), "pause"}, {string(KindCrash), "crash"},
		{string(KindRestart), "restart"}, {string(KindFailover), "failover"}, {string(KindDemote), "demote"},
		{string(KindReconfigure), "reconfigure"}, {string(KindSentinel), "sentinel"},
		{string(KindZKLeader), "zk-leader"}, {string(KindZKExpire), "zk-expire"},
		{string(KindCmd), "cmd"}, {string(KindKeyTouch), "key-touch"},
		{string(KindCall), "call"}, {string(KindOK), "ok"}, {string(KindFail), "fail"},
		{string(KindUnknown), "unknown"}, {string(KindRenew), "renew"}, {string(KindError), "error"},
		{string(KindSectionError), "section-error"}, {string(KindExit), "exit"},
		{string(KindStoreRead), "store-read"}, {string(KindStoreWrite), "store-write"},
		{string(OpAcquire), "acquire"}, {string(OpRelease), "release"}, {string(OpRead), "read"}, {string(OpWrite), "write"},
		{string(ResultOK), "ok"}, {string(ResultFenced), "fenced"}, {string(ResultDel), "del"},
		{string(ResultExpire), "expire"}, {string(ResultRead), "read"}, {string(ResultWrite), "write"},
		{string(FenceNone), "none"}, {string(FenceMaxToken), "max-token"}, {string(FenceMaxTokenStrict), "max-token-strict"},
		{string(FenceOwnerCAS), "owner-cas"}, {string(FenceVersion), "version"},
		{string(ClassDoubleHold), "double-hold"}, {string(ClassResource), "resource"}, {string(ClassOwnership), "ownership"},
	} {
		if c.got != c.want {
			t.Errorf("constant %q, want %q: the trace and results.json words must not change", c.got, c.want)
		}
	}
}
