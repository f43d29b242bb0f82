//go:build unix

package sweep

import (
	"syscall"
	"time"
)

// CPUTime is this process's CPU time so far (user + system, every thread:
// getrusage RUSAGE_SELF), or 0 where it cannot be read.
//
// A run's cost is the difference across it. In a worker process (one P,
// one job at a time) that is the run's whole cost, its garbage collection
// included, which a per-goroutine or per-thread clock would miss (a
// bubble's goroutines move between threads). In-process runners share the
// process: several at once, or the parent's own work, make the difference
// an overestimate. It is read outside the bubble and never enters a
// trace or a verdict.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
