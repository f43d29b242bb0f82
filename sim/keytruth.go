package sim

import (
	evt "github.com/locksim/locksim/event"
	"slices"
	"sort"
	"strings"
	"time"
)

// Key truth: what a node holds for a key (keyState), captured before and
// after a write and applied to a replica or a restarted node, and the
// ground truth of a watched key (keyOwner): who wrote its current value.

// keyOwner is a watched key's ground truth: the client whose write set
// its current value, and the values (keyState.held) it has held since it
// was created, oldest first, at most maxHeld of them. The slice is never
// written in place (replicas and snapshots share it).
type keyOwner struct {
	creator string
	values  []string
}

// maxHeld bounds keyOwner.values: a key rewritten by more writers than
// that between its creation and a touch is named by its last ones.
const maxHeld = 8

// with returns o after client c's write left the key holding v. A value
// the key held just before (a Redisson hash whose count changed: the
// same field names) is not listed twice.
func (o keyOwner) with(c, v string) keyOwner {
	vs := o.values
	if len(vs) > 0 && vs[len(vs)-1] == v {
		return keyOwner{creator: c, values: vs}
	}
	if len(vs) >= maxHeld {
		vs = vs[len(vs)-maxHeld+1:]
	}
	return keyOwner{creator: c, values: append(slices.Clip(vs), v)}
}

// keyState is one key's value and absolute expiry on the local clock of
// the node it was read from (0: no expiry).
type keyState struct {
	exists   bool
	typ      string
	str      string
	hash     [][2]string
	expireAt int64
	// owner is a watched key's ground truth (keyOwner), carried through
	// replication and persistence; zero when unknown or not watched.
	owner keyOwner
}

// watchedKeys are the watched keys (Config.WatchKeys) among a write's
// keys (nil keys: unknown, so every watched key).
func (n *Node) watchedKeys(out, keys []string) []string {
	for _, k := range n.w.cfg.WatchKeys {
		if keys == nil || slices.Contains(keys, k) {
			out = append(out, k)
		}
	}
	return out
}

// noteWatched compares a watched key before and after client c's write: a
// delete or a TTL change of a value another client set is a "key-touch"
// event, carrying the values the key held since it was created (Held);
// a new value makes c its creator.
func (n *Node) noteWatched(c string, k string, was keyState) {
	now := n.captureKey(k, n.local())
	n.logKeyChange(c, k, was, now)
	if n.owners == nil {
		n.owners = map[string]keyOwner{}
	}
	o := n.owners[k]
	switch {
	case !now.exists:
		delete(n.owners, k)
		if was.exists && o.creator != "" && o.creator != c {
			n.w.record(Event{Proc: n.name, Kind: evt.KindKeyTouch, Peer: c, Lock: k, Result: evt.ResultDel, Detail: o.creator, Held: o.values})
		}
	case !was.exists:
		n.owners[k] = keyOwner{}.with(c, now.held())
		n.keyWhileDrifting()
		n.w.keysSeen = true
	case now.str != was.str || !slices.Equal(now.hash, was.hash):
		n.owners[k] = o.with(c, now.held())
		n.keyWhileDrifting()
	case now.expireAt != was.expireAt && o.creator != "" && o.creator != c:
		n.w.record(Event{Proc: n.name, Kind: evt.KindKeyTouch, Peer: c, Lock: k, Result: evt.ResultExpire, Detail: o.creator, Held: o.values})
	}
}

// held is what a key-touch event says the key held (Event.Held): a
// string's value, or a hash's field names joined by ",".
func (s keyState) held() string {
	if s.typ != "hash" {
		return s.str
	}
	var b strings.Builder
	for i, f := range s.hash {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f[0])
	}
	return b.String()
}

func (n *Node) capture(keys []string) map[string]keyState {
	local := n.local()
	out := make(map[string]keyState, len(keys))
	for _, k := range keys {
		out[k] = n.captureKey(k, local)
	}
	return out
}

