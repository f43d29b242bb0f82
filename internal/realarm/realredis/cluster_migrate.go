package realredis

// A slot-migration fault on a real cluster, carried out as the simulator
// carries it out (sim/cluster_migrate.go startMigration, moveKeys,
// finish) and as redis-cli --cluster reshard does it: each lock key's
// slot moves from the shard serving it to the next shard. At the fault's
// start CLUSTER SETSLOT slot IMPORTING on the target's primary, then
// MIGRATING on the source's; halfway through the fault's duration MIGRATE
// of the slot's keys (CLUSTER GETKEYSINSLOT, then MIGRATE host port ""
// 0 timeout KEYS ..., which keeps each key's remaining TTL), retried
// every 100 ms (scaled) while it fails; at the fault's end, or the heal,
// whichever is first, the keys left move (REPLACE) and CLUSTER SETSLOT
// slot NODE target runs on the target's primary, the source's, then every
// other primary. MIGRATE goes node to node: the source dials the target's
// announced address, its gateway (cluster.go), which passes a connection
// from another shard's node straight to the node.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

// maxSlotKeys bounds the keys one GETKEYSINSLOT asks for (a lock world's
// slot holds its lock key and a fencing counter at most).
const maxSlotKeys = 1000

// realMigration is one slot's migration under way on a real cluster.
type realMigration struct {
	w        *world
	fault    int // 0-based
	slot     int
	src, dst int // shards
	from, to int // their primaries (nodes)

	mu        sync.Mutex
	keysMoved bool
	done      bool
	failed    bool // a MIGRATE failure was recorded
}

// slotOwner is the shard serving slot now, as the harness moved it;
// c.mu held.
func (c *clusterSide) slotOwnerLocked(slot int) int {
	if s, ok := c.owner[slot]; ok {
		return s
	}
	return sim.SlotShard(slot, c.shards)
}

// slotMigration begins slot-migration fault i (f) and returns what its
// end does (finish every migration it began).
func (w *world) slotMigration(i int, f faults.Fault) func() {
	c := w.clus
	if c == nil || c.shards < 2 {
		return nil
	}
	var slots []int
	for _, k := range w.cfg.WatchKeys {
		if s := sim.KeySlot(k); !slices.Contains(slots, s) {
			slots = append(slots, s)
		}
	}
	var started []*realMigration
	for _, slot := range slots {
		c.mu.Lock()
		if c.owner == nil {
			c.owner = map[int]int{}
		}
		if c.migrating[slot] {
			c.mu.Unlock()
			continue // another migration of it is under way
		}
		src := c.slotOwnerLocked(slot)
		dst := (src + 1) % c.shards
		m := &realMigration{w: w, fault: i, slot: slot, src: src, dst: dst, from: c.primary[src], to: c.primary[dst]}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(w.ctx, 2*time.Second)
		err := w.setSlot(ctx, m.to, slot, "IMPORTING", m.from)
		if err == nil {
			err = w.setSlot(ctx, m.from, slot, "MIGRATING", m.to)
		}
		cancel()
		if err != nil {
			w.harnessError(fmt.Errorf("fault %d: %w", i+1, err))
			continue
		}
		c.mu.Lock()
		if c.migrating == nil {
			c.migrating = map[int]bool{}
		}
		c.migrating[slot] = true
		c.mu.Unlock()
		w.record(sim.Event{Proc: "world", Kind: event.KindReconfigure, Fault: i + 1,
			Detail: fmt.Sprintf("slot %d migrating: shard %d (%s) -> shard %d (%s)", slot, src, w.servers[m.from].name, dst, w.servers[m.to].name)})
		w.noteEffect(i, func(*sim.FaultEffect) { w.targets[i] = append(w.targets[i], m.from, m.to) })
		w.mu.Lock()
		w.migrations = append(w.migrations, m)
		w.mu.Unlock()
		started = append(started, m)
		time.AfterFunc(f.Duration/2, m.moveKeys)
	}
	return func() {
		for _, m := range started {
			m.finish()
		}
	}
}

// setSlot runs CLUSTER SETSLOT slot action <other's id> on node n.
func (w *world) setSlot(ctx context.Context, n, slot int, action string, other int) error {
	err := w.servers[n].admin.Do(ctx, "CLUSTER", "SETSLOT", slot, action, w.clus.ids[other]).Err()
	if err != nil {
		return fmt.Errorf("%s: CLUSTER SETSLOT %d %s %s: %w", w.servers[n].name, slot, action, w.servers[other].name, err)
	}
	return nil
}

// retryEvery is how often a failed MIGRATE is tried again: the
// simulator's 100 ms, scaled as the run is.
func (m *realMigration) retryEvery() time.Duration {
	return max(10*time.Millisecond, time.Duration(float64(100*time.Millisecond)*m.w.job.Scale))
}

