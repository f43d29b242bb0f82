package scenarios

import (
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
	// Careful makes the pool and counter sections behave like careful
	// code: before each write the client checks its belief (the lease's
	// validity, extended by renewals reported through Env.Renewed) on its
	// own clock, and if it has run out it writes nothing; a section that
	// would outlast the belief stops at its deadline. The check comes
	// before the before-write pause point, so a pause there still makes a
	// stale write (Kleppmann). Locks that give no validity signal are
	// unaffected.
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
// the true time at which the holder's own clock reaches the new deadline.
func RenewRecorder(p Proc, lock string, holding *atomic.Int64) func(time.Time) {
	return func(validUntil time.Time) {
		p.Record(sim.Event{Kind: "renew", Op: "acquire", OpID: holding.Load(), Lock: lock, Until: p.TrueDeadline(validUntil)})
	}
}
