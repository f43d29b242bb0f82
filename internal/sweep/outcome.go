package sweep

import (
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/run"
)

// Outcome and Tally are the run's (run.Outcome, run.Tally): one result
// model from the judged run to the report's cells.
type (
	Outcome = run.Outcome
	Tally   = run.Tally
)

// OutcomeOf summarizes a judged run (run.OutcomeOf).
func OutcomeOf(j *run.Judged) Outcome { return run.OutcomeOf(j) }

// Untested says why a group of runs does not test its scenario
// (run.Untested).
func Untested(runs, clockUnreachedRuns, injected, bit int) string {
	return run.Untested(runs, clockUnreachedRuns, injected, bit)
}

// PauseShort reports whether some targeted client pause of the schedule
// did not run in full inside the safety phase (run.PauseShort).
func PauseShort(h checker.History) bool { return run.PauseShort(h) }
