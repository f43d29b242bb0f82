package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	evt "github.com/locksim/locksim/event"
)

// TestClusterSlotMigration walks one slot's migration by hand on a
// cluster of 3 one-node shards, as redis-cli --cluster reshard does it,
// with the world's unmodified go-redis ClusterClient beside it:
//   - SETSLOT IMPORTING on the target and MIGRATING on the source; the
//     source still serves a key it holds, answers -ASK for one it lacks
//     (the ClusterClient follows it with ASKING and creates the key on the
//     target) and -TRYAGAIN for a command naming both;
//   - the target answers -MOVED to the source without ASKING and serves
//     the slot after it (ASKING lasts one command);
//   - SETSLOT NODE on the source is refused while it holds keys of the
//     slot; MIGRATE moves the key with its remaining TTL;
//   - after SETSLOT NODE the source answers -MOVED to the target, the
//     ClusterClient follows it, and CLUSTER SLOTS splits the source's range
//     around the slot.
func TestClusterSlotMigration(t *testing.T) {
	cfg := clusterConfig(3, 1)
	cfg.Topology = Topology{Shards: 3}
	present, absent := "{mig}present", "{mig}absent"
	slot := KeySlot(present)
	src := SlotShard(slot, 3)
	dst := (src + 1) % 3
	var slots []redis.ClusterSlot
	var pttl time.Duration
	cfg.Program = func(p *Proc) {
		ctx, cc, n := p.Context(), p.Cluster(), p.Nodes()
		id := func(i int) string { return clusterNodeID(p.w.nodes[i]) }
		cmd := func(op string, i int, args ...any) {
			do(p, op, func() (string, error) { return n[i].Do(ctx, args...).Text() })
		}
		do(p, "set present", func() (string, error) { return cc.Set(ctx, present, "v", 10*time.Second).Result() })
		cmd("importing", dst, "cluster", "setslot", slot, "importing", id(src))
		cmd("migrating", src, "cluster", "setslot", slot, "migrating", id(dst))
		do(p, "get present", func() (string, error) { return cc.Get(ctx, present).Result() })
		do(p, "set absent", func() (string, error) { return cc.Set(ctx, absent, "w", 0).Result() })
		cmd("mget both", src, "mget", present, absent)
		cmd("get absent on target", dst, "get", absent)
		do(p, "asking get absent on target", func() (string, error) {
			pipe := n[dst].Pipeline()
			pipe.Do(ctx, "asking")
			get := pipe.Get(ctx, absent)
			pipe.Exec(ctx)
			return get.Result()
		})
		cmd("node too early", src, "cluster", "setslot", slot, "node", id(dst))
		cmd("migrate", src, "migrate", fmt.Sprintf("n%d", dst), ClusterPort, "", 0, 1000, "keys", present)
		cmd("get present after migrate", src, "get", present)
		do(p, "pttl on target", func() (string, error) {
			pipe := n[dst].Pipeline()
			pipe.Do(ctx, "asking")
			c := pipe.PTTL(ctx, present)
			pipe.Exec(ctx)
			d, err := c.Result()
			pttl = d
			return d.String(), err
		})
		cmd("node on target", dst, "cluster", "setslot", slot, "node", id(dst))
		cmd("get present on source", src, "get", present)
		do(p, "get present moved", func() (string, error) { return cc.Get(ctx, present).Result() })
		slots, _ = n[0].ClusterSlots(ctx).Result()
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	dstAddr, srcAddr := fmt.Sprintf("n%d:6379", dst), fmt.Sprintf("n%d:6379", src)
	for _, c := range []struct{ op, result, want string }{
		{"set present", resOK, "OK"},
		{"importing", resOK, "OK"},
		{"migrating", resOK, "OK"},
		{"get present", resOK, "v"},
		{"set absent", resOK, "OK"},
		{"mget both", resErr, "TRYAGAIN"},
		{"get absent on target", resErr, fmt.Sprintf("MOVED %d %s", slot, srcAddr)},
		{"asking get absent on target", resOK, "w"},
		{"node too early", resErr, "ERR Can't assign hashslot"},
		{"migrate", resOK, "OK"},
		{"get present after migrate", resErr, fmt.Sprintf("ASK %d %s", slot, dstAddr)},
		{"node on target", resOK, "OK"},
		{"get present on source", resErr, fmt.Sprintf("MOVED %d %s", slot, dstAddr)},
		{"get present moved", resOK, "v"},
	} {
		o := one(t, ops, c.op)
		got := o.Reply
		if o.Result == resErr {
			got = o.Detail
		}
		if o.Result != c.result || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %s %q, want %s %q", c.op, o.Result, got, c.result, c.want)
		}
	}
	// The ClusterClient's SET of the absent key: -ASK from the source,
	// then ASKING and the SET on the target.
	var askFrom, setOn string
	for _, ev := range res.History {
		if ev.Kind != evt.KindCmd || !strings.HasPrefix(ev.Cmd, "set "+absent) {
			continue
		}
		if strings.HasPrefix(ev.Reply, "-ASK") {
			askFrom = ev.Proc
		} else if ev.Reply == "+OK" {
			setOn = ev.Proc
		}
	}
	if askFrom != fmt.Sprintf("n%d", src) || setOn != fmt.Sprintf("n%d", dst) {
		t.Errorf("SET of the absent key: -ASK from %q, created on %q; want n%d then n%d", askFrom, setOn, src, dst)
	}
	// MIGRATE kept the TTL: 10 s less the little virtual time that passed.
	if pttl <= 9*time.Second || pttl > 10*time.Second {
		t.Errorf("PTTL on the target after MIGRATE: %v, want just under 10s", pttl)
	}
	// CLUSTER SLOTS: the slot is the target's, the source's range split.
	owner := map[int]string{}
	for _, s := range slots {
		for x := s.Start; x <= s.End; x++ {
			if _, dup := owner[x]; dup {
				t.Fatalf("slot %d in two ranges: %+v", x, slots)
			}
			owner[x] = s.Nodes[0].Addr
		}
	}
	if len(owner) != ClusterSlotCount || owner[slot] != dstAddr || owner[slot-1] != srcAddr && owner[slot+1] != srcAddr {
		t.Errorf("CLUSTER SLOTS after the migration: %d slots, slot %d on %s: %+v", len(owner), slot, owner[slot], slots)
	}
	if len(slots) != 4 && len(slots) != 5 {
		t.Errorf("CLUSTER SLOTS: want the source's range split around the slot, got %+v", slots)
	}
}