func (n *Node) captureKey(k string, local int64) keyState {
	// One database handle for the reads (db 0, the direct API's): a key
	// that does not exist has no type.
	db := n.m.DB(0)
	typ := db.Type(k)
	if typ == "" {
		return keyState{}
	}
	s := keyState{exists: true, typ: typ, owner: n.owners[k]}
	switch s.typ {
	case "string":
		s.str, _ = db.Get(k)
	case "hash":
		fields, _ := db.HKeys(k)
		sort.Strings(fields)
		for _, f := range fields {
			s.hash = append(s.hash, [2]string{f, db.HGet(k, f)})
		}
	default:
		return keyState{} // only strings and hashes are replicated and persisted
	}
	if ttl := db.TTL(k); ttl > 0 {
		s.expireAt = local + int64(ttl)
	}
	return s
}

// apply writes key states (read on another node or from disk, with expiry
// on the clock that read them: expiry times are absolute, as Redis 7
// replicates them) into this node.
func (n *Node) apply(states map[string]keyState) {
	n.tick()
	local := n.lastLocal
	for _, k := range sortedKeys(states) {
		s := states[k]
		n.m.Del(k)
		delete(n.owners, k)
		if !s.exists || (s.expireAt != 0 && s.expireAt <= local) {
			continue
		}
		if s.owner.creator != "" {
			if n.owners == nil {
				n.owners = map[string]keyOwner{}
			}
			n.owners[k] = s.owner
		}
		switch s.typ {
		case "string":
			n.m.Set(k, s.str)
		case "hash":
			for _, fv := range s.hash {
				n.m.HSet(k, fv[0], fv[1])
			}
		}
		if s.expireAt != 0 {
			n.m.SetTTL(k, time.Duration(s.expireAt-local))
		}
	}
}

func sortedKeys(m map[string]keyState) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// MaxKeyLog bounds Result.KeyLog: a run whose clients change the lock keys
// more often than that keeps the first MaxKeyLog changes and says so
// (Result.KeyLogCapped).
const MaxKeyLog = 1 << 16

// KeyChange is one change a client's command made to a watched lock key
// on a primary (Result.KeyLog): it created the key, gave it another value,
// deleted it or changed its TTL. Values are what keyState.held says (a
// string's value, a hash's field names joined by ","); expiry times are
// on the node's own clock. Like Effects it is outside the trace and its
// hash: it is what the trace's "cmd" lines show, kept for the checkers'
// readers without keeping every command.
type KeyChange struct {
	T     int64  // true time the command ran on the node (it landed)
	Sent  int64  // true time the client sent it (0: unknown, a paused node ran it later)
	Local int64  // the node's clock when it ran
	Node  string // the node
	Key   string
	Peer  string // the client whose command it was
	Cmd   string // the command, summarized as in the trace's "cmd" lines
	// Was and Now are the key's value before and after ("" and Existed or
	// Exists false: no key); WasExpireAt and ExpireAt its deadlines on the
	// node's clock (0: none).
	Was, Now              string
	Existed, Exists       bool
	WasExpireAt, ExpireAt int64
	// WasBy is the client whose write set the value the key held before
	// ("" unknown).
	WasBy string
}

// keyLog is the world's Result.KeyLog as it grows.
type keyLog struct {
	changes []KeyChange
	capped  bool
}

// logKeyChange appends client c's change to key k (was before its
// command, now after) to the key log, if the command changed anything.
// The command's summary is the one the trace just encoded (exec adds the
// "cmd" event before it compares the watched keys); its send time is the
// running event's (an arrival's).
func (n *Node) logKeyChange(c, k string, was, now keyState) {
	if was.exists == now.exists && was.held() == now.held() && was.str == now.str && was.expireAt == now.expireAt {
		return
	}
	l := &n.w.keyLog
	if len(l.changes) >= MaxKeyLog {
		l.capped = true
		return
	}
	l.changes = append(l.changes, KeyChange{T: n.w.now(), Sent: n.w.cur.sent, Local: n.local(), Node: n.name, Key: k, Peer: c,
		Cmd: string(n.w.trace.cmd), Was: was.held(), Now: now.held(), Existed: was.exists, Exists: now.exists,
		WasExpireAt: was.expireAt, ExpireAt: now.expireAt, WasBy: was.owner.creator})
}
