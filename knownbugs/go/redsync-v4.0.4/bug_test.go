// The fixed side of knownbugs/bugs/redsync-extend-unlock-after-expiry.yaml:
// redsync v4.0.4, whose Mutex.touch (mutex.go:189-193) compares the extend
// script's reply with int64(0), so an Extend that found the key
// gone or another's on a quorum of nodes fails.
package knownbug

import (
	"errors"
	"testing"
	"time"

	"example.com/knownbugs/redsynckit"
	"example.com/knownbugs/redsynckit/v9pool"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

// lib is this module's redsync (go.mod pins the version) over go-redis v9
// (v9pool: this version ships adapters up to go-redis v8). It has no
// Mutex.Until: the holder believes start plus expiry (redsynckit.Lib).
var lib = redsynckit.Lib{
	New: func(env locks.Env, expiry time.Duration, value func() (string, error), delay func(int) time.Duration) redsynckit.Mutex {
		pools := make([]rsredis.Pool, len(env.Nodes))
		for i, c := range env.Nodes {
			pools[i] = v9pool.New(c)
		}
		return redsync.New(pools...).NewMutex(env.Key, redsync.WithExpiry(expiry), redsync.WithTries(4),
			redsync.WithGenValueFunc(value), redsync.WithRetryDelayFunc(delay))
	},
	NotAcquired: func(err error) bool { return errors.Is(err, redsync.ErrFailed) },
}

// opts are the same on both sides (redsync-v4.0.3/bug_test.go): three
// independent nodes, client pauses at the renewal only (the holder's
// Extend is then sent after its key expired, which is what touch
// misreads), a renewing lock, a pinned search. A careful holder would
// have given the lock up at the end of its belief, before that Extend's
// reply, so the bug only shows in code that goes on after the pause:
// careless code. Every unfenced lease lock's careless holder writes late
// after such a pause (a resource violation); what only a lock that
// believes a failed renewal does is a double hold, the holder believing
// again while another holds, so the search counts that class only
// (redsynckit.Measure).
var opts = locktest.Options{
	Topology: locks.Independent, Nodes: 3, Clients: 2, TTL: 3 * time.Second,
	Kinds:       []faults.Kind{faults.ClientPause},
	PausePoints: []locks.PausePoint{locks.PointRenewing},
	Targets:     locktest.ClientsOnly,
	Workload:    locktest.Careless,
	ExpectClass: checker.ClassDoubleHold,
	Renews:      true, Checks: 40, Seed: 1,
}

func TestKnownBug(t *testing.T) {
	redsynckit.Measure(t, redsynckit.Side{ID: "redsync-extend-unlock-after-expiry", Side: "fixed", Lib: lib, Options: opts, Unsafe: false},
		redsynckit.Runs(t, 2))
}
