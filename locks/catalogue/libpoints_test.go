package catalogue

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// Inside a library's lock call every reply marks PointAcquiring, as the
// catalogue's locks mark it after each of their requests: a pause armed
// while redislock retries lands on the next try, the winning one
// included, not only on the first try of an acquisition. The handshake
// marks nothing, and nothing is marked outside the lock call.
func TestLibPointsMarkEveryReply(t *testing.T) {
	var marked []locks.PausePoint
	env := locks.Env{Hooks: locks.Hooks{At: func(pt locks.PausePoint) { marked = append(marked, pt) }}}
	h := &libPoints{env: env}
	set := func() redis.Cmder { return redis.NewStatusCmd(context.Background(), "set", "k", "v", "nx") }
	hello := redis.NewMapStringInterfaceCmd(context.Background(), "hello", "2")

	h.replied(set()) // not armed: no lock call running
	h.arm()
	h.replied(hello) // the connection's handshake
	for i := 0; i < 3; i++ {
		h.replied(set()) // three tries of the library's retry loop
	}
	h.disarm()
	h.replied(set())
	if len(marked) != 3 {
		t.Fatalf("marked %v, want acquiring once per reply of the three tries", marked)
	}
	for _, pt := range marked {
		if pt != locks.PointAcquiring {
			t.Fatalf("marked %v, want only %s", marked, locks.PointAcquiring)
		}
	}
}
