package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	evt "github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// TestKeySlot checks the slot function against the cluster
// specification's CRC16 check value and the slots Redis's CLUSTER KEYSLOT
// documentation gives, hash tags included.
func TestKeySlot(t *testing.T) {
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3 (CRC-16/XMODEM check value)", got)
	}
	for key, want := range map[string]int{
		"somekey": 11058, "foo{hash_tag}": 2515, "bar{hash_tag}": 2515, "hash_tag": 2515,
		"{}x": KeySlot("{}x"), "a{}{b}": int(crc16("a{}{b}") % ClusterSlotCount), "{b}{c}": KeySlot("b"),
	} {
		if got := KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if KeySlot("{}x") != int(crc16("{}x")%ClusterSlotCount) {
		t.Errorf("an empty hash tag must hash the whole key")
	}
}

// TestShardSlots: the split redis-cli --cluster create makes of 3 masters
// (0-5460, 5461-10922, 10923-16383), and for every n the ranges cover all
// slots once, in order.
func TestShardSlots(t *testing.T) {
	want := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	for s, w := range want {
		if f, l := ShardSlots(s, 3); f != w[0] || l != w[1] {
			t.Errorf("ShardSlots(%d, 3) = %d-%d, want %d-%d", s, f, l, w[0], w[1])
		}
	}
	for n := 1; n <= MaxNodes; n++ {
		next := 0
		for s := 0; s < n; s++ {
			f, l := ShardSlots(s, n)
			if f != next || l < f {
				t.Fatalf("n=%d: shard %d is %d-%d after %d", n, s, f, l, next-1)
			}
			if SlotShard(f, n) != s || SlotShard(l, n) != s {
				t.Fatalf("n=%d: SlotShard disagrees at shard %d", n, s)
			}
			next = l + 1
		}
		if next != ClusterSlotCount {
			t.Fatalf("n=%d: slots end at %d", n, next-1)
		}
	}
}

func TestClusterConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		topo  Topology
		nodes int
		want  string
	}{
		{Topology{Shards: 3}, 2, "out of range 1..2"},
		{Topology{Shards: 3}, 6, "need 3 nodes, got 6"},
		{Topology{Shards: 3, Replicated: true}, 7, "do not split into 3 shards"},
		{Topology{Shards: 3, Replicated: true}, 3, "do not split into 3 shards"},
		{Topology{Shards: 3, Replicated: true, Groups: 2}, 6, "a cluster world's groups are its shards: 3"},
	} {
		cfg := clusterConfig(tc.nodes, 1)
		cfg.Topology = tc.topo
		cfg.Program = func(*Proc) {}
		err := cfg.WithDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v with %d nodes: got %v, want an error containing %q", tc.topo, tc.nodes, err, tc.want)
		}
	}
}

// clusterConfig is a cluster world of the given nodes (shards set by the
// caller), one client, commands kept in the history.
func clusterConfig(nodes, clients int) Config {
	cfg := biteConfig(nodes, clients, 2*time.Second)
	cfg.Liveness = 100 * time.Millisecond
	return cfg
}

// clusterKeysSpread are keys in every shard of 3 (checked by the tests).
var clusterKeysSpread = []string{"somekey", "foo{hash_tag}", "bar{hash_tag}", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}

// clusterWork runs SET, GET and an EVAL through cc on every key of
// clusterKeysSpread and records each reply.
func clusterWork(p *Proc, cc *redis.ClusterClient) {
	ctx := p.Context()
	for _, k := range clusterKeysSpread {
		do(p, "set "+k, func() (string, error) { return cc.Set(ctx, k, "v-"+k, time.Minute).Result() })
	}
	for _, k := range clusterKeysSpread {
		do(p, "get "+k, func() (string, error) { return cc.Get(ctx, k).Result() })
		do(p, "eval "+k, func() (string, error) {
			return cc.Eval(ctx, "return redis.call('get', KEYS[1]) .. ARGV[1]", []string{k}, "!").Text()
		})
	}
}

