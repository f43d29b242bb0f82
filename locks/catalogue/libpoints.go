package catalogue

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
)

// libPoints marks the pause points inside a library's lock call, where the
// library offers no callback: a go-redis hook on the clients the library
// talks through. While Acquire runs the library's lock call (arm .. disarm),
// every command or pipeline whose reply has come back marks
// PointAcquiring: the request is on the wire and its reply sits in the
// client's buffer, the outcome not yet known to the library (for a
// Redlock library, between nodes). This is the moment the catalogue's own
// locks mark, after each of their requests (set-nx-cad after every SET,
// redlock after every node's): a library's retry loop is paused at its
// winning try as theirs is, in proportion to its tries
// (pause-during-acquire.yaml). Marking only the first reply made a pause
// land on a losing first try far more often than for the catalogue's
// locks. The adapter itself marks
// PointAfterCheck once the library's lock call has returned success, before
// Acquire returns. No adapter renews (none turns on its library's
// auto-extend), so none reaches PointRenewing: a scenario that pauses a
// library there is reported as a pause that never fired.
//
// Without this a targeted pause never fired inside a library: a scenario
// pausing redislock at acquiring for 1.5 TTL ran "3 scheduled, 3 injected",
// with no pause in the trace and a false safe verdict.
type libPoints struct {
	env   locks.Env
	armed atomic.Bool
}

// hookLibPoints adds a libPoints hook to each client (the ones the library
// was given) and returns it.
func hookLibPoints(env locks.Env, clients ...redis.UniversalClient) *libPoints {
	h := &libPoints{env: env}
	for _, c := range clients {
		if c != nil {
			c.AddHook(h)
		}
	}
	return h
}

// arm starts an acquisition: each reply until disarm marks PointAcquiring.
func (h *libPoints) arm() { h.armed.Store(true) }

// disarm ends it (the library made no request, or its lock call returned).
func (h *libPoints) disarm() { h.armed.Store(false) }

// replied runs after the reply to cmds. A new connection's handshake
// (HELLO, CLIENT SETINFO, ...: go-redis sends it through the hooks too) is
// not the library's request and marks nothing.
func (h *libPoints) replied(cmds ...redis.Cmder) {
	if !h.armed.Load() || !slices.ContainsFunc(cmds, libRequest) {
		return
	}
	h.env.At(locks.PointAcquiring)
}

// libRequest reports whether cmd is a library's own request rather than
// part of go-redis's connection handshake.
func libRequest(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select", "readonly":
		return false
	}
	return true
}

func (h *libPoints) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *libPoints) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.replied(cmd)
		return err
	}
}

func (h *libPoints) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.replied(cmds...)
		return err
	}
}
