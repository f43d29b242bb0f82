package checker

// VerdictCounts counts a group of runs (a cell: one scenario × one lock
// over its seeds) by verdict.
type VerdictCounts struct {
	Safe, Unsafe, Liveness, Unknown int
}

// Add counts one run.
func (c *VerdictCounts) Add(v Verdict) {
	switch v {
	case VerdictSafe:
		c.Safe++
	case VerdictUnsafe:
		c.Unsafe++
	case VerdictLiveness:
		c.Liveness++
	default:
		c.Unknown++
	}
}

// CellVerdict is the cell rule, the one verdict of a group of runs that
// the report, the sweep and the built-in expectations use: unsafe if any
// run was unsafe (one counterexample is enough), otherwise the verdict
// most runs got, ties going to the more severe (liveness, then unknown).
// A lock that starves a client in 1 run of 200 is safe by this rule, its
// liveness count shown beside it, not called a liveness failure. No runs:
// safe (nothing was seen).
func CellVerdict(c VerdictCounts) Verdict {
	if c.Unsafe > 0 {
		return VerdictUnsafe
	}
	switch {
	case c.Liveness > 0 && c.Liveness >= c.Safe && c.Liveness >= c.Unknown:
		return VerdictLiveness
	case c.Unknown > 0 && c.Unknown >= c.Safe:
		return VerdictUnknown
	}
	return VerdictSafe
}

// WorstVerdict is the parity rule, for comparing two arms of the same cell
// run a few times each: the worst verdict any run got (unsafe, then
// liveness, then unknown, then safe). Unlike CellVerdict, one liveness run
// of 20 makes the cell liveness: with a handful of real runs a minority
// is still a disagreement worth showing. No runs: safe.
func WorstVerdict(c VerdictCounts) Verdict {
	switch {
	case c.Unsafe > 0:
		return VerdictUnsafe
	case c.Liveness > 0:
		return VerdictLiveness
	case c.Unknown > 0:
		return VerdictUnknown
	}
	return VerdictSafe
}