// checkClusterWork checks clusterWork's replies and that each key lives
// on its slot's shard's primary and nowhere else.
func checkClusterWork(t *testing.T, res *Result) {
	t.Helper()
	for _, ev := range res.History {
		if ev.Kind == evt.KindError {
			t.Fatal(ev.Detail)
		}
	}
	ops := opsOf(t, res, "c0")
	shards := map[int]bool{}
	for _, k := range clusterKeysSpread {
		shards[SlotShard(KeySlot(k), 3)] = true
		if o := one(t, ops, "set "+k); o.Result != resOK {
			t.Errorf("set %s: %v", k, o)
		}
		if o := one(t, ops, "get "+k); o.Result != resOK || o.Reply != "v-"+k {
			t.Errorf("get %s: %v", k, o)
		}
		if o := one(t, ops, "eval "+k); o.Result != resOK || o.Reply != "v-"+k+"!" {
			t.Errorf("eval %s: %v", k, o)
		}
	}
	if len(shards) != 3 {
		t.Fatalf("the keys reach %d shards, want 3", len(shards))
	}
	// Where each SET ran: on its slot's primary (n0, n2, n4).
	for _, ev := range res.History {
		if ev.Kind != evt.KindCmd || !strings.HasPrefix(ev.Cmd, "set ") || ev.Reply != "+OK" {
			continue
		}
		k := strings.Fields(ev.Cmd)[1]
		if want := fmt.Sprintf("n%d", 2*SlotShard(KeySlot(k), 3)); ev.Proc != want {
			t.Errorf("%s ran on %s, slot %d is %s's", ev.Cmd, ev.Proc, KeySlot(k), want)
		}
	}
}

func movedReplies(res *Result) []Event {
	var out []Event
	for _, ev := range res.History {
		if ev.Kind == evt.KindCmd && strings.HasPrefix(ev.Reply, "-MOVED") {
			out = append(out, ev)
		}
	}
	return out
}

// TestClusterStockClient: go-redis's ClusterClient with its own defaults
// (routing policies, the slot map from CLUSTER SLOTS of a node it picks),
// given one seed node, runs SET, GET and EVAL on keys of all three shards
// of a replicated cluster; no node answers MOVED (go-redis's slot function
// and ours agree on every key); CLUSTER SLOTS and CLUSTER SHARDS parse with
// go-redis's own parsers and name each shard's primary and replica; a key
// sent to a node of another shard, or to a replica, gets MOVED to its
// primary.
func TestClusterStockClient(t *testing.T) {
	cfg := clusterConfig(6, 1)
	cfg.Topology = Topology{Replicated: true, Shards: 3}
	var slots []redis.ClusterSlot
	var shards []redis.ClusterShard
	var slotsErr, shardsErr error
	cfg.Program = func(p *Proc) {
		opt := p.clusterOptions()
		opt.Addrs = []string{"n0:6379"}
		opt.ClusterSlots, opt.DisableRoutingPolicies = nil, false
		cc := redis.NewClusterClient(opt)
		defer cc.Close()
		clusterWork(p, cc)
		slots, slotsErr = p.Nodes()[3].ClusterSlots(p.Context()).Result()
		shards, shardsErr = p.Nodes()[1].ClusterShards(p.Context()).Result()
		doGet(p, "get somekey on n0", p.Nodes()[0], "somekey")
		doGet(p, "get somekey on n5", p.Nodes()[5], "somekey")
		doGet(p, "get somekey on n4", p.Nodes()[4], "somekey")
		do(p, "crossslot", func() (string, error) {
			_, err := p.Nodes()[4].MGet(p.Context(), "somekey", "k1").Result()
			return "", err
		})
	}
	res := runBite(t, cfg)
	checkClusterWork(t, res)
	ops := opsOf(t, res, "c0")
	if n := len(movedReplies(res)); n != 2 {
		t.Errorf("want 2 MOVED replies (the two direct GETs), got %d: %+v", n, movedReplies(res))
	}
	// somekey is slot 11058: shard 2, primary n4.
	for _, op := range []string{"get somekey on n0", "get somekey on n5"} {
		if o := one(t, ops, op); o.Result != resErr || o.Detail != "MOVED 11058 n4:6379" {
			t.Errorf("%s: %v, want MOVED 11058 n4:6379", op, o)
		}
	}
	if o := one(t, ops, "get somekey on n4"); o.Result != resOK || o.Reply != "v-somekey" {
		t.Errorf("get on the slot's primary: %v", o)
	}
	if o := one(t, ops, "crossslot"); o.Result != resErr || !strings.HasPrefix(o.Detail, "CROSSSLOT") {
		t.Errorf("MGET of two slots: %v, want CROSSSLOT", o)
	}
	if slotsErr != nil || len(slots) != 3 {
		t.Fatalf("CLUSTER SLOTS: %v %+v", slotsErr, slots)
	}
	for s, sl := range slots {
		f, l := ShardSlots(s, 3)
		if sl.Start != f || sl.End != l || len(sl.Nodes) != 2 ||
			sl.Nodes[0].Addr != fmt.Sprintf("n%d:6379", 2*s) || sl.Nodes[1].Addr != fmt.Sprintf("n%d:6379", 2*s+1) || len(sl.Nodes[0].ID) != 40 {
			t.Errorf("CLUSTER SLOTS[%d] = %+v", s, sl)
		}
	}
	if shardsErr != nil || len(shards) != 3 {
		t.Fatalf("CLUSTER SHARDS: %v %+v", shardsErr, shards)
	}
	for s, sh := range shards {
		f, l := ShardSlots(s, 3)
		if len(sh.Slots) != 1 || sh.Slots[0].Start != int64(f) || sh.Slots[0].End != int64(l) || len(sh.Nodes) != 2 ||
			sh.Nodes[0].Role != "master" || sh.Nodes[0].Endpoint != fmt.Sprintf("n%d", 2*s) || sh.Nodes[0].Port != ClusterPort ||
			sh.Nodes[1].Role != "replica" || sh.Nodes[1].Health != "online" {
			t.Errorf("CLUSTER SHARDS[%d] = %+v", s, sh)
		}
	}
}

