package checker

import "testing"

// TestCellRules: the cell rule takes the majority (ties to the more
// severe) once no run was unsafe; the parity rule takes the worst run.
func TestCellRules(t *testing.T) {
	cases := []struct {
		c           VerdictCounts
		cell, worst Verdict
	}{
		{VerdictCounts{}, VerdictSafe, VerdictSafe},
		{VerdictCounts{Safe: 19, Unsafe: 1}, VerdictUnsafe, VerdictUnsafe},
		{VerdictCounts{Safe: 19, Liveness: 1}, VerdictSafe, VerdictLiveness},
		{VerdictCounts{Safe: 10, Liveness: 10}, VerdictLiveness, VerdictLiveness},
		{VerdictCounts{Safe: 5, Liveness: 5, Unknown: 5}, VerdictLiveness, VerdictLiveness},
		{VerdictCounts{Safe: 5, Unknown: 5}, VerdictUnknown, VerdictUnknown},
		{VerdictCounts{Safe: 6, Unknown: 5}, VerdictSafe, VerdictUnknown},
		{VerdictCounts{Liveness: 3, Unknown: 4}, VerdictUnknown, VerdictLiveness},
	}
	for _, tc := range cases {
		if got := CellVerdict(tc.c); got != tc.cell {
			t.Errorf("CellVerdict(%+v) = %s, want %s", tc.c, got, tc.cell)
		}
		if got := WorstVerdict(tc.c); got != tc.worst {
			t.Errorf("WorstVerdict(%+v) = %s, want %s", tc.c, got, tc.worst)
		}
	}
	var c VerdictCounts
	for _, v := range []Verdict{VerdictSafe, VerdictUnsafe, VerdictLiveness, VerdictUnknown, "bogus"} {
		c.Add(v)
	}
	if c != (VerdictCounts{Safe: 1, Unsafe: 1, Liveness: 1, Unknown: 2}) {
		t.Errorf("Add: %+v", c)
	}
}
