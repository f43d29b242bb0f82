package locktest

import (
	"testing"

	core "github.com/locksim/locksim/internal/search"
)

// RunFuzzInput runs one input as Fuzz's target does, for tests of the
// package locktest_test, and returns why it was skipped or its failure
// message instead of skipping or failing t.
func RunFuzzInput(t *testing.T, f Factory, o Options, input []byte) (skip, fail string) {
	o = o.withDefaults()
	return fuzzInput(t, f, o, core.Cases(Schedules(o)), input)
}
