package scenarios

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// Workload is what each client does with the lock.
type Workload struct {
	Key      string
	HoldMin  time.Duration // critical section length, uniform in [HoldMin, HoldMax]
	HoldMax  time.Duration
	ThinkMin time.Duration // pause between attempts, uniform in [ThinkMin, ThinkMax]
	ThinkMax time.Duration
	// Resource is what the critical section does (ResourcePool,
	// ResourceCounter, or ResourceNone); Section, if set, replaces it.
	Resource string
	Section  Section
}

// LockProgram returns the client program that loops acquire → hold →
// release → think with the given lock design, recording every step:
//
//	call/ok/fail/unknown with Op "acquire" or "release"; an acquire's ok
//	carries Until, the true time at which the holder's own clock reaches
//	the lease's validity (0: no validity, it believes until release).
func LockProgram(info locks.Info, wl Workload) sim.Program {
	return func(p *sim.Proc) {
		var holding atomic.Int64 // the OpID of the acquisition renewals extend
		env := locks.Env{Nodes: p.Nodes(), Primary: p.Primary(), Clock: p, Rand: p.Rand(), Client: p.Name(), Key: wl.Key, Go: p.Go,
			Believe: RenewRecorder(p, info.ID, &holding)}
		if env.Primary == nil {
			env.Primary = p.Nodes()[0]
		}
		lk, err := info.New(env)
		if err != nil {
			p.Record(sim.Event{Kind: "error", Lock: info.ID, Detail: err.Error()})
			return
		}
		r := p.Rand()
		uniform := func(lo, hi time.Duration) time.Duration {
			if hi <= lo {
				return lo
			}
			return lo + time.Duration(r.Int64N(int64(hi-lo)))
		}
		var op int64
		for !p.Stopping() {
			op++
			p.Record(sim.Event{Kind: "call", Op: "acquire", OpID: op, Lock: info.ID})
			holding.Store(op)
			lease, err := lk.Acquire(p.Context())
			if err != nil {
				p.Record(sim.Event{Kind: outcome(err), Op: "acquire", OpID: op, Lock: info.ID, Detail: err.Error()})
			} else {
				until := int64(0)
				switch {
				case lease.ValidUntil.IsZero():
				case lease.OnGoClock:
					until = p.GoTimeToTrue(lease.ValidUntil)
				default:
					until = p.TrueDeadline(lease.ValidUntil)
				}
				p.Record(sim.Event{Kind: "ok", Op: "acquire", OpID: op, Lock: info.ID, Until: until, Token: lease.Token, Detail: lease.Value})
				p.Sleep(uniform(wl.HoldMin, wl.HoldMax))
				op++
				p.Record(sim.Event{Kind: "call", Op: "release", OpID: op, Lock: info.ID, Detail: lease.Value})
				err := lk.Release(p.Context(), lease)
				kind, detail := "ok", ""
				if err != nil {
					kind, detail = outcome(err), err.Error()
				}
				p.Record(sim.Event{Kind: kind, Op: "release", OpID: op, Lock: info.ID, Detail: detail})
			}
			p.Sleep(uniform(wl.ThinkMin, wl.ThinkMax))
		}
	}
}

// outcome classifies an error: a clean refusal is "fail"; anything else
// (timeouts, resets) may have taken effect and is "unknown".
func outcome(err error) string {
	if errors.Is(err, locks.ErrNotAcquired) || errors.Is(err, locks.ErrNotOwner) {
		return "fail"
	}
	return "unknown"
}

// RenewRecorder returns a client's Env.Believe: each belief change a lock
// reports after Acquire (a watchdog's renewal) becomes an event Kind "renew",
// Op "acquire", OpID the acquisition it extends (read from holding), Until
// the true time at which the holder's own clock reaches the new deadline.
func RenewRecorder(p *sim.Proc, lock string, holding *atomic.Int64) func(time.Time) {
	return func(validUntil time.Time) {
		p.Record(sim.Event{Kind: "renew", Op: "acquire", OpID: holding.Load(), Lock: lock, Until: p.TrueDeadline(validUntil)})
	}
}
