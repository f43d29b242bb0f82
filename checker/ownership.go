package checker

import (
	"fmt"
	"strings"
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
	Op         string `json:"op"`          // "release" | "renew"
	AcquiredAt int64  `json:"acquired_ns"` // A's acquire ok (0: none with a live lease)
	At         int64  `json:"at_ns"`       // A's release call, or the renewal (with key truth: the touch)
	Other      string `json:"other"`       // B: acquired in between (with key truth: held the touched key)
	OtherAt    int64  `json:"other_ns"`    // B's acquire ok (with key truth, after At when it was in flight)
	// Node is where A's command touched B's key (History.KeyTruth only).
	Node string `json:"node,omitempty"`
}

func (v OwnershipViolation) String() string {
	if v.Node != "" {
		what := "deleted"
		if v.Op == "renew" {
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
			if v := candidate(e.Proc, e.T, "renew"); v != nil {
				found(v)
			}
		case e.Op == event.OpRelease && e.Kind == event.KindCall:
			if v := candidate(e.Proc, e.T, "release"); v != nil {
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

// ownershipFromKeys counts the releases and renewals that touched a key
// of a lock another client held, from the nodes' "key-touch" events: a
// delete is A's release (or whatever A was doing: a delete of B's key
// takes B's lock away), a TTL change is A's renewal. One release or
// renewal that touched several nodes (Redlock) counts once.
//
// A touch counts against a client B other than A that held the lock when
// it landed: B's acquire oks outnumber its release calls and its latest
// lease (renewals included) had not run out on its own reckoning; an
// acquire ok whose lease was already over when it returned is no hold.
// Unlike Ownership's inference, B need not have acquired after A: the
// node says whose key A touched, and a split brain's two holders delete
// each other's keys. The node names the key's last writer and the values
// it held since it was created (Event.Held):
//   - the last writer counts if it held the lock;
//   - else (a last writer that holds nothing: getset-expiry's losing
//     GETSET overwrites the value it lost to, an abandoned acquisition's
//     write lands late) the latest other client that held the lock with a
//     lease value among those values: the holder whose key a loser
//     overwrote;
//   - else it is no violation (the holder re-timing its own key that a
//     loser overwrote; a delete of a key no one holds).
//
// A re-timing (expire) also counts against a client whose acquisition
// in flight at the touch returns ok with a lease value among those
// values: the key it is about to hold (RedissonMultiLock's closing
// PEXPIRE landing on another client's round). A delete in that moment
// is not counted: a history cannot tell it from a delete of a stale
// copy of B's write (a go-redis resend, an abandoned acquisition's SET
// landing late) that B's live write then replaced, and for designs whose
// value is the client's name the two carry the same value (a cold review
// found such runs); the lease-overlap and resource checks see what
// follows from a real one. (A re-timed key was not replaced: B's live
// write, had it been another, would have found the key there.) Still counted,
// though arguable: a touch of a value of the last writer's that a
// restart or a lagging replica brought back while it holds another.
//
// Two readers of a read-write lock share its hash: a reader's touch of
// it never counts against another reader.
func ownershipFromKeys(h History) (int, *OwnershipViolation) {
	lastOK := map[string]int64{}      // client -> latest acquire ok
	lease := map[string]string{}      // client -> that ok's lease value (Detail)
	until := map[string]int64{}       // client -> the end of that hold's lease, renewals included (0: none)
	depth := map[string]int{}         // client -> acquire oks not yet followed by a release call (reentrant holds nest)
	read := map[string]bool{}         // client -> that acquire ok was a read
	releaseCall := map[string]int64{} // client -> latest release call
	type key struct {
		client, op, other string
		at                int64
	}
	skipped := map[string]int{} // client -> acquire oks whose lease was over on return, not yet followed by a release call
	// Each acquire call's outcome (looked ahead), and each client's
	// acquire call still without one.
	type opKey struct {
		proc string
		id   int64
	}
	outcome := map[opKey]*Event{}
	for i := range h.Events {
		if e := &h.Events[i]; e.Op == event.OpAcquire && (e.Kind == event.KindOK || e.Kind == event.KindFail || e.Kind == event.KindUnknown) {
			if _, dup := outcome[opKey{e.Proc, e.OpID}]; !dup {
				outcome[opKey{e.Proc, e.OpID}] = e
			}
		}
	}
	inFlight := map[string]int64{} // client -> its acquire call's OpID without an outcome yet
	among := func(value string, held []string) bool {
		for _, v := range strings.Split(value, ",") {
			for _, hv := range held {
				for _, f := range strings.Split(hv, ",") {
					if v != "" && v == f {
						return true
					}
				}
			}
		}
		return false
	}
	// claim: when b's hold began, if b, not a, held the lock at t (any
	// value when anyValue: the node says the key is b's), or, for a
	// re-timing (expire), b's acquisition in flight returns ok with a
	// lease value among held.
	claim := func(b, a string, t int64, held []string, anyValue, expire bool) (int64, bool) {
		if b == a {
			return 0, false
		}
		if id, ok := inFlight[b]; ok && expire {
			if o := outcome[opKey{b, id}]; o != nil && o.Kind == event.KindOK && (o.Until == 0 || o.Until > o.T) &&
				!(read[a] && o.Result == ModeRead) && among(o.Detail, held) {
				return o.T, true
			}
		}
		ok, has := lastOK[b]
		if !has || depth[b] <= 0 || ok > t || (until[b] != 0 && until[b] <= t) || (read[a] && read[b]) {
			return 0, false
		}
		if !anyValue && !among(lease[b], held) {
			return 0, false
		}
		return ok, true
	}
	seen := map[key]bool{}
	n := 0
	var first *OwnershipViolation
	for i := range h.Events {
		e := &h.Events[i]
		if e.Op == event.OpAcquire {
			switch e.Kind {
			case event.KindCall:
				inFlight[e.Proc] = e.OpID
			case event.KindOK, event.KindFail, event.KindUnknown:
				delete(inFlight, e.Proc)
			}
		}
		switch {
		case e.Op == event.OpAcquire && e.Kind == event.KindOK && e.Until != 0 && e.Until <= e.T:
			// The lease had already run out when Acquire returned (as in
			// Ownership): a hold of no one's, and A's latest acquisition
			// stays the one before it; its release call ends nothing else.
			skipped[e.Proc]++
			read[e.Proc] = e.Result == ModeRead
		case e.Op == event.OpAcquire && e.Kind == event.KindOK:
			lastOK[e.Proc] = e.T
			lease[e.Proc] = e.Detail
			until[e.Proc] = e.Until
			depth[e.Proc]++
			read[e.Proc] = e.Result == ModeRead
		case e.Op == event.OpAcquire && e.Kind == event.KindRenew:
			until[e.Proc] = e.Until
		case e.Op == event.OpRelease && e.Kind == event.KindCall:
			releaseCall[e.Proc] = e.T
			if skipped[e.Proc] > 0 {
				skipped[e.Proc]--
			} else {
				depth[e.Proc] = max(0, depth[e.Proc]-1)
			}
		case e.Kind == event.KindKeyTouch:
			c, other := e.Peer, e.Detail
			expire := e.Result == event.ResultExpire
			otherAt, ok := claim(other, c, e.T, e.Held, true, expire)
			if !ok {
				other = ""
				for _, b := range h.Clients {
					if at, ok := claim(b, c, e.T, e.Held, false, expire); ok && (other == "" || at > otherAt) {
						other, otherAt = b, at
					}
				}
				if other == "" {
					continue
				}
			}
			v := OwnershipViolation{Client: c, Op: "release", AcquiredAt: lastOK[c], At: e.T, Other: other, OtherAt: otherAt, Node: e.Proc}
			k := key{client: c, op: "release", at: releaseCall[c]}
			if e.Result == event.ResultExpire {
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
