package checker

import (
	"strings"

	"github.com/locksim/locksim/event"
)

// Ownership with key truth (History.KeyTruth) is a small state machine:
// one hold per client, moved by that client's own lock events, and the
// nodes' "key-touch" records judged against every hold. A new rule is a
// new transition (a hold method) or a new claim condition, each with a
// history under testdata/ownership/.
//
// It counts the releases and renewals that touched a key of a lock
// another client held: a delete is A's release (or whatever A was doing:
// a delete of B's key takes B's lock away), a TTL change is A's renewal.
// One release or renewal that touched several nodes (Redlock) counts once.
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

// holdState is where a client's hold is (hold.state): what its own
// events have said so far. A release call ends a hold at once (what the
// release then did is the nodes' to say), so there is no releasing
// state.
type holdState uint8

const (
	holdIdle      holdState = iota // no hold, no acquisition in flight
	holdAcquiring                  // an acquire call in flight, no hold
	holdHolding                    // a hold (or nested reentrant holds), nothing in flight
	holdNesting                    // a hold, and a nested acquire call in flight
)

func (s holdState) String() string {
	return [...]string{"idle", "acquiring", "holding", "holding+acquiring"}[s]
}

// hold is one client's hold of the lock, as its own events tell it.
type hold struct {
	// acquiring: an acquire call (OpID pending) is in flight.
	acquiring bool
	pending   int64
	// acquired: the client has had an acquire ok with a live lease; at,
	// lease and until are the latest one's.
	acquired bool
	at       int64  // its time
	lease    string // its lease value (Event.Detail; comma-separated for a multi-key lease)
	until    int64  // the end of its lease, renewals included (0: until release)
	opID     int64  // its acquire's OpID
	depth    int    // acquire oks not yet followed by a release call (reentrant holds nest)
	dead     int    // acquire oks whose lease was over on return, not yet followed by a release call
	read     bool   // the latest acquire ok (dead or not) was a read hold
	released int64  // the latest release call
}

func (h *hold) state() holdState {
	switch {
	case h.depth > 0 && h.acquiring:
		return holdNesting
	case h.depth > 0:
		return holdHolding
	case h.acquiring:
		return holdAcquiring
	}
	return holdIdle
}

// acquireCall: an acquisition is in flight.
func (h *hold) acquireCall(e *Event) { h.acquiring, h.pending = true, e.OpID }

// acquireReturned: an acquire's outcome (ok, fail, unknown) ends the
// acquisition in flight. An ok begins a hold, or nests one in the hold
// (reentrant), unless its lease had already run out when Acquire returned
// (as in Ownership): that is a hold of no one's, the latest acquisition
// stays the one before it, and its release call ends nothing else.
func (h *hold) acquireReturned(e *Event) {
	h.acquiring = false
	if e.Kind != event.KindOK {
		return
	}
	h.read = e.Result == ModeRead
	if e.Until != 0 && e.Until <= e.T {
		h.dead++
		return
	}
	h.acquired, h.at, h.lease, h.until, h.opID = true, e.T, e.Detail, e.Until, e.OpID
	h.depth++
}

// renewFailed: the holder stopped believing in the acquisition e names
// (an earlier hold's late report leaves the current one alone).
func (h *hold) renewFailed(e *Event) {
	if e.OpID != 0 && h.opID != 0 && e.OpID != h.opID {
		return
	}
	h.until = e.T
}

// renew: the lease was extended to e.Until.
func (h *hold) renew(e *Event) { h.until = e.Until }

// releaseCall ends the innermost hold: a dead one first.
func (h *hold) releaseCall(e *Event) {
	h.released = e.T
	if h.dead > 0 {
		h.dead--
	} else {
		h.depth = max(0, h.depth-1)
	}
}

// claims reports whether h held the lock at t, when toucher a's command
// touched a key that held the values held, and since when. anyValue: the
// node says the key is h's client's (its last writer), so any lease value
// of h's counts. For a re-timing (expire), h's acquisition in flight
// counts too when its outcome (looked ahead) is an ok with a live lease
// and a value among held.
func (h *hold) claims(a *hold, t int64, held []string, anyValue, expire bool, outcome *Event) (int64, bool) {
	if h.acquiring && expire {
		if o := outcome; o != nil && o.Kind == event.KindOK && (o.Until == 0 || o.Until > o.T) &&
			!(a.read && o.Result == ModeRead) && among(o.Detail, held) {
			return o.T, true
		}
	}
	if !h.acquired || h.depth <= 0 || h.at > t || (h.until != 0 && h.until <= t) || (a.read && h.read) {
		return 0, false
	}
	if !anyValue && !among(h.lease, held) {
		return 0, false
	}
	return h.at, true
}

