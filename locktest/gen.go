package locktest

import (
	"pgregory.net/rapid"

	"github.com/locksim/locksim/faults"
)

// Schedules is a rapid generator of fault schedules for a world shaped by
// o: faults.Gen with 1 to MaxFaults faults (none with NoFaults: an empty
// schedule was a third of the draws, a run that tests nothing the first
// one did not; TestSearchPower measured the search finding its bugs
// 1.1-2.3 times as often without them) of the
// allowed kinds, over this world's clients and nodes, sized relative to
// o.TTL within o.Limits. rapid shrinks a failing schedule toward fewer
// faults, earlier starts, shorter durations and smaller magnitudes.
func Schedules(o Options) *rapid.Generator[[]faults.Fault] {
	return faults.Gen(o.withDefaults().bounds())
}

func (o Options) maxFaults() int {
	if o.NoFaults {
		return 0
	}
	return o.MaxFaults
}
