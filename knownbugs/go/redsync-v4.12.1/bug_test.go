// The fixed side of knownbugs/bugs/redsync-extend-error-releases.yaml:
// redsync v4.12.1, whose Mutex.touch (mutex.go:279-296) returns the error
// of the pool it failed on and releases nothing.
package knownbug

import (
	"errors"
	"testing"
	"time"

	"example.com/knownbugs/redsynckit"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

// lib is this module's redsync (go.mod pins the version), through its own
// go-redis v9 adapter.
var lib = redsynckit.Lib{
	New: func(env locks.Env, expiry time.Duration, value func() (string, error), delay func(int) time.Duration) redsynckit.Mutex {
		pools := make([]rsredis.Pool, len(env.Nodes))
		for i, c := range env.Nodes {
			pools[i] = rsgoredis.NewPool(c)
		}
		return redsync.New(pools...).NewMutex(env.Key, redsync.WithExpiry(expiry), redsync.WithTries(4),
			redsync.WithGenValueFunc(value), redsync.WithRetryDelayFunc(delay))
	},
	Until: func(m redsynckit.Mutex) time.Time { return m.(*redsync.Mutex).Until() },
	NotAcquired: func(err error) bool {
		var taken *redsync.ErrTaken
		return errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken)
	},
}

// opts are the same on both sides (redsync-v4.12.0/bug_test.go): three
// independent nodes, network faults only (a reply late past go-redis's
// read timeout is the error that sends touch into its clean-up), a
// renewing lock, a pinned search.
var opts = locktest.Options{
	Topology: locks.Independent, Nodes: 3, Clients: 2, TTL: 3 * time.Second,
	Kinds:  []faults.Kind{faults.Delay, faults.Partition},
	Renews: true, Checks: 40, Seed: 1,
}

func TestKnownBug(t *testing.T) {
	redsynckit.Measure(t, redsynckit.Side{ID: "redsync-extend-error-releases", Side: "fixed", Lib: lib, Options: opts, Unsafe: false},
		redsynckit.Runs(t, 2))
}
