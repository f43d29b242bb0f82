package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// KeyChange is one change a client's command made to a lock key on a
// primary node: the simulator's key log (sim.KeyChange) without the
// simulator's types. Values are a string's value or a hash's field names
// joined by ","; expiry times are on the node's own clock.
type KeyChange struct {
	T     int64  // true time the command ran on the node (it landed)
	Sent  int64  // true time its client sent it (0: unknown)
	Local int64  // the node's clock when it ran
	Node  string // the node
	Key   string
	Peer  string // the client whose command it was
	Cmd   string // the command, as the trace summarizes it
	// Was and Now are the key's value before and after; Existed and
	// Exists whether there was a key; WasExpireAt and ExpireAt its
	// deadlines on the node's clock (0: none).
	Was, Now              string
	Existed, Exists       bool
	WasExpireAt, ExpireAt int64
	WasBy                 string // the client whose write set Was ("" unknown)
}

// KeyLog is what clients' writes did to the lock keys in a run, in the
// order they ran. Capped: the log stopped short of the run's end.
type KeyLog struct {
	Changes []KeyChange
	Capped  bool
	// Persistence is each node's durability on crash ("none",
	// "everysec", "always"), by node name; absent: unknown.
	Persistence map[string]string
}

// Cause says, for violation v of history h, why the first holder's key
// went away: for the involved client whose hold began first, what
// happened to the value its acquisition set, on each node that held it,
// between its acquire call and the moment the other involved client's
// acquisition succeeded (or v itself): expired by that node's clock
// (with the TTL it was set with), deleted or overwritten by whose
// command (sent when, landed when, in which of its sender's operations),
// lost in a crash, or left behind by a failover. "unknown" when the key
// log cannot tell. "" when v is nil.
//
// It reads the history's acquisitions, operations, crashes, failovers
// and faults, and the key log; it is pure, like every checker.
func Cause(h History, log KeyLog, v *Violation) string {
	if v == nil {
		return ""
	}
	type hold struct {
		c        string
		ok, call int64
		value    string
	}
	var hs []hold
	for _, c := range v.Clients {
		if ok, call, value, found := lastAcquire(h, c, v.T); found {
			hs = append(hs, hold{c, ok, call, value})
		}
	}
	if len(hs) == 0 {
		return "cause unknown: no involved client held the lock at the violation"
	}
	slices.SortStableFunc(hs, func(a, b hold) int {
		switch {
		case a.ok < b.ok:
			return -1
		case a.ok > b.ok:
			return 1
		}
		return 0
	})
	first, end, second := hs[0], v.T, ""
	switch {
	case v.Kind == KindOwnership && len(hs) == 2 && len(v.Clients) == 2:
		// A release or renewal touched another's key: follow the key it
		// touched, up to the touch.
		if hs[0].c == v.Clients[1] {
			first, second = hs[0], hs[1].c
		} else {
			first, second = hs[1], hs[0].c
		}
	case len(hs) > 1 && hs[1].c != first.c:
		end, second = hs[1].ok, hs[1].c
	}
	if first.value == "" {
		return fmt.Sprintf("cause unknown: %s's acquisition at %s recorded no lease value to follow", first.c, at(first.ok))
	}
	c := causer{h: h, log: log, holder: first.c, value: first.value, from: first.call, ok: first.ok, end: end, second: second}
	lines := c.nodes()
	head := fmt.Sprintf("why %s's key went away (acquired at %s)", first.c, at(first.ok))
	if second != "" && v.Kind != KindOwnership {
		head = fmt.Sprintf("why %s could take %s's key (acquired at %s) at %s", second, first.c, at(first.ok), at(end))
	}
	if len(lines) == 0 {
		lines = []string{fmt.Sprintf("unknown: no node's key log shows %s's value %s", first.c, short(first.value))}
	}
	if log.Capped {
		lines = append(lines, "the key log was capped: later changes were not recorded")
	}
	return head + ": " + strings.Join(lines, "; ")
}

