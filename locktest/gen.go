package locktest

import (
	"pgregory.net/rapid"

	"github.com/locksim/locksim/faults"
)

// Schedules is a rapid generator of fault schedules for a world shaped by
// o: faults.Gen with up to MaxFaults faults (none with NoFaults) of the
// allowed kinds, over this world's clients and nodes, sized relative to
// o.TTL within o.Limits. rapid shrinks a failing schedule toward fewer
// faults, earlier starts, shorter durations and smaller magnitudes.
func Schedules(o Options) *rapid.Generator[[]faults.Fault] {
	o = o.withDefaults()
	clients, nodes, replicated := names(o)
	return faults.Gen(faults.Bounds{Duration: o.Duration, Clients: clients, Nodes: nodes, Replicated: replicated,
		MaxFaults: o.maxFaults(), Kinds: o.Kinds, TTL: o.TTL, Limits: o.Limits})
}

func (o Options) maxFaults() int {
	if o.NoFaults {
		return 0
	}
	return o.MaxFaults
}
