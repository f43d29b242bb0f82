package checker

import (
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// Event is one record of a run's history as checkers see it: the
// simulator's trace events without the simulator's types (checkers import
// nothing of sim). Client operations have Op set (acquire, release, read,
// write) and Kind call | ok | fail | unknown, or Kind "renew" for a lease
// extension (an acquire's Result is the hold's mode: ModeRead for a shared
// hold, "" for an exclusive one); the storage's own records have Proc "store" and Kind
// store-read | store-write (Result ok | fenced); faults and engine events
// have Proc "world", "sentinel" or a node name.
type Event struct {
	T      int64        `json:"t"` // true time, ns
	Proc   string       `json:"p"` // process name
	Kind   event.Kind   `json:"k"`
	Op     event.Op     `json:"op,omitempty"`
	OpID   int64        `json:"op_id,omitempty"`
	Until  int64        `json:"until,omitempty"` // acquire ok / renew: true time the holder's belief ends (0: until release)
	Token  int64        `json:"token,omitempty"`
	Value  int64        `json:"value,omitempty"`
	Result event.Result `json:"result,omitempty"`
	Lock   string       `json:"lock,omitempty"`
	Peer   string       `json:"peer,omitempty"`
	Detail string       `json:"detail,omitempty"`
	// Fault is the schedule's fault number (History.Faults[Fault-1]) on
	// fault, fault-end and targeted pause events; 0 elsewhere.
	Fault int `json:"fault,omitempty"`
	// Held is, on a key-touch event, the values the touched key held
	// since it was created, oldest first (a string's value, or a hash's
	// field names joined by ","): an acquisition whose lease value
	// (Detail; comma-separated for a multi-key lease) is among them is a
	// hold the key was.
	Held []string `json:"held,omitempty"`
}

// History is what the checkers judge: one run's events in true-time order
// and what the run was.
type History struct {
	Events  []Event
	Clients []string // every client process name
	Heal    int64    // true time the faults were lifted (start of the liveness phase)
	End     int64    // true time the run ended
	// Fencing is the resource check the lock relies on: "" / FenceNone
	// (the lock itself must exclude), FenceMaxToken, FenceMaxTokenStrict,
	// FenceOwnerCAS, FenceVersion.
	Fencing event.Fencing
	// Fair: the design promises fairness, so a client starving after the
	// heal while others progress is a liveness failure.
	Fair bool
	// LeaseTTL is the lock's lease (0: none, or unknown). A key orphaned at
	// the heal (an acquisition whose caller gave up) may block everyone for
	// that long, so a liveness phase no longer than it cannot show a
	// deadlock: it is then not judged.
	LeaseTTL int64
	// KeyTruth: the nodes recorded "key-touch" events (a write by Peer that
	// deleted, Result "del", or re-timed, "expire", the lock key while it
	// held the value client Detail set). Ownership is then judged from
	// them: what a release or renewal really did, not what it returned.
	KeyTruth bool
	// Resource is the workload's object: "pool" (each section writes the
	// value it read minus one), "counter" (plus one) or "" (no resource).
	Resource string
	Initial  int64 // the object's initial value
	// Capped is true when the history hit its size bound: checkers then
	// cannot say "safe", only "unknown".
	Capped bool
	// Faults is the run's fault schedule (Event.Fault indexes it).
	Faults []faults.Fault
}

// FaultOf returns the fault an event names (Event.Fault), if any.
func (h History) FaultOf(e Event) (faults.Fault, bool) {
	if e.Fault < 1 || e.Fault > len(h.Faults) {
		return faults.Fault{}, false
	}
	return h.Faults[e.Fault-1], true
}

// LockOps returns the lock-belief records (acquire, release, renew) in the
// form the overlap checker reads.
func (h History) LockOps() []Op {
	var ops []Op
	for _, e := range h.Events {
		if e.Op == event.OpAcquire || e.Op == event.OpRelease {
			op := Op{T: e.T, Proc: e.Proc, Kind: e.Kind, Op: e.Op, OpID: e.OpID, Until: e.Until, Detail: e.Detail}
			if e.Op == event.OpAcquire {
				op.Mode = e.Result
			}
			ops = append(ops, op)
		}
	}
	return ops
}