// causer follows one holder's value through the key log.
type causer struct {
	h        History
	log      KeyLog
	holder   string
	value    string
	from     int64 // the holder's acquire call
	ok       int64 // the holder's acquire ok
	end      int64 // the second holder's acquire ok (or the violation)
	second   string
	opsIndex map[string][]opSpan
}

// keyState is what the log says of one key on one node since the
// holder's value was set there.
type keyFate struct {
	node, key  string
	set        KeyChange // the change that gave the key the holder's value
	expireAt   int64     // its deadline on the node's clock (0: none)
	lastT      int64     // true time and node clock of the last change seen
	lastLocal  int64
	retimedBy  string // another client's command re-timed it meanwhile
	line       string // what happened, once known
	secondWon  bool   // the second holder's command created the key later
	secondLine string
}

// nodes tells, per node and key the holder's value reached, its fate; and
// the nodes where the second holder won without the holder's value ever
// being there (a failover's promoted replica).
func (c *causer) nodes() []string {
	var fates []*keyFate
	find := func(node, key string) *keyFate {
		for _, f := range fates {
			if f.node == node && f.key == key {
				return f
			}
		}
		return nil
	}
	var seconds []KeyChange // the second holder's creations on nodes without the holder's value
	for _, e := range c.log.Changes {
		if e.T > c.end {
			break
		}
		if e.T < c.from {
			continue
		}
		f := find(e.Node, e.Key)
		if f == nil || f.line != "" {
			if e.Peer == c.holder && e.Exists && holds(e.Now, c.value) && f == nil {
				fates = append(fates, &keyFate{node: e.Node, key: e.Key, set: e, expireAt: e.ExpireAt, lastT: e.T, lastLocal: e.Local})
			} else if f == nil && e.Peer == c.second && !e.Existed && e.Exists {
				seconds = append(seconds, e)
			}
			continue
		}
		c.step(f, e)
	}
	var lines []string
	for _, f := range fates {
		if f.line == "" {
			c.finish(f)
		}
		lines = append(lines, f.line)
	}
	for _, e := range seconds {
		if find(e.Node, e.Key) != nil {
			continue
		}
		lines = append(lines, c.neverHad(e))
	}
	return lines
}

// step applies change e on f's key while it holds the holder's value.
func (c *causer) step(f *keyFate, e KeyChange) {
	defer func() { f.lastT, f.lastLocal = e.T, e.Local }()
	where := c.where(f)
	switch {
	case !e.Existed:
		// The value went away without a command: expiry, a crash, a
		// failover; e recreated the key.
		f.line = where + " " + c.vanished(f, e.T, e.Local) + fmt.Sprintf(", then %s's %s created it anew at %s", e.Peer, e.Cmd, at(e.T))
	case !holds(e.Was, c.value):
		f.line = where + fmt.Sprintf(" held %s (not %s's value) when %s's %s ran at %s: it changed without a client's command (a restart or a failover)",
			short(e.Was), c.holder, e.Peer, e.Cmd, at(e.T))
	case !e.Exists:
		f.line = where + " was deleted by " + c.command(e) + c.beforeReply(e)
	case !holds(e.Now, c.value):
		f.line = where + " was overwritten (to " + short(e.Now) + ") by " + c.command(e) + c.beforeReply(e)
	default:
		if e.Peer != c.holder && e.ExpireAt != f.expireAt {
			f.retimedBy = fmt.Sprintf("re-timed by %s at %s (%s)", e.Peer, at(e.T), e.Cmd)
		}
		f.expireAt = e.ExpireAt
	}
}

