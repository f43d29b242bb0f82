package scenarios

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/sim"
)

// TestClusterFileLanguage: topology.failover and the slot-migration fault
// in the file language. failover: cluster sets the world's
// ClusterFailover; nX@key names nX of the lock key's shard and nX@other
// every other shard's; a wrong failover value, the cluster's own failover
// or a slot migration for a lock that is not a cluster lock, and nX@key
// past a shard's nodes, are refused with the field named.
func TestClusterFileLanguage(t *testing.T) {
	const head = "id: t\ndescription: a cluster test.\nclients: {count: 2}\nduration: 4ttl\n"
	cluster, _ := catalogue.Get("cluster-set-nx-cad")
	plain, _ := catalogue.Get("set-nx-cad")
	build := func(body string, lock string) (sim.Config, error) {
		t.Helper()
		f, err := Parse("t.yaml", []byte(head+body))
		if err != nil {
			return sim.Config{}, err
		}
		info := cluster
		if lock == "set-nx-cad" {
			info = plain
		}
		return f.Scenario().Build(info, 1, Params{})
	}
	cfg, err := build("topology: {replicated: true, nodes: 2, down_after: 500ms, failover: cluster}\n"+
		"faults:\n  - {kind: partition, start: 1ttl, duration: 1ttl, from: [n0@key, c0], to: [n1@key, n0@other, c1]}\n", "cluster-set-nx-cad")
	if err != nil {
		t.Fatal(err)
	}
	ks := sim.SlotShard(sim.KeySlot(LockKey), 3)
	if !cfg.Topology.ClusterFailover || cfg.Topology.Shards != 3 {
		t.Fatalf("topology %+v: want the cluster's own failover on 3 shards", cfg.Topology)
	}
	from, to := strings.Join(cfg.Faults[0].From, ","), strings.Join(cfg.Faults[0].To, ",")
	wantTo := []string{}
	for s := 0; s < 3; s++ {
		if s != ks {
			wantTo = append(wantTo, "n"+string(rune('0'+2*s)))
		}
	}
	if from != "c0,n"+string(rune('0'+2*ks)) || !strings.Contains(to, "n"+string(rune('0'+2*ks+1))) || !strings.Contains(to, wantTo[0]) || !strings.Contains(to, wantTo[1]) {
		t.Errorf("partition from %s to %s: want the key's shard (%d) primary against its replica and the other primaries", from, to, ks)
	}
	if _, err := build("faults:\n  - {kind: slot-migration, start: 1ttl, duration: 1ttl}\n", "cluster-set-nx-cad"); err != nil {
		t.Errorf("slot-migration on a cluster lock: %v", err)
	}
	for _, tc := range []struct{ body, lock, want string }{
		{"topology: {replicated: true, failover: raft}\n", "cluster-set-nx-cad", "topology.failover"},
		{"topology: {replicated: true, down_after: 1s, failover: cluster}\n", "set-nx-cad", "not a replicated Redis Cluster"},
		{"faults:\n  - {kind: slot-migration, start: 1ttl, duration: 1ttl}\n", "set-nx-cad", "not a cluster"},
		{"faults:\n  - {kind: slot-migration, start: 1ttl, duration: 1ttl, targets: [n0]}\n", "cluster-set-nx-cad", "targets do not apply"},
		{"faults:\n  - {kind: crash, start: 1ttl, duration: 1ttl, targets: [n3@key]}\n", "cluster-set-nx-cad", "no node n3@key"},
		{"topology: {replicated: true, down_after: 1s, failover: cluster}\nfaults:\n  - {kind: slot-migration, start: 1ttl, duration: 1ttl}\n", "cluster-set-nx-cad", "a failover during a migration is not modelled"},
	} {
		_, err := build(tc.body, tc.lock)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q for %s: %v, want an error containing %q", tc.body, tc.lock, err, tc.want)
		}
	}
}
