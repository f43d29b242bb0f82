package catalogue

import (
	"context"
	"fmt"
	"time"

	"github.com/locksim/locksim/locks"
)

func init() {
	Register(locks.Info{
		ID:       "cluster-set-nx-cad",
		Design:   "set-nx-cad on a Redis Cluster through go-redis's ClusterClient: SET key value NX PX ttl on the key's slot's primary, release by Lua compare-and-delete there",
		Source:   "“The SETNX command” (Redisson in cluster mode), “Redis and ZooKeeper locks” (CSDN) (lock loss in cluster mode); set-nx-cad's commands on a cluster",
		Weakness: "as set-nx-cad: a holder paused past the TTL keeps acting while another client holds the key; the key lives on one shard's primary, whose async replica may be promoted without it",
		Topology: locks.Cluster,
		// set-nx-cad's lease and retries; no WAIT: go-redis's ClusterClient
		// sends a keyless WAIT to a node of its choosing, not the key's primary.
		Params:    cadParams(3*time.Second, false),
		Configure: configureCAD(false, func(c SetNXCAD) locks.Lock { return &ClusterCAD{c: c} }),
	})
}

// ClusterCAD is SetNXCAD's commands sent through a go-redis ClusterClient
// (Env.Cluster): the SET NX PX and the compare-and-delete script go to the
// primary of the key's slot, found from the client's slot map and MOVED
// replies. Its lease is set-nx-cad's: start+TTL on the holder's clock.
type ClusterCAD struct {
	c SetNXCAD
}

// Acquire implements Lock.
func (l *ClusterCAD) Acquire(ctx context.Context) (locks.Lease, error) {
	env := l.c.Env
	if env.Cluster == nil {
		return locks.Lease{}, fmt.Errorf("cluster-set-nx-cad: the world gives no Redis Cluster client (Env.Cluster): it runs in a cluster world only")
	}
	value := randomValue(env.Rand)
	var lastErr error
	for try := 0; try < max(1, l.c.Tries); try++ {
		if try > 0 {
			env.Clock.Sleep(l.c.RetryDelay)
		}
		start := env.Clock.Now()
		ok, err := env.Cluster.SetNX(ctx, env.Key, value, l.c.TTL).Result()
		env.At(locks.PointAcquiring)
		if err != nil {
			lastErr = err
			continue
		}
		if ok {
			env.At(locks.PointAfterCheck)
			return locks.Lease{Value: value, Start: start, ValidUntil: start.Add(l.c.TTL)}, nil
		}
		lastErr = nil
	}
	if lastErr != nil {
		return locks.Lease{}, lastErr
	}
	return locks.Lease{}, locks.ErrNotAcquired
}

// Release implements Lock.
func (l *ClusterCAD) Release(ctx context.Context, lease locks.Lease) error {
	env := l.c.Env
	if env.Cluster == nil {
		return fmt.Errorf("cluster-set-nx-cad: the world gives no Redis Cluster client (Env.Cluster)")
	}
	n, err := cadScript.Run(ctx, env.Cluster, []string{env.Key}, lease.Value).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return locks.ErrNotOwner
	}
	return nil
}
