//go:build !locksim_noredsync

package catalogue

import (
	"context"

	rsredis "github.com/go-redsync/redsync/v4/redis"
)

// grownPool is a redsync pool whose Get first grows the calling
// goroutine's stack in one step. redsync runs every request to a node on a
// goroutine of its own (Lock, Extend and Unlock start one per node), which
// starts on a small stack and grows it by doubling as the request descends
// through go-redis into the simulated connection: each doubling copies the
// stack and walks every frame on it. Growing once while the stack is still
// shallow (Get is redsync's first call on the new goroutine) does the same
// growth for a fraction of the cost (the technique of CockroachDB's
// util/growstack). It changes nothing the library sees: Get returns the
// wrapped pool's connection.
type grownPool struct{ rsredis.Pool }

func (p grownPool) Get(ctx context.Context) (rsredis.Conn, error) {
	growStack()
	return p.Pool.Get(ctx)
}

// growStack needs a frame of 5 KiB, so a goroutine that calls it near the
// top of its stack grows the stack to 8 KiB at once, with few frames to
// walk, instead of doubling deep inside go-redis. 8 KiB is what a request
// needs: with it, no copy is left under go-redis in a report row's profile
// (BenchmarkReportRow; 12 KiB measured no better). The buffer goes to a
// function that does nothing and cannot be inlined, so it stays on the
// stack and the compiler keeps it; redsync runs its goroutines at once,
// so nothing here may write shared memory (a package variable as a sink
// was a data race).
//
//go:noinline
func growStack() {
	var buf [5 << 10]byte
	growUse(buf[:])
}

//go:noinline
func growUse([]byte) {}
