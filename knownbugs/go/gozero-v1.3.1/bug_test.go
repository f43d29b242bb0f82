// The buggy side of knownbugs/bugs/gozero-reacquire-no-refresh.yaml:
// go-zero v1.3.1, whose RedisLock.Acquire (core/stores/redis/redislock.go:
// 45-49) counts a second call on the same lock as a re-entry and returns
// true without a command, so the holder that refreshes its lock by calling
// Acquire again refreshes nothing.
package knownbug

import (
	"testing"
	"time"

	"example.com/knownbugs/gozerokit"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

// opts are the same on both sides (gozero-v1.3.2/bug_test.go): one node,
// two clients, network faults only, a lock refreshed every second, a
// pinned search.
var opts = locktest.Options{
	Topology: locks.Single, Clients: 2, TTL: 3 * time.Second,
	Kinds:  []faults.Kind{faults.Delay, faults.Partition},
	Renews: true, Checks: 40, Seed: 1,
}

func TestKnownBug(t *testing.T) {
	gozerokit.Measure(t, gozerokit.Side{ID: "gozero-reacquire-no-refresh", Side: "buggy", Options: opts, Unsafe: true},
		gozerokit.Runs(t, 2))
}
