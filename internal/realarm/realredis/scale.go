package realredis

import (
	"github.com/locksim/locksim/locks"
)

// ScaleLock returns info with every duration parameter of its table (its
// TTL included) multiplied by k (locks.Info.Scaled): the lock the real arm
// runs when it plays a scenario k times faster. A lock without a table
// (the Redisson and zk designs, go-zero: their durations are fixed inside
// them) is refused unless it has no lease either (nothing to scale). The
// world's and the workload's durations are scaled by the scenario builder
// itself (scenarios.Params.TTL).
func ScaleLock(info locks.Info, k float64) (locks.Info, error) { return info.Scaled(k) }
