package checker

import (
	"fmt"
	"strings"
	"time"
)

// OwnershipViolation is a client that released or renewed a lock it no
// longer held: another client acquired the lock after this client's
// acquisition and before the release (or renewal), and the release (or
// renewal) still succeeded. set-nx-del's plain DEL is the textbook case: it
// removes whoever's key is there.
type OwnershipViolation struct {
	Client     string `json:"client"`      // A: released or renewed
	Op         string `json:"op"`          // "release" | "renew"
	AcquiredAt int64  `json:"acquired_ns"` // A's acquire ok
	At         int64  `json:"at_ns"`       // A's release call, or the renewal
	Other      string `json:"other"`       // B: acquired in between
	OtherAt    int64  `json:"other_ns"`    // B's acquire ok
	// Node is where A's command touched B's key (History.KeyTruth only).
	Node string `json:"node,omitempty"`
}

func (v OwnershipViolation) String() string {
	if v.Node != "" {
		what := "deleted"
		if v.Op == "renew" {
			what = "extended"
		}
		return fmt.Sprintf("%s's %s at t=%v %s %s's key on %s (%s acquired at t=%v; %s's own acquisition at t=%v)",
			v.Client, v.Op, time.Duration(v.At), what, v.Other, v.Node, v.Other, time.Duration(v.OtherAt), v.Client, time.Duration(v.AcquiredAt))
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
// With History.KeyTruth the nodes' own record decides instead
// (ownershipFromKeys): a release that deleted nothing is no violation,
// whatever the lock returned.
//
// Readers share a read-write lock: a reader's release or renewal after
// another reader's acquisition is no violation; only a writer's
// acquisition takes the lock from a reader (and any acquisition from a
// writer).
func Ownership(h History) (int, *OwnershipViolation) {
	if h.KeyTruth {
		return ownershipFromKeys(h)
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
		case e.Op == "acquire" && e.Kind == "ok" && e.Until != 0 && e.Until <= e.T:
			// The lease had already run out on the holder's own clock when
			// Acquire returned (a pause after the check): no one was
			// entitled to the lock through it, so it takes it from no one.
		case e.Op == "acquire" && e.Kind == "ok":
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
		case e.Op == "acquire" && e.Kind == "renew":
			if v := candidate(e.Proc, e.T, "renew"); v != nil {
				found(v)
			}
		case e.Op == "release" && e.Kind == "call":
			if v := candidate(e.Proc, e.T, "release"); v != nil {
				pending[e.Proc] = v
			} else {
				delete(pending, e.Proc)
			}
		case e.Op == "release" && e.Kind == "ok":
			if v := pending[e.Proc]; v != nil {
				found(v)
			}
			delete(pending, e.Proc)
		case e.Op == "release":
			delete(pending, e.Proc)
		}
	}
	return n, first
}

// ownershipFromKeys counts the releases and renewals that touched a key
// of a lock another client held, from the nodes' "key-touch" events: a
// delete is A's release (or whatever A was doing: a delete of B's key
// takes B's lock away), a TTL change is A's renewal. One release or
// renewal that touched several nodes (Redlock) counts once.
//
// A touch is a violation only if some client B other than A held the
// lock when it landed: B's latest acquire ok is not followed by a
// release call of B's, and its lease (renewals included) had not run out
// on B's own reckoning. The node names the key's last
// writer, B when it is one of them; a last writer that holds nothing
// (getset-expiry's losing GETSET overwrites the value it lost to) takes
// no one's lock, and a touch then names the latest holder instead, or is
// no violation when there is none (the holder re-timing its own key that
// a loser overwrote). A touch that lands between B's winning write and
// B's acquire ok (the reply still in the network, common when a heal
// delivers held messages at once) is a violation too: B's acquisition
// then in flight ends ok with a lease value that names what the key held
// (Event.Held). A loser that wins later, by a write of its own after the
// touch, holds another value.
func ownershipFromKeys(h History) (int, *OwnershipViolation) {
	lastOK := map[string]int64{}      // client -> latest acquire ok
	until := map[string]int64{}       // client -> the end of that hold's lease, renewals included (0: none)
	read := map[string]bool{}         // client -> that acquire ok was a read
	releaseCall := map[string]int64{} // client -> latest release call
	var acquirers []string            // clients with an acquire ok, in order of their first
	type key struct {
		client, op, other string
		at                int64
	}
	// holds: b, not a, held the lock at t: acquired, not released, its
	// lease not run out. (Unlike Ownership's inference, b need not have
	// acquired after a: the node says whose key a touched, and a split
	// brain's two holders can delete each other's keys.)
	holds := func(b, a string, t int64) bool {
		ok, has := lastOK[b]
		if !has || b == a || ok > t || releaseCall[b] >= ok || (until[b] != 0 && until[b] <= t) {
			return false
		}
		// Two readers share a read-write lock's hash: the last reader's
		// release deletes it and a reader's renewal re-times it, whoever
		// wrote it last.
		return !(read[a] && read[b])
	}
	// An acquisition still in flight when a touch lands (its winning
	// write done, the reply on its way): each acquire call's outcome, and
	// each client's acquire call still without one.
	type opKey struct {
		proc string
		id   int64
	}
	outcome := map[opKey]*Event{}
	for i := range h.Events {
		if e := &h.Events[i]; e.Op == "acquire" && (e.Kind == "ok" || e.Kind == "fail" || e.Kind == "unknown") {
			if _, dup := outcome[opKey{e.Proc, e.OpID}]; !dup {
				outcome[opKey{e.Proc, e.OpID}] = e
			}
		}
	}
	inFlight := map[string]int64{} // client -> its acquire call's OpID without an outcome yet
	// arriving: b's acquisition in flight at a touch ends ok with a lease
	// value that names what the touched key held: the key was that hold.
	arriving := func(b, a, held string) (*Event, bool) {
		id, ok := inFlight[b]
		if !ok || b == a || held == "" {
			return nil, false
		}
		o := outcome[opKey{b, id}]
		if o == nil || o.Kind != "ok" || (o.Until != 0 && o.Until <= o.T) {
			return nil, false
		}
		for _, v := range strings.Split(o.Detail, ",") {
			for _, f := range strings.Split(held, ",") {
				if v != "" && v == f {
					return o, true
				}
			}
		}
		return nil, false
	}
	seen := map[key]bool{}
	n := 0
	var first *OwnershipViolation
	for i := range h.Events {
		e := &h.Events[i]
		if e.Op == "acquire" {
			switch e.Kind {
			case "call":
				inFlight[e.Proc] = e.OpID
			case "ok", "fail", "unknown":
				delete(inFlight, e.Proc)
			}
		}
		switch {
		case e.Op == "acquire" && e.Kind == "ok" && e.Until != 0 && e.Until <= e.T:
			// The lease had already run out when Acquire returned (as in
			// Ownership): a hold of no one's, and A's latest acquisition
			// stays the one before it.
		case e.Op == "acquire" && e.Kind == "ok":
			if _, has := lastOK[e.Proc]; !has {
				acquirers = append(acquirers, e.Proc)
			}
			lastOK[e.Proc] = e.T
			until[e.Proc] = e.Until
			read[e.Proc] = e.Result == ModeRead
		case e.Op == "acquire" && e.Kind == "renew":
			until[e.Proc] = e.Until
		case e.Op == "release" && e.Kind == "call":
			releaseCall[e.Proc] = e.T
		case e.Kind == "key-touch":
			c, other := e.Peer, e.Detail
			otherAt := lastOK[other]
			if o, ok := arriving(other, c, e.Held); ok {
				otherAt = o.T
			} else if !holds(other, c, e.T) {
				other = ""
				for _, b := range acquirers {
					if holds(b, c, e.T) && (other == "" || lastOK[b] > lastOK[other]) {
						other = b
					}
				}
				if other == "" {
					continue
				}
				otherAt = lastOK[other]
			}
			v := OwnershipViolation{Client: c, Op: "release", AcquiredAt: lastOK[c], At: e.T, Other: other, OtherAt: otherAt, Node: e.Proc}
			k := key{client: c, op: "release", at: releaseCall[c]}
			if e.Result == "expire" {
				v.Op = "renew"
				k = key{client: c, op: "renew", other: other, at: otherAt}
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			n++
			if first == nil {
				first = &v
			}
		}
	}
	return n, first
}