// migrate moves the slot's keys from the source's primary to the
// target's with MIGRATE (replace: with REPLACE); m.mu held. It returns
// the keys moved (those present when MIGRATE ran, NOKEY: none).
func (m *realMigration) migrate(replace bool) ([]string, error) {
	w := m.w
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Second)
	defer cancel()
	src := w.servers[m.from]
	keys, err := src.admin.ClusterGetKeysInSlot(ctx, m.slot, maxSlotKeys).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER GETKEYSINSLOT %d on %s: %w", m.slot, src.name, err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	host, port, _ := net.SplitHostPort(w.clus.gateways[m.to].addr())
	args := []any{"MIGRATE", host, port, "", 0, strconv.FormatInt(max(1, liveTimeout.Milliseconds()), 10)}
	if replace {
		args = append(args, "REPLACE")
	}
	args = append(args, "KEYS")
	for _, k := range keys {
		args = append(args, k)
	}
	res, err := src.admin.Do(ctx, args...).Text()
	if err != nil {
		return nil, err
	}
	if res == "NOKEY" {
		return nil, nil
	}
	return keys, nil
}

// moveKeys runs MIGRATE halfway through the fault, retried while it
// fails until finish.
func (m *realMigration) moveKeys() {
	w := m.w
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done || m.keysMoved || w.stopping() {
		return
	}
	keys, err := m.migrate(false)
	if err != nil {
		if !m.failed {
			m.failed = true
			w.record(sim.Event{Proc: "world", Kind: event.KindReconfigure, Fault: m.fault + 1,
				Detail: fmt.Sprintf("slot %d: MIGRATE %s -> %s failed (%v); retrying every %v", m.slot, w.servers[m.from].name, w.servers[m.to].name, err, m.retryEvery())})
		}
		time.AfterFunc(m.retryEvery(), m.moveKeys)
		return
	}
	m.keysMoved = true
	m.noteMoved(keys)
	w.record(sim.Event{Proc: "world", Kind: event.KindReconfigure, Fault: m.fault + 1,
		Detail: fmt.Sprintf("slot %d: MIGRATE %d keys %s -> %s, TTL kept", m.slot, len(keys), w.servers[m.from].name, w.servers[m.to].name)})
}

// finish ends the migration with SETSLOT NODE: the keys that are left
// move first, then the slot is the target shard's on the target, the
// source and every other primary.
func (m *realMigration) finish() {
	w := m.w
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done || w.ctx.Err() != nil {
		return
	}
	if !m.keysMoved {
		keys, err := m.migrate(true)
		if err != nil {
			if !w.stopping() {
				time.AfterFunc(m.retryEvery(), m.finish)
			}
			return
		}
		m.keysMoved = true
		m.noteMoved(keys)
	}
	m.done = true
	c := w.clus
	order := []int{m.to, m.from}
	c.mu.Lock()
	for _, p := range c.primary {
		if !slices.Contains(order, p) {
			order = append(order, p)
		}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Second)
	defer cancel()
	for _, n := range order {
		if w.servers[n].isDown() {
			continue // it learns the slot's owner by gossip when back
		}
		if err := w.setSlot(ctx, n, m.slot, "NODE", m.to); err != nil {
			w.harnessError(fmt.Errorf("fault %d: %w", m.fault+1, err))
			return
		}
	}
	c.mu.Lock()
	delete(c.migrating, m.slot)
	if m.dst == sim.SlotShard(m.slot, c.shards) {
		delete(c.owner, m.slot)
	} else {
		c.owner[m.slot] = m.dst
	}
	c.mu.Unlock()
	w.record(sim.Event{Proc: "world", Kind: event.KindReconfigure, Fault: m.fault + 1,
		Detail: fmt.Sprintf("slot %d: SETSLOT NODE %s: shard %d serves it (the source answers MOVED)", m.slot, w.servers[m.to].name, m.dst)})
}

// noteMoved counts the lock keys among keys that MIGRATE moved
// (sim.FaultEffect.LiveKeys, as the simulator counts them).
func (m *realMigration) noteMoved(keys []string) {
	live := 0
	for _, k := range keys {
		if slices.Contains(m.w.cfg.WatchKeys, k) {
			live++
		}
	}
	if live > 0 {
		m.w.noteEffect(m.fault, func(e *sim.FaultEffect) { e.LiveKeys += live })
	}
}

// healMigrations finishes every migration still under way at the heal.
func (w *world) healMigrations() {
	w.mu.Lock()
	ms := slices.Clone(w.migrations)
	w.mu.Unlock()
	for _, m := range ms {
		m.finish()
	}
}