// TestClusterFollowsMoved: a ClusterClient whose slot map is stale (every
// slot on n0) sends keys of the other shards to n0, gets MOVED, follows it
// and succeeds; the world's own ClusterClient (Proc.Cluster) gets no MOVED.
func TestClusterFollowsMoved(t *testing.T) {
	cfg := clusterConfig(3, 1)
	cfg.Topology = Topology{Shards: 3}
	cfg.Program = func(p *Proc) {
		opt := p.clusterOptions()
		opt.ClusterSlots = func(context.Context) ([]redis.ClusterSlot, error) {
			return []redis.ClusterSlot{{Start: 0, End: ClusterSlotCount - 1, Nodes: []redis.ClusterNode{{Addr: "n0:6379"}}}}, nil
		}
		cc := redis.NewClusterClient(opt)
		defer cc.Close()
		for _, k := range clusterKeysSpread {
			do(p, "stale set "+k, func() (string, error) { return cc.Set(p.Context(), k, "x", time.Minute).Result() })
		}
		clusterWork(p, p.Cluster())
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	elsewhere := 0
	for _, k := range clusterKeysSpread {
		if o := one(t, ops, "stale set "+k); o.Result != resOK {
			t.Errorf("stale set %s: %v", k, o)
		}
		if SlotShard(KeySlot(k), 3) != 0 {
			elsewhere++
		}
	}
	// Each key of another shard: one MOVED, from n0, then the right node.
	moved := movedReplies(res)
	if len(moved) == 0 || len(moved) > elsewhere {
		t.Fatalf("want 1..%d MOVED replies (the stale client's, before its reload), got %d", elsewhere, len(moved))
	}
	for _, ev := range moved {
		if ev.Proc != "n0" || ev.T > res.History[len(res.History)-1].T {
			t.Errorf("MOVED from %s at %d", ev.Proc, ev.T)
		}
	}
	checkClusterWork2(t, res)
}

// checkClusterWork2 is checkClusterWork for a cluster of one node a shard
// (primaries n0, n1, n2).
func checkClusterWork2(t *testing.T, res *Result) {
	t.Helper()
	ops := opsOf(t, res, "c0")
	for _, k := range clusterKeysSpread {
		if o := one(t, ops, "get "+k); o.Result != resOK || o.Reply != "v-"+k {
			t.Errorf("get %s: %v", k, o)
		}
		if o := one(t, ops, "eval "+k); o.Result != resOK || o.Reply != "v-"+k+"!" {
			t.Errorf("eval %s: %v", k, o)
		}
	}
}

// TestClusterDeterminism: the same cluster world and seed give the same
// trace twice (three clients on Proc.Cluster, one of them reloading the
// slot map after a stale MOVED); another seed another trace.
func TestClusterDeterminism(t *testing.T) {
	run := func(seed uint64) string {
		cfg := clusterConfig(6, 3)
		cfg.Seed = seed
		cfg.Net.LatencyJitter = 300 * time.Microsecond
		cfg.Topology = Topology{Replicated: true, Shards: 3}
		cfg.Program = func(p *Proc) {
			for i := 0; !p.Stopping() && i < 20; i++ {
				k := clusterKeysSpread[(i+p.ID())%len(clusterKeysSpread)]
				ok, err := p.Cluster().SetNX(p.Context(), k, p.Name(), 50*time.Millisecond).Result()
				p.Record(Event{Kind: "op", Op: "setnx", Detail: errString(err), Value: b2i(ok)})
				if p.ID() == 0 && i == 5 {
					// A MOVED: the replica of somekey's shard redirects.
					p.Nodes()[5].Get(p.Context(), "somekey")
					p.Cluster().ReloadState(p.Context())
				}
				p.Sleep(10 * time.Millisecond)
			}
		}
		res := runBite(t, cfg)
		if len(movedReplies(res)) != 1 {
			t.Fatalf("want one MOVED, got %+v", movedReplies(res))
		}
		loads := 0
		for _, ev := range res.History {
			if ev.Kind == evt.KindCmd && ev.Cmd == "cluster slots" {
				loads++
			}
		}
		if loads != 4 {
			t.Fatalf("want 4 slot map loads (one a client, c0's reload), got %d", loads)
		}
		return res.TraceSHA256
	}
	a, b, c := run(1), run(1), run(2)
	if a != b {
		t.Fatalf("seed 1 twice: traces %s and %s differ", a, b)
	}
	if a == c {
		t.Fatalf("seeds 1 and 2 gave the same trace %s", a)
	}
}

// TestClusterFailover: a replicated cluster of 3 shards (n0,n1 / n2,n3 /
// n4,n5). c0 writes somekey (slot 11058, shard 2, primary n4) through its
// ClusterClient at 100 ms; replication lags 2 s, so n5 lacks it when n4
// crashes at 400 ms (a failover fault naming g2, shard 2). After the node
// timeout (DownAfter) n5 is promoted, and the failover names the shard and
// its slots; n4 restarts at 1.4 s and is demoted. c0's slot map still says
// n4 (go-redis reloads it on MOVED or every minute, not on a connection
// error): its GET at 2.5 s gets MOVED 11058 n5:6379 from n4, follows it,
// and reads nothing: the acknowledged write was lost at the promotion.
// CLUSTER SLOTS names n5 as shard 2's primary; the other shards kept theirs.
func TestClusterFailover(t *testing.T) {
	cfg := clusterConfig(6, 1)
	cfg.Duration = 3 * time.Second
	cfg.Topology = Topology{Replicated: true, Shards: 3, ReplLag: 2 * time.Second, DownAfter: 500 * time.Millisecond}
	cfg.Faults = []faults.Fault{{Kind: faults.Failover, Start: 400 * time.Millisecond, Duration: time.Second, Targets: []string{"g2"}}}
	var slots []redis.ClusterSlot
	cfg.Program = func(p *Proc) {
		sleepUntil(p, 100*time.Millisecond)
		do(p, "set", func() (string, error) { return p.Cluster().Set(p.Context(), "somekey", "v", 0).Result() })
		do(p, "set k4", func() (string, error) { return p.Cluster().Set(p.Context(), "k4", "v", 0).Result() })
		sleepUntil(p, 2500*time.Millisecond)
		do(p, "get", func() (string, error) { return p.Cluster().Get(p.Context(), "somekey").Result() })
		do(p, "get k4", func() (string, error) { return p.Cluster().Get(p.Context(), "k4").Result() })
		slots, _ = p.Nodes()[0].ClusterSlots(p.Context()).Result()
	}
	res := runBite(t, cfg)
	ops := opsOf(t, res, "c0")
	if o := one(t, ops, "set"); o.Result != resOK {
		t.Fatalf("set: %v", o)
	}
	if o := one(t, ops, "get"); o.Result != resNil {
		t.Errorf("get after the promotion: %v, want nil (the unreplicated write is lost)", o)
	}
	if SlotShard(KeySlot("k4"), 3) == 2 {
		t.Fatalf("k4 must live on another shard")
	}
	if o := one(t, ops, "get k4"); o.Result != resOK || o.Reply != "v" {
		t.Errorf("get k4 on a shard that did not fail over: %v", o)
	}
	fo := engineEvents(res, SentinelName, "failover")
	if len(fo) != 1 || fo[0].Detail != "n4 -> n5 (cluster shard 2, slots 10923-16383)" {
		t.Fatalf("want one failover of shard 2 naming its slots, got %+v", fo)
	}
	moved := movedReplies(res)
	if len(moved) != 1 || moved[0].Proc != "n4" || moved[0].Reply != "-MOVED 11058 n5:6379" || moved[0].T < fo[0].T {
		t.Fatalf("want n4's MOVED 11058 n5:6379 after the failover, got %+v", moved)
	}
	if len(slots) != 3 || slots[2].Nodes[0].Addr != "n5:6379" || slots[0].Nodes[0].Addr != "n0:6379" || slots[1].Nodes[0].Addr != "n2:6379" {
		t.Errorf("CLUSTER SLOTS after the failover: %+v", slots)
	}
}
