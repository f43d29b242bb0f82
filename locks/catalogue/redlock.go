package catalogue

import (
	"context"
	"time"

	"github.com/locksim/locksim/locks"
)

// RedlockParams are Redlock's knobs.
type RedlockParams struct {
	TTL         time.Duration
	Tries       int           // acquisition attempts
	RetryDelay  time.Duration // base delay between attempts
	RetryJitter time.Duration // random extra delay in [0, RetryJitter)
	DriftFactor float64       // clock drift allowance as a fraction of TTL
	DriftFixed  time.Duration // plus this much (redis.io: 2 ms)
	NodeTimeout time.Duration // per-node request timeout, small against TTL
}

// Redlock presets.
var (
	// RedlockRedisIO is the algorithm as redis.io and the reference
	// implementations give it: drift 1% of TTL + 2 ms, 3 tries, 200 ms
	// retry delay plus random jitter.
	RedlockRedisIO = RedlockParams{TTL: 10 * time.Second, Tries: 3, RetryDelay: 200 * time.Millisecond,
		RetryJitter: 100 * time.Millisecond, DriftFactor: 0.01, DriftFixed: 2 * time.Millisecond, NodeTimeout: 50 * time.Millisecond}
	// RedlockSeed001 is “Redis + RedLock” (yield-bytes)'s experiment: TTL 5 s, 3 tries, 200 ms
	// apart, drift allowance 500 ms.
	RedlockSeed001 = RedlockParams{TTL: 5 * time.Second, Tries: 3, RetryDelay: 200 * time.Millisecond,
		DriftFixed: 500 * time.Millisecond, NodeTimeout: 50 * time.Millisecond}
)

func init() {
	Register(locks.Info{
		ID:        "redlock",
		Design:    "Redlock: SET NX PX on N independent nodes in turn, majority N/2+1, validity = TTL - elapsed - drift on the client's clock, release everywhere on failure, random retry delay",
		Source:    "“The SETNX command”, “Redis + RedLock” (yield-bytes); redis.io distlock",
		Weakness:  "safety rests on bounded pauses, network delay and clock drift: a pause after the validity check, a node clock jump or a node restart without persistence break it; and the retries of one acquisition share its random value, so the release of a failed round, delayed in the network, can delete the keys of the next, successful round (scenarios.TestStaleSelfRelease)",
		Topology:  locks.Independent,
		Params:    redlockParams(),
		Configure: configureRedlock(nil),
	})
}

// Redlock is the redis.io distributed lock over independent nodes. The
// client reads its own clock before and after the round; the lock is held
// if a majority said OK and TTL - elapsed - drift is still positive.
type Redlock struct {
	Env locks.Env
	P   RedlockParams

	// Deliberate bugs, set only by the canaries (canary.go), so a canary is
	// this code with one switch flipped, not a copy that can drift from it.
	quorum    func(n int) int // nil: N/2+1
	noElapsed bool            // validity not reduced by the round's elapsed time
}

func (l *Redlock) majority() int {
	if l.quorum != nil {
		return l.quorum(len(l.Env.Nodes))
	}
	return len(l.Env.Nodes)/2 + 1
}

// Acquire implements Lock.
func (l *Redlock) Acquire(ctx context.Context) (locks.Lease, error) {
	value := randomValue(l.Env.Rand)
	quorum := l.majority()
	for try := 0; try < max(1, l.P.Tries); try++ {
		if try > 0 {
			d := l.P.RetryDelay
			if l.P.RetryJitter > 0 {
				d += time.Duration(l.Env.Rand.Int64N(int64(l.P.RetryJitter)))
			}
			l.Env.Clock.Sleep(d)
		}
		start := l.Env.Clock.Now()
		n := 0
		for _, c := range l.Env.Nodes {
			if l.setOne(ctx, c.SetNX, value) {
				n++
			}
			l.Env.At(locks.PointAcquiring)
		}
		end := l.Env.Clock.Now()
		elapsed := end.Sub(start)
		drift := time.Duration(float64(l.P.TTL)*l.P.DriftFactor) + l.P.DriftFixed
		validity := l.P.TTL - elapsed - drift
		validUntil := start.Add(elapsed + validity)
		if l.noElapsed {
			// The canary's bug: "valid for TTL - drift from now", as if the
			// keys had been set when the round ended.
			validity = l.P.TTL - drift
			validUntil = end.Add(validity)
		}
		if n >= quorum && validity > 0 {
			l.Env.At(locks.PointAfterCheck)
			return locks.Lease{Value: value, Start: start, ValidUntil: validUntil}, nil
		}
		l.releaseAll(ctx, value)
	}
	return locks.Lease{}, locks.ErrNotAcquired
}

func (l *Redlock) setOne(ctx context.Context, setnx func(context.Context, string, any, time.Duration) *boolCmd, value string) bool {
	cctx, cancel := context.WithTimeout(ctx, l.P.NodeTimeout)
	defer cancel()
	ok, err := setnx(cctx, l.Env.Key, value, l.P.TTL).Result()
	return err == nil && ok
}

func (l *Redlock) releaseAll(ctx context.Context, value string) int {
	n := 0
	for _, c := range l.Env.Nodes {
		cctx, cancel := context.WithTimeout(ctx, l.P.NodeTimeout)
		r, err := cadScript.Run(cctx, c, []string{l.Env.Key}, value).Int64()
		cancel()
		if err == nil && r == 1 {
			n++
		}
	}
	return n
}

// Release implements Lock: compare-and-delete on every node.
func (l *Redlock) Release(ctx context.Context, lease locks.Lease) error {
	if l.releaseAll(ctx, lease.Value) < l.majority() {
		return locks.ErrNotOwner
	}
	return nil
}