// finish tells what became of a key still holding the holder's value at
// its last change: by the end of the window it expired, was lost in a
// crash, was left on a failed-over primary, or was still there.
func (c *causer) finish(f *keyFate) {
	where := c.where(f)
	// The node's clock at the window's end, by its offset at the last
	// change (drift over the window is small against a TTL).
	localEnd := f.lastLocal + (c.end - f.lastT)
	if f.expireAt != 0 && f.expireAt <= localEnd {
		f.line = where + " " + c.vanished(f, c.end, localEnd)
		return
	}
	if fo, ok := c.failover(f.node, f.set.T, c.end); ok {
		f.line = where + " " + c.failedOver(f, fo)
		return
	}
	if s := c.lost(f, c.end); s != "" {
		f.line = where + " " + s
		return
	}
	if cf := c.clockFault(f.node, f.lastT, c.end); cf != "" {
		// The node's clock moved after the last change: when the key
		// expired by that clock is not known from the log.
		f.line = fmt.Sprintf("%s was changed by no command after %s, and %s's clock was moved after that (%s): it may have expired by that clock before %s", where, at(f.lastT), f.node, cf, at(c.end))
		return
	}
	f.line = where + " was still there at " + at(c.end)
	if fo, ok := c.failover(f.node, -1, c.end); ok && !c.demoted(f.node, fo.T, c.end) {
		f.line += fmt.Sprintf(", on a primary the failover at %s (%s) had replaced and Sentinel had not yet demoted (two primaries)", at(fo.T), fo.Detail)
	}
}

// demoted reports whether Sentinel demoted node between t0 and t1.
func (c *causer) demoted(node string, t0, t1 int64) bool {
	for _, e := range c.h.Events {
		if e.T > t1 {
			break
		}
		if e.T >= t0 && e.Kind == event.KindDemote && strings.HasPrefix(e.Detail, node+" -> ") {
			return true
		}
	}
	return false
}

// vanished explains a value gone by true time t (node clock local)
// without a command: it expired, or a crash or failover lost it.
func (c *causer) vanished(f *keyFate, t, local int64) string {
	if f.expireAt != 0 && f.expireAt <= local {
		// A key set without an expiry (SETNX, then EXPIRE) has no TTL of
		// its own: ExpireAt is 0 at the set, and set.ExpireAt - set.Local
		// would print the node's clock reading, negated.
		ttl := "set without a TTL"
		if f.set.ExpireAt > 0 {
			ttl = fmt.Sprintf("a TTL of %v", time.Duration(f.set.ExpireAt-f.set.Local))
		}
		var s string
		if fl := c.clockFault(f.node, f.set.T, t); fl != "" {
			s = fmt.Sprintf("expired by %s's clock, due at %s on it, which %s moved (gone by %s; %s",
				f.node, at(f.expireAt), fl, at(t), ttl)
		} else {
			s = fmt.Sprintf("expired by %s's clock at ~%s (%s", f.node, at(f.lastT+f.expireAt-f.lastLocal), ttl)
		}
		if f.retimedBy != "" {
			s += "; " + f.retimedBy
		} else if f.set.ExpireAt == 0 {
			s += fmt.Sprintf(", given its expiry, %s on %s's clock, by a later command", at(f.expireAt), f.node)
		} else if f.expireAt != f.set.ExpireAt {
			s += fmt.Sprintf(", renewed by %s to end at %s on %s's clock", c.holder, at(f.expireAt), f.node)
		}
		if at(f.set.Local) != at(f.set.T) {
			s += fmt.Sprintf("; %s's clock read %s when it was set", f.node, at(f.set.Local))
		}
		return s + ")"
	}
	if fo, ok := c.failover(f.node, f.set.T, t); ok {
		return c.failedOver(f, fo)
	}
	if s := c.lost(f, t); s != "" {
		return s
	}
	return fmt.Sprintf("went away by %s for a reason the key log cannot tell (unknown)", at(t))
}

// failedOver tells a value left behind on a primary that failed over.
func (c *causer) failedOver(f *keyFate, fo Event) string {
	s := "stayed behind"
	for _, e := range c.h.Events {
		if e.T > fo.T {
			break
		}
		if e.T > f.set.T && e.Proc == f.node && e.Kind == event.KindCrash {
			s += fmt.Sprintf(" on %s, which crashed at %s", f.node, at(e.T))
			break
		}
	}
	return s + fmt.Sprintf(": the failover at %s (%s) promoted a replica", at(fo.T), fo.Detail)
}

