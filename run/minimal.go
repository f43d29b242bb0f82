package run

import "github.com/locksim/locksim/checker"

// Minimal is a judged run's first violation as a minimal history
// (checker.Minimal): its holders and the nodes each locked, the faults
// that bit (Effects) in its window, how the first holder's key went, the
// overlap or the write that broke the resource. nil when the run has no
// violation.
func Minimal(j *Judged) *checker.MinimalHistory {
	if j == nil || j.Check.First == nil {
		return nil
	}
	var log checker.KeyLog
	var bit func(int) bool
	if j.Result != nil {
		log = KeyLog(j.Result, j.Job.Config)
		if es := Effects(j.History, j.Result, j.Job.Config); es != nil {
			bit = func(n int) bool { return n >= 1 && n <= len(es) && es[n-1].Bit }
		}
	}
	return checker.Minimal(j.History, log, j.Check, bit)
}