// among reports whether a value of the comma-separated value is a value of
// one of held's comma-separated entries.
func among(value string, held []string) bool {
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

// keyTruth is the machine: the holds, each acquisition's outcome (looked
// ahead), and the violations found.
type keyTruth struct {
	clients []string
	holds   map[string]*hold
	outcome map[opKey]*Event
	seen    map[touchKey]bool
	n       int
	first   *OwnershipViolation
}

type opKey struct {
	proc string
	id   int64
}

// touchKey is what one release or renewal is, to count it once however
// many nodes it touched: a release by its call, a renewal by whose hold it
// extended.
type touchKey struct {
	client, op, other string
	at                int64
}

func newKeyTruth(h History) *keyTruth {
	m := &keyTruth{clients: h.Clients, holds: map[string]*hold{}, outcome: map[opKey]*Event{}, seen: map[touchKey]bool{}}
	for i := range h.Events {
		if e := &h.Events[i]; e.Op == event.OpAcquire && (e.Kind == event.KindOK || e.Kind == event.KindFail || e.Kind == event.KindUnknown) {
			if _, dup := m.outcome[opKey{e.Proc, e.OpID}]; !dup {
				m.outcome[opKey{e.Proc, e.OpID}] = e
			}
		}
	}
	return m
}

func (m *keyTruth) hold(p string) *hold {
	h := m.holds[p]
	if h == nil {
		h = &hold{}
		m.holds[p] = h
	}
	return h
}

// step moves the machine by one event: the transition table.
func (m *keyTruth) step(e *Event) {
	switch {
	case e.Op == event.OpAcquire && e.Kind == event.KindCall:
		m.hold(e.Proc).acquireCall(e)
	case e.Op == event.OpAcquire && (e.Kind == event.KindOK || e.Kind == event.KindFail || e.Kind == event.KindUnknown):
		m.hold(e.Proc).acquireReturned(e)
	case e.Op == event.OpAcquire && e.Kind == event.KindRenew:
		m.hold(e.Proc).renew(e)
	case e.Op == event.OpAcquire && e.Kind == event.KindRenewFail:
		m.hold(e.Proc).renewFailed(e)
	case e.Op == event.OpRelease && e.Kind == event.KindCall:
		m.hold(e.Proc).releaseCall(e)
	case e.Kind == event.KindKeyTouch:
		m.touch(e)
	}
}

// claim: whether client b, not the toucher c, held the lock the touch e
// landed on, and since when (hold.claims).
func (m *keyTruth) claim(b, c string, a *hold, e *Event, anyValue, expire bool) (int64, bool) {
	h := m.holds[b]
	if b == c || h == nil {
		return 0, false
	}
	var o *Event
	if h.acquiring && expire {
		o = m.outcome[opKey{b, h.pending}]
	}
	return h.claims(a, e.T, e.Held, anyValue, expire, o)
}

// touch judges a key-touch: Peer's command deleted (del) or re-timed
// (expire) a key on node Proc whose last writer was Detail.
func (m *keyTruth) touch(e *Event) {
	c, other := e.Peer, e.Detail
	expire := e.Result == event.ResultExpire
	a := m.holds[c]
	if a == nil {
		a = &hold{}
	}
	otherAt, ok := m.claim(other, c, a, e, true, expire)
	if !ok {
		other = ""
		for _, b := range m.clients {
			if at, ok := m.claim(b, c, a, e, false, expire); ok && (other == "" || at > otherAt) {
				other, otherAt = b, at
			}
		}
		if other == "" {
			return
		}
	}
	v := OwnershipViolation{Client: c, Op: OwnRelease, AcquiredAt: a.at, At: e.T, Other: other, OtherAt: otherAt, Node: e.Proc}
	k := touchKey{client: c, op: OwnRelease, at: a.released}
	if expire {
		v.Op = OwnRenew
		k = touchKey{client: c, op: OwnRenew, other: other, at: otherAt}
	}
	if m.seen[k] {
		return
	}
	m.seen[k] = true
	m.n++
	if m.first == nil {
		m.first = &v
	}
}

// ownershipFromKeyTruth runs the machine over h.
func ownershipFromKeyTruth(h History) (int, *OwnershipViolation) {
	m := newKeyTruth(h)
	for i := range h.Events {
		m.step(&h.Events[i])
	}
	return m.n, m.first
}
