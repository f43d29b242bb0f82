package checker

import (
	"fmt"
	"time"

	"github.com/locksim/locksim/event"
)

// OwnershipViolation is a client that released or renewed a lock it no
// longer held: another client acquired the lock after this client's
// acquisition and before the release (or renewal), and the release (or
// renewal) still succeeded. set-nx-del's plain DEL is the textbook case: it
// removes whoever's key is there.
type OwnershipViolation struct {
	Client     string `json:"client"`      // A: released or renewed
	Op         string `json:"op"`          // OwnRelease | OwnRenew
	AcquiredAt int64  `json:"acquired_ns"` // A's acquire ok (0: none with a live lease)
	At         int64  `json:"at_ns"`       // A's release call, or the renewal (with key truth: the touch)
	Other      string `json:"other"`       // B: acquired in between (with key truth: held the touched key)
	OtherAt    int64  `json:"other_ns"`    // B's acquire ok (with key truth, after At when it was in flight)
	// Node is where A's command touched B's key (History.KeyTruth only).
	Node string `json:"node,omitempty"`
}

// What an ownership violation's client did (OwnershipViolation.Op).
const (
	OwnRelease = "release"
	OwnRenew   = "renew"
)

func (v OwnershipViolation) String() string {
	if v.Node != "" {
		what := "deleted"
		if v.Op == OwnRenew {
			what = "extended"
		}
		other := fmt.Sprintf("%s acquired at t=%v", v.Other, time.Duration(v.OtherAt))
		if v.OtherAt > v.At {
			other = fmt.Sprintf("%s's acquisition was in flight, its reply returning ok at t=%v", v.Other, time.Duration(v.OtherAt))
		}
		own := fmt.Sprintf("%s's own acquisition at t=%v", v.Client, time.Duration(v.AcquiredAt))
		if v.AcquiredAt == 0 {
			own = fmt.Sprintf("%s held no live lease of its own", v.Client)
		}
		return fmt.Sprintf("%s's %s at t=%v %s %s's key on %s (%s; %s)", v.Client, v.Op, time.Duration(v.At), what, v.Other, v.Node, other, own)
	}
	return fmt.Sprintf("%s's %s at t=%v succeeded although %s acquired at t=%v, after %s's acquisition at t=%v",
		v.Client, v.Op, time.Duration(v.At), v.Other, time.Duration(v.OtherAt), v.Client, time.Duration(v.AcquiredAt))
}

// Ownership finds releases with outcome ok (and renewals) by a client A
// such that another client B got an acquire ok after A's latest acquire ok
// and before A's release call (or renewal). It returns the count and the
// first instance in history order (B is the latest such acquirer). O(n):
// it keeps each client's latest acquire ok and the two latest acquirers
// overall.
//
// With History.KeyTruth the nodes' own record decides instead (the hold
// machine of hold.go): a release that deleted nothing is no violation,
// whatever the lock returned.
//
// Readers share a read-write lock: a reader's release or renewal after
// another reader's acquisition is no violation; only a writer's
// acquisition takes the lock from a reader (and any acquisition from a
// writer).
func Ownership(h History) (int, *OwnershipViolation) {
	if h.KeyTruth {
		return ownershipFromKeyTruth(h)
	}
	type acq struct {
		proc string
		t    int64
	}
	lastOK := map[string]int64{} // client -> latest acquire ok
	// latest acquire ok overall, and the latest by another client than it
	var latest, other acq
	// release calls waiting for their outcome: client -> candidate
	pending := map[string]*OwnershipViolation{}
	// the same over write (exclusive) acquisitions only: a reader shares
	// the lock with other readers, so only a writer takes it from one
	var latestW, otherW acq
	read := map[string]bool{} // client -> its latest acquire ok was a read
	candidate := func(p string, t int64, op string) *OwnershipViolation {
		mine, ok := lastOK[p]
		if !ok {
			return nil
		}
		b := latest
		if read[p] {
			b = latestW
			if b.proc == p {
				b = otherW
			}
		} else if b.proc == p {
			b = other
		}
		if b.proc == "" || b.t <= mine {
			return nil
		}
		return &OwnershipViolation{Client: p, Op: op, AcquiredAt: mine, At: t, Other: b.proc, OtherAt: b.t}
	}
	n := 0
	var first *OwnershipViolation
	found := func(v *OwnershipViolation) {
		n++
		if first == nil {
			first = v
		}
	}
	for i := range h.Events {
		e := &h.Events[i]
		switch {
		case e.Op == event.OpAcquire && e.Kind == event.KindOK && e.Until != 0 && e.Until <= e.T:
			// The lease had already run out on the holder's own clock when
			// Acquire returned (a pause after the check): no one was
			// entitled to the lock through it, so it takes it from no one.
		case e.Op == event.OpAcquire && e.Kind == event.KindOK:
			lastOK[e.Proc] = e.T
			if latest.proc != e.Proc {
				other = latest
			}
			latest = acq{e.Proc, e.T}
			read[e.Proc] = e.Result == ModeRead
			if !read[e.Proc] {
				if latestW.proc != e.Proc {
					otherW = latestW
				}
				latestW = acq{e.Proc, e.T}
			}
		case e.Op == event.OpAcquire && e.Kind == event.KindRenew:
			if v := candidate(e.Proc, e.T, OwnRenew); v != nil {
				found(v)
			}
		case e.Op == event.OpRelease && e.Kind == event.KindCall:
			if v := candidate(e.Proc, e.T, OwnRelease); v != nil {
				pending[e.Proc] = v
			} else {
				delete(pending, e.Proc)
			}
		case e.Op == event.OpRelease && e.Kind == event.KindOK:
			if v := pending[e.Proc]; v != nil {
				found(v)
			}
			delete(pending, e.Proc)
		case e.Op == event.OpRelease:
			delete(pending, e.Proc)
		}
	}
	return n, first
}