// lost tells a crash of f's node between the value's set and t, or "".
func (c *causer) lost(f *keyFate, t int64) string {
	for _, e := range c.h.Events {
		if e.T > t {
			break
		}
		if e.T <= f.set.T || e.Proc != f.node || e.Kind != event.KindCrash {
			continue
		}
		// What the persistence mode kept survives the crash (the restart
		// reloads it, and that writes nothing to the key log): always
		// keeps every write, everysec every write a second old or more.
		s := fmt.Sprintf("was lost when %s crashed at %s", f.node, at(e.T))
		switch c.log.Persistence[f.node] {
		case "always":
			continue
		case "everysec":
			if e.T-f.lastT >= int64(time.Second) {
				continue
			}
			s = fmt.Sprintf("was lost when %s crashed at %s, less than a second after it was written (everysec: it may not have reached the disk)", f.node, at(e.T))
		}
		for _, r := range c.h.Events {
			if r.T >= e.T && r.Proc == f.node && r.Kind == event.KindRestart {
				s += fmt.Sprintf(" (it restarted at %s without it", at(r.T))
				if p := c.log.Persistence[f.node]; p != "" {
					s += ", persistence " + p
				}
				s += ")"
				break
			}
		}
		return s
	}
	return ""
}

// failover returns the first failover away from node between t0 and t1.
func (c *causer) failover(node string, t0, t1 int64) (Event, bool) {
	for _, e := range c.h.Events {
		if e.T > t1 {
			break
		}
		if e.T > t0 && e.Kind == event.KindFailover && strings.HasPrefix(e.Detail, node+" -> ") {
			return e, true
		}
	}
	return Event{}, false
}

// neverHad tells a node where the second holder's command created the
// key and the holder's value never was (in the window).
func (c *causer) neverHad(e KeyChange) string {
	where := fmt.Sprintf("on %s (key %s)", e.Node, e.Key)
	var last *Event // the node's last promotion before the command
	for i, fo := range c.h.Events {
		if fo.T > e.T {
			break
		}
		if fo.Kind == event.KindFailover && promoted(fo.Detail) == e.Node {
			last = &c.h.Events[i]
		}
	}
	if last != nil {
		return where + fmt.Sprintf(", promoted by the failover at %s (%s), %s's value never was: %s's %s created the key there at %s",
			at(last.T), last.Detail, c.holder, e.Peer, e.Cmd, at(e.T))
	}
	return where + fmt.Sprintf(" %s's value never was: %s's %s created the key there at %s", c.holder, e.Peer, e.Cmd, at(e.T))
}

// where names f's node and key.
func (c *causer) where(f *keyFate) string {
	return fmt.Sprintf("on %s, %s's key %s (set at %s: %s)", f.node, c.holder, f.key, at(f.set.T), f.set.Cmd)
}

// command tells who ran e, in which operation, sent when and landed when.
func (c *causer) command(e KeyChange) string {
	who := e.Peer + "'s"
	if e.Peer == c.holder {
		who = e.Peer + "'s own"
	}
	s := fmt.Sprintf("%s %s", who, e.Cmd)
	if e.Sent <= 0 {
		return s + fmt.Sprintf(", landed at %s (sent at an unknown time)", at(e.T))
	}
	s += fmt.Sprintf(", sent at %s, landed at %s", at(e.Sent), at(e.T))
	op, ok := c.opAt(e.Peer, e.Sent)
	switch {
	case !ok:
		s += fmt.Sprintf(" (outside any operation of %s's)", e.Peer)
	case op.end == 0:
		s += fmt.Sprintf(" (its %s, op %d, called at %s, still running)", op.op, op.id, at(op.call))
	case op.end < e.T:
		s += fmt.Sprintf(" (its %s, op %d, called at %s, had returned %s at %s: the command landed %v after it was sent)",
			op.op, op.id, at(op.call), op.kind, at(op.end), time.Duration(e.T-e.Sent).Round(time.Millisecond))
	default:
		s += fmt.Sprintf(" (its %s, op %d, called at %s)", op.op, op.id, at(op.call))
	}
	return s
}

// beforeReply says when another's command e struck the holder's key
// before the holder's acquisition returned: between its winning SET and
// the reply to it.
func (c *causer) beforeReply(e KeyChange) string {
	if e.T >= c.ok || e.Peer == c.holder {
		return ""
	}
	return fmt.Sprintf(", before the reply to that write reached %s (its acquire returned at %s)", c.holder, at(c.ok))
}

