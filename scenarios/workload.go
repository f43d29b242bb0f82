package scenarios

import (
	"sync/atomic"
	"time"

	"github.com/locksim/locksim/event"
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
	// Careful makes the pool and counter sections behave like careful
	// code: the client works through its hold in steps, each ending at
	// the latest when its belief does (the lease's validity, extended by
	// renewals reported through Env.Renewed, ended by Env.RenewFailed, on
	// its own clock), reads the belief again after a step a renewal came
	// in during, and works on while it holds; before each write it checks
	// the belief, and if it has ended it writes nothing. A section that
	// outlasts its belief stops where the belief ends. The check comes
	// before the before-write pause point, so a pause there still makes a
	// stale write (Kleppmann). A lock that gives no validity signal and
	// reports no failed renewal is unaffected.
	Careful bool
	// Reentrant gives a reentrant lock (locks.Info.Reentrant) a nested
	// section: the holder acquires again inside its section (as a Java
	// method holding an RLock calls another that locks it), does the
	// critical section's work, releases the inner acquisition, does the
	// work once more under the outer one, then releases that: a release
	// that freed the lock at the inner level lets another client into the
	// second half. Other locks run the plain section.
	Reentrant bool
	// ReadFraction gives a read-write lock (locks.Info.ReadWrite) read
	// sections: each round, with this probability (one draw from the
	// client's stream per round, only for such a lock and a fraction
	// above 0), the client takes the read lock (locks.ReadWriteLock's
	// AcquireRead) and its section only reads the storage, for the
	// section's time, and writes nothing; otherwise it takes the write
	// lock and runs the plain section. Its acquire ok records the mode
	// (Result "read"), so the checker lets readers overlap readers. Other
	// locks run the plain section every round.
	ReadFraction float64
}

// LockProgram is Program for a workload with no resource: the critical
// section only takes time.
func LockProgram(info locks.Info, wl Workload) sim.Program {
	wl.Resource, wl.Section = ResourceNone, nil
	return Program(info, wl)
}

// RenewRecorder returns a client's Env.Hooks.Renewed: each belief change a lock
// reports after Acquire (a watchdog's renewal) becomes an event Kind "renew",
// Op "acquire", OpID the acquisition it extends (read from holding), Until
// the true time at which the holder's own clock reaches the new deadline,
// or 0 for a zero deadline (the holder believes until it releases).
func RenewRecorder(p Proc, lock string, holding *atomic.Int64) func(time.Time) {
	return func(validUntil time.Time) {
		until := int64(0)
		if !validUntil.IsZero() {
			until = p.TrueDeadline(validUntil)
		}
		p.Record(sim.Event{Kind: event.KindRenew, Op: event.OpAcquire, OpID: holding.Load(), Lock: lock, Until: until})
	}
}

// RenewFailRecorder returns a client's Env.Hooks.RenewFailed: the lock's
// report that the holder stopped believing it holds becomes an event Kind
// "renew-fail", Op "acquire", OpID the acquisition it ends.
func RenewFailRecorder(p Proc, lock string, holding *atomic.Int64) func() {
	return func() {
		p.Record(sim.Event{Kind: event.KindRenewFail, Op: event.OpAcquire, OpID: holding.Load(), Lock: lock})
	}
}
