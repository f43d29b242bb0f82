package sim

import (
	"fmt"
	"strconv"
	"strings"

	evt "github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// Slot migration in a cluster world, as the Redis Cluster specification
// and redis-cli --cluster reshard do it: CLUSTER SETSLOT slot IMPORTING on
// the target's primary, MIGRATING on the source's, MIGRATE of the slot's
// keys (DUMP and RESTORE with the key's remaining TTL, the key deleted on
// the source once the target has it), then SETSLOT slot NODE target. While
// the slot migrates, the source serves a command whose keys it holds and
// answers -ASK slot target for one whose key it lacks (-TRYAGAIN when it
// holds some of them); the target serves the slot only to a connection that
// sent ASKING just before (ASKING lasts one command) and answers -MOVED to
// the source otherwise. Once SETSLOT NODE has run, the source answers
// -MOVED to the target.
//
// The configuration is the world's one (the cluster bus's gossip is
// instant): the MIGRATING and IMPORTING marks are kept per slot beside the
// shard that set them, not per node.

// clusterSlots is a cluster world's slot configuration beyond the initial
// split (ShardSlots). Its maps are looked up, never ranged over.
type clusterSlots struct {
	owner     map[int]int // slot -> shard, for slots moved off their initial shard
	migrating map[int]int // slot -> the shard it migrates to (marked on its owner)
	importing map[int]int // slot -> the shard importing it
	asks      int64       // -ASK replies
}

func newClusterSlots() *clusterSlots {
	return &clusterSlots{owner: map[int]int{}, migrating: map[int]int{}, importing: map[int]int{}}
}

// slotOwner is the shard that serves slot now.
func (w *World) slotOwner(slot int) int {
	if s, ok := w.slots.owner[slot]; ok {
		return s
	}
	return SlotShard(slot, w.shards())
}

// setSlotOwner ends any migration of slot and gives it to shard s.
func (w *World) setSlotOwner(slot, s int) {
	delete(w.slots.migrating, slot)
	delete(w.slots.importing, slot)
	if s == SlotShard(slot, w.shards()) {
		delete(w.slots.owner, slot)
		return
	}
	w.slots.owner[slot] = s
}

// shardRanges are the slot ranges shard s serves, in slot order: the
// initial split's one range while no slot has moved.
func (w *World) shardRanges(s int) [][2]int {
	if len(w.slots.owner) == 0 {
		first, last := ShardSlots(s, w.shards())
		return [][2]int{{first, last}}
	}
	var out [][2]int
	for slot := 0; slot < ClusterSlotCount; slot++ {
		if w.slotOwner(slot) != s {
			continue
		}
		if k := len(out); k > 0 && out[k-1][1] == slot-1 {
			out[k-1][1] = slot
			continue
		}
		out = append(out, [2]int{slot, slot})
	}
	return out
}

// slotRoute decides a keyed command's fate on primary-or-replica n for a
// command whose keys hash to slot: "" (serve it) or the error to answer
// (-MOVED, -ASK, -TRYAGAIN). asking: the connection sent ASKING just before.
func (n *Node) slotRoute(slot int, keys []string, asking bool) string {
	w := n.w
	s, mine := w.clusterBase(n.id)+w.slotOwner(slot), w.shardOf(n.id)
	if n.replicaOf < 0 && s == mine && (w.cfail == nil || !w.cfail.stale(n)) {
		dst, ok := w.slots.migrating[slot]
		if !ok {
			return ""
		}
		have := 0
		for _, k := range keys {
			if n.m.Exists(k) {
				have++
			}
		}
		switch {
		case have == len(keys):
			return ""
		case have > 0:
			return "TRYAGAIN Multiple keys request during rehashing of slot"
		}
		w.slots.asks++
		return "ASK " + strconv.Itoa(slot) + " " + clusterAddr(w.shardPrimary(dst))
	}
	if n.replicaOf < 0 && asking {
		if imp, ok := w.slots.importing[slot]; ok && imp == mine {
			return ""
		}
	}
	// Another shard's slot, or n is a replica (a replica redirects every
	// keyed command to its primary unless the connection sent READONLY,
	// which go-redis's ClusterClient does only with ReadOnly set).
	w.clusterMoved++
	return "MOVED " + strconv.Itoa(slot) + " " + clusterAddr(w.shardPrimary(s))
}

// clusterSetSlot answers CLUSTER SETSLOT slot IMPORTING|MIGRATING|NODE id
// and CLUSTER SETSLOT slot STABLE on node n.
func (n *Node) clusterSetSlot(args []string) string {
	w := n.w
	if w.clusterCount() > 1 {
		return "ERR slot migration is modelled for one cluster, and this world has " + strconv.Itoa(w.clusterCount())
	}
	if len(args) < 4 {
		return "ERR wrong number of arguments for 'CLUSTER SETSLOT'"
	}
	slot, err := strconv.Atoi(args[2])
	if err != nil || slot < 0 || slot >= ClusterSlotCount {
		return "ERR Invalid or out of range slot"
	}
	if n.replicaOf >= 0 {
		return "ERR Please use SETSLOT only with masters."
	}
	action := strings.ToUpper(args[3])
	if action == "STABLE" {
		delete(w.slots.migrating, slot)
		delete(w.slots.importing, slot)
		return ""
	}
	if len(args) != 5 {
		return "ERR wrong number of arguments for 'CLUSTER SETSLOT'"
	}
	other := w.clusterNodeByID(args[4])
	if other == nil {
		return "ERR I don't know about node " + args[4]
	}
	mine, owner := w.shardOf(n.id), w.slotOwner(slot)
	switch action {
	case "MIGRATING":
		if owner != mine {
			return fmt.Sprintf("ERR I'm not the owner of hash slot %d", slot)
		}
		w.slots.migrating[slot] = w.shardOf(other.id)
	case "IMPORTING":
		if owner == mine {
			return fmt.Sprintf("ERR I'm already the owner of hash slot %d", slot)
		}
		w.slots.importing[slot] = mine
	case "NODE":
		if owner == mine && w.shardOf(other.id) != mine && n.countKeysInSlot(slot) > 0 {
			return fmt.Sprintf("ERR Can't assign hashslot %d to a different node while I still hold keys for this hash slot.", slot)
		}
		w.setSlotOwner(slot, w.shardOf(other.id))
	default:
		return "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"
	}
	return ""
}

// clusterNodeByID is the node whose cluster node id is id, or nil.
func (w *World) clusterNodeByID(id string) *Node {
	for _, n := range w.nodes {
		if clusterNodeID(n) == id {
			return n
		}
	}
	return nil
}

// keysInSlot are n's keys in slot, sorted (miniredis's Keys are).
func (n *Node) keysInSlot(slot int) []string {
	var out []string
	for _, k := range n.m.Keys() {
		if KeySlot(k) == slot {
			out = append(out, k)
		}
	}
	return out
}

func (n *Node) countKeysInSlot(slot int) int { return len(n.keysInSlot(slot)) }

// migrateCmd answers MIGRATE host port key|"" db timeout [COPY] [REPLACE]
// [KEYS key...] on node n: the keys move to the node at host:port with
// their remaining TTL (migrateKeys).
func (n *Node) migrateCmd(c *conn, args []string) {
	if n.w.clusterCount() > 1 {
		c.peer.WriteError("ERR slot migration is modelled for one cluster, and this world has " + strconv.Itoa(n.w.clusterCount()))
		return
	}
	if len(args) < 6 {
		c.peer.WriteError("ERR wrong number of arguments for 'migrate' command")
		return
	}
	dst, err := n.w.clusterNodeByAddr(args[1] + ":" + args[2])
	if err != nil {
		c.peer.WriteError("IOERR error or timeout connecting to the client")
		return
	}
	copyKeys, replace := false, false
	keys := []string{args[3]}
	for i := 6; i < len(args); i++ {
		switch strings.ToUpper(args[i]) {
		case "COPY":
			copyKeys = true
		case "REPLACE":
			replace = true
		case "KEYS":
			if args[3] != "" {
				c.peer.WriteError("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			keys = args[i+1:]
			i = len(args)
		default:
			c.peer.WriteError("ERR syntax error")
			return
		}
	}
	moved, msg := n.migrateKeys(dst, keys, copyKeys, replace)
	switch {
	case msg != "":
		c.peer.WriteError(msg)
	case moved == 0:
		c.peer.WriteInline("NOKEY")
	default:
		c.peer.WriteOK()
	}
}

// migrateKeys moves n's keys among keys to dst, as MIGRATE does: each
// keeps its value and its remaining TTL (RESTORE's ttl is relative, so the
// expiry lands on dst's clock as the same time left), replicated on dst
// and, unless copyKeys, deleted on n. It returns how many keys moved, or
// the error MIGRATE answers.
func (n *Node) migrateKeys(dst *Node, keys []string, copyKeys, replace bool) (int, string) {
	w := n.w
	if !dst.up || dst.pausedUntil > w.now() || !w.net.reachable(n.addr(), dst.addr()) {
		return 0, "IOERR error or timeout connecting to the client"
	}
	n.tick()
	dst.tick()
	states := map[string]keyState{}
	var moved []string
	for _, k := range keys {
		s := n.captureKey(k, n.lastLocal)
		if !s.exists {
			continue
		}
		if !replace && dst.m.Exists(k) {
			return 0, "BUSYKEY Target key name already exists."
		}
		if s.expireAt != 0 {
			s.expireAt = dst.lastLocal + (s.expireAt - n.lastLocal)
		}
		states[k] = s
		moved = append(moved, k)
	}
	if len(moved) == 0 {
		return 0, ""
	}
	dst.apply(states)
	dst.afterWrite(moved)
	if !copyKeys {
		for _, k := range moved {
			n.m.Del(k)
			delete(n.owners, k)
		}
		n.afterWrite(moved)
	}
	return len(moved), ""
}

// startMigration begins slot migration fault i (f) of a cluster world:
// each lock key's slot (Config.WatchKeys) migrates from the shard serving
// it to the next shard, as redis-cli --cluster reshard moves it: IMPORTING
// and MIGRATING now, MIGRATE of the slot's keys halfway through the
// fault's duration (retried every 100 ms while the target is unreachable),
// SETSLOT NODE at its end (or at the heal, whichever is first; the slot
// stays on its new shard after the heal).
func (w *World) startMigration(i int, f faults.Fault, start, end int64) {
	if w.shards() < 2 {
		return
	}
	var slots []int
	for _, k := range w.cfg.WatchKeys {
		if s := KeySlot(k); !containsInt(slots, s) {
			slots = append(slots, s)
		}
	}
	for _, slot := range slots {
		if _, busy := w.slots.migrating[slot]; busy {
			continue // another migration of it is under way
		}
		src := w.slotOwner(slot)
		dst := (src + 1) % w.shards()
		w.slots.migrating[slot] = dst
		w.slots.importing[slot] = dst
		w.record(Event{Proc: "world", Kind: evt.KindReconfigure, Fault: i + 1,
			Detail: fmt.Sprintf("slot %d migrating: shard %d (%s) -> shard %d (%s)", slot, src, w.shardPrimary(src).name, dst, w.shardPrimary(dst).name)})
		if e := w.effect(i + 1); e != nil {
			e.targets = append(e.targets, w.shardPrimary(src), w.shardPrimary(dst))
		}
		m := &migration{w: w, fault: i + 1, slot: slot, src: src, dst: dst}
		w.migrations = append(w.migrations, m)
		w.after(start+(end-start)/2, "migrate", m.moveKeys)
		w.after(end, "migrate", m.finish)
	}
}

// migration is one slot's migration under way.
type migration struct {
	w          *World
	fault      int
	slot       int
	src, dst   int
	keysMoved  bool
	done       bool
	migrateErr string
}

// moveKeys runs MIGRATE of the slot's keys from the source's primary to
// the target's; it retries every 100 ms while that fails, until finish.
func (m *migration) moveKeys() {
	w := m.w
	if m.done || m.keysMoved {
		return
	}
	src, dst := w.shardPrimary(m.src), w.shardPrimary(m.dst)
	keys := src.keysInSlot(m.slot)
	n, msg := src.migrateKeys(dst, keys, false, false)
	if msg != "" {
		if m.migrateErr == "" {
			m.migrateErr = msg
			w.record(Event{Proc: "world", Kind: evt.KindReconfigure, Fault: m.fault,
				Detail: fmt.Sprintf("slot %d: MIGRATE %s -> %s failed (%s); retrying every 100ms", m.slot, src.name, dst.name, msg)})
		}
		if w.phase == "safety" {
			w.after(w.now()+int64(sentinelTick), "migrate", m.moveKeys)
		}
		return
	}
	m.keysMoved = true
	m.noteMoved(keys)
	w.record(Event{Proc: "world", Kind: evt.KindReconfigure, Fault: m.fault,
		Detail: fmt.Sprintf("slot %d: MIGRATE %d keys %s -> %s, TTL kept", m.slot, n, src.name, dst.name)})
}

// finish ends the migration with SETSLOT NODE: the keys that are left
// move first (the heal makes every node reachable), then the slot is the
// target shard's.
func (m *migration) finish() {
	w := m.w
	if m.done {
		return
	}
	if !m.keysMoved {
		src, dst := w.shardPrimary(m.src), w.shardPrimary(m.dst)
		keys := src.keysInSlot(m.slot)
		if _, msg := src.migrateKeys(dst, keys, false, true); msg != "" {
			if w.phase == "safety" {
				w.after(w.now()+int64(sentinelTick), "migrate", m.finish)
				return
			}
		} else {
			m.noteMoved(keys)
		}
		m.keysMoved = true
	}
	m.done = true
	w.setSlotOwner(m.slot, m.dst)
	w.record(Event{Proc: "world", Kind: evt.KindReconfigure, Fault: m.fault,
		Detail: fmt.Sprintf("slot %d: SETSLOT NODE %s: shard %d serves it (the source answers MOVED)", m.slot, w.shardPrimary(m.dst).name, m.dst)})
}

// noteMoved counts the lock keys among keys that MIGRATE moved
// (FaultEffect.LiveKeys: a migration that moved a live lock key bit).
func (m *migration) noteMoved(keys []string) {
	e := m.w.effect(m.fault)
	if e == nil {
		return
	}
	for _, k := range keys {
		if containsString(m.w.cfg.WatchKeys, k) {
			e.LiveKeys++
		}
	}
}

func containsString(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// healMigrations finishes every migration still under way at the heal.
func (w *World) healMigrations() {
	for _, m := range w.migrations {
		m.finish()
	}
}

func containsInt(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