// opSpan is one operation of a client: its call and its outcome.
type opSpan struct {
	op        event.Op
	id        int64
	call, end int64 // end 0: no outcome recorded
	kind      event.Kind
}

// opAt returns client p's operation in flight at true time t (its call
// at or before t, its outcome at or after t or none).
func (c *causer) opAt(p string, t int64) (opSpan, bool) {
	if c.opsIndex == nil {
		c.opsIndex = map[string][]opSpan{}
		for _, e := range c.h.Events {
			if e.Op == "" || e.Proc == "store" {
				continue
			}
			ops := c.opsIndex[e.Proc]
			switch e.Kind {
			case event.KindCall:
				c.opsIndex[e.Proc] = append(ops, opSpan{op: e.Op, id: e.OpID, call: e.T})
			case event.KindOK, event.KindFail, event.KindUnknown:
				for i := len(ops) - 1; i >= 0; i-- {
					if ops[i].id == e.OpID && ops[i].op == e.Op && ops[i].end == 0 {
						ops[i].end, ops[i].kind = e.T, e.Kind
						break
					}
				}
			}
		}
	}
	var best opSpan
	found := false
	for _, o := range c.opsIndex[p] {
		if o.call > t {
			break
		}
		if o.end == 0 || o.end >= t {
			best, found = o, true
		}
	}
	if found {
		return best, true
	}
	// Not in flight: the latest operation called before t whose outcome
	// came first (a command the network held past its caller's timeout).
	for _, o := range c.opsIndex[p] {
		if o.call > t {
			break
		}
		best, found = o, true
	}
	return best, found
}

// clockFault names a clock fault on node that moved its clock between
// t0 and t1 (a jump in that span, a drift in force in it), or "".
func (c *causer) clockFault(node string, t0, t1 int64) string {
	for _, e := range c.h.Events {
		if e.T > t1 {
			break
		}
		if e.Proc != "world" || e.Kind != event.KindFault {
			continue
		}
		f, ok := c.h.FaultOf(e)
		if !ok || !slices.Contains(f.Targets, node) {
			continue
		}
		end := int64(f.End())
		if f.Duration <= 0 {
			end = c.h.Heal // a drift without a duration lasts until the heal
		}
		if (f.Kind == faults.ClockJump && e.T >= t0) || (f.Kind == faults.ClockDrift && end >= t0) {
			return f.String()
		}
	}
	return ""
}

// lastAcquire returns client c's latest acquire ok at or before t: its
// time, its call's time and its lease value.
func lastAcquire(h History, c string, t int64) (ok, call int64, value string, found bool) {
	i := upperBound(h.Events, t)
	var id int64
	for j := i - 1; j >= 0; j-- {
		e := &h.Events[j]
		if e.Proc != c || e.Op != event.OpAcquire {
			continue
		}
		switch {
		case !found && e.Kind == event.KindOK:
			ok, value, id, found = e.T, e.Detail, e.OpID, true
			call = e.T
		case found && e.Kind == event.KindCall && e.OpID == id:
			return ok, e.T, value, true
		}
	}
	return ok, call, value, found
}

// holds reports whether a key's value (a string, or a hash's field names
// joined by ",") is, or includes, the lease value v (comma-separated for
// a lease over several keys).
func holds(keyValue, v string) bool {
	if keyValue == "" || v == "" {
		return false
	}
	for _, t := range strings.Split(v, ",") {
		if t == keyValue || slices.Contains(strings.Split(keyValue, ","), t) {
			return true
		}
	}
	return false
}

// short cuts a value for a sentence.
func short(v string) string {
	if len(v) > 16 {
		return v[:13] + "..."
	}
	return v
}

// at renders a true time to the millisecond.
func at(t int64) string { return time.Duration(t).Round(time.Millisecond).String() }

// promoted is the node a failover's detail ("n0 -> n1", or in a cluster
// "n0 -> n1 (cluster shard 0, slots 0-5460)") names as promoted.
func promoted(detail string) string {
	_, after, ok := strings.Cut(detail, " -> ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(after, " ")
	return name
}
