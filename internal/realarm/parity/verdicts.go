package parity

import (
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/run"
)

// Seed names one run.
type Seed struct {
	Seed  uint64 `json:"seed"`
	Repro string `json:"repro"`
}

// An arm's verdict of a cell is a checker verdict, by the parity rule,
// or one of these.
const (
	VerdictError        checker.Verdict = "error"         // runs, none of which could be judged
	VerdictNone         checker.Verdict = "none"          // no runs
	VerdictNotSupported checker.Verdict = "not-supported" // the arm cannot run the cell (NotSupported says why)
)

// verdictOf is an arm's verdict of a cell from its judged runs t by the
// parity rule (run.Tally.WorstVerdict: any unsafe, else any liveness,
// else any unknown), then VerdictError if some of its errs runs could not
// be judged at all, else safe; VerdictNone for no runs.
func verdictOf(t *run.Tally, errs int) checker.Verdict {
	switch v := t.WorstVerdict(); {
	case v != checker.VerdictSafe:
		return v
	case errs > 0:
		return VerdictError
	case t.Runs > 0:
		return checker.VerdictSafe
	}
	return VerdictNone
}

// verdictCounts counts an arm's runs by verdict, as the results file
// shows them: the judged runs t and the errs that could not be judged;
// a verdict no run got is left out.
func verdictCounts(t *run.Tally, errs int) map[checker.Verdict]int {
	m := map[checker.Verdict]int{}
	for v, n := range map[checker.Verdict]int{checker.VerdictSafe: t.Safe(), checker.VerdictUnsafe: t.Unsafe,
		checker.VerdictLiveness: t.Liveness, checker.VerdictUnknown: t.Unknown, VerdictError: errs} {
		if n > 0 {
			m[v] = n
		}
	}
	return m
}
