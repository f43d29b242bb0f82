package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// causeOf runs Cause on c0 holding v0 on n0 from 1 s, c1 winning on n1 at
// 3 s, with the given events between and n0's log entry.
func causeOf(t *testing.T, fs []faults.Fault, mid []Event, persistence string, n0 KeyChange) string {
	t.Helper()
	sec := int64(time.Second)
	evs := []Event{
		{T: 1 * sec, Proc: "c0", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		{T: 1*sec + 1, Proc: "c0", Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Detail: "v0"},
	}
	evs = append(evs, mid...)
	evs = append(evs,
		Event{T: 3 * sec, Proc: "c1", Kind: event.KindCall, Op: event.OpAcquire, OpID: 2},
		Event{T: 3*sec + 1, Proc: "c1", Kind: event.KindOK, Op: event.OpAcquire, OpID: 2, Detail: "v1"})
	h := History{Clients: []string{"c0", "c1"}, End: 10 * sec, Heal: 9 * sec, Faults: fs, Events: evs}
	log := KeyLog{Persistence: map[string]string{"n0": persistence}, Changes: []KeyChange{n0,
		{T: 3 * sec, Local: 3 * sec, Node: "n1", Key: "k", Peer: "c1", Cmd: "set k v1 px 3000 nx", Now: "v1", Exists: true, ExpireAt: 6 * sec}}}
	return Cause(h, log, &Violation{Kind: KindLeaseOverlap, T: 3*sec + 1, Clients: []string{"c0", "c1"}})
}

// A jump of n0's clock after the key's last change: the log cannot say
// the key "was still there" (a +10 s jump expired a 3 s key).
func TestCauseClockMovedAfterLastChange(t *testing.T) {
	sec := int64(time.Second)
	jump := faults.Fault{Kind: faults.ClockJump, Start: 2 * time.Second, Targets: []string{"n0"}, Jump: 10 * time.Second}
	got := causeOf(t, []faults.Fault{jump}, []Event{{T: 2 * sec, Proc: "world", Kind: event.KindFault, Fault: 1}}, "none",
		KeyChange{T: 1 * sec, Local: 1 * sec, Node: "n0", Key: "k", Peer: "c0", Cmd: "set k v0 px 3000 nx", Now: "v0", Exists: true, ExpireAt: 4 * sec})
	if strings.Contains(got, "still there") || !strings.Contains(got, "clock was moved") {
		t.Errorf("cause: %s\nwant no \"still there\" on n0, and its clock's move named", got)
	}
}

// A crash under persistence "always" loses nothing: the key is not "lost"
// there; under "none" it is.
func TestCauseCrashKeptByPersistence(t *testing.T) {
	sec := int64(time.Second)
	crash := []Event{{T: 2 * sec, Proc: "n0", Kind: event.KindCrash}, {T: 2*sec + sec/10, Proc: "n0", Kind: event.KindRestart}}
	set := KeyChange{T: 1 * sec, Local: 1 * sec, Node: "n0", Key: "k", Peer: "c0", Cmd: "set k v0 px 30000 nx", Now: "v0", Exists: true, ExpireAt: 31 * sec}
	if got := causeOf(t, nil, crash, "always", set); strings.Contains(got, "lost") {
		t.Errorf("persistence always: %s\nwant the key not called lost", got)
	}
	if got := causeOf(t, nil, crash, "none", set); !strings.Contains(got, "was lost when n0 crashed at 2s") {
		t.Errorf("persistence none: %s\nwant the key lost in the crash", got)
	}
}
