package run

import (
	"fmt"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
)

// What a job's world will do that its user may not expect, said before it
// runs: faults that never start, faults the heal cuts to a
// sliver, nodes no client talks to, and what the world will cost.

// ScheduleWarnings are the schedule's surprises, one sentence each: a
// fault that starts after the safety phase ends is never injected ("1
// scheduled, 0 injected" said nothing about why); when most faults are cut
// to less than a tenth of their length by the heal, the safety phase is
// too short for them.
func (j *Job) ScheduleWarnings() []string {
	end := j.Config.Duration
	var out []string
	var cut []faults.Fault
	for _, f := range j.Config.Faults {
		switch {
		case f.Start >= end:
			out = append(out, fmt.Sprintf("fault %s starts after the safety phase ends (at %v): it will not be injected (raise --duration or move the fault)", f, end))
		case f.Duration > 0 && end-f.Start < f.Duration/10:
			cut = append(cut, f)
		}
	}
	if n := len(cut); n > 0 && 2*n >= len(j.Config.Faults) {
		out = append(out, fmt.Sprintf("%d of %d faults are cut to less than a tenth of their length by the heal at %v (e.g. %s runs %v): the safety phase is short for them (raise --duration)",
			n, len(j.Config.Faults), end, cut[0], end-cut[0].Start))
	}
	return out
}

// IdleNodes says why the spec's node count adds Redis nodes no client
// talks to ("" when it does not): a single-node lock outside a replicated
// world uses n0 only, and a lock on a coordination service uses none.
// Faults could target the idle nodes to no effect, and the summary would
// count them as injected.
func (j *Job) IdleNodes() string {
	n := j.Spec.Params.Nodes
	if n <= 1 || j.Config.Topology.Replicated {
		return ""
	}
	switch j.Lock.Topology {
	case locks.Single:
		return fmt.Sprintf("nodes: lock %s talks to one Redis node (n0): %d nodes would add %d idle ones that faults could target to no effect (leave --nodes out)", j.Lock.ID, n, n-1)
	case locks.Consensus:
		return fmt.Sprintf("nodes: lock %s keeps its state in a coordination service, not on Redis nodes: %d nodes would add %d idle ones that faults could target to no effect (leave --nodes out)", j.Lock.ID, n, n-1)
	}
	return ""
}

// Event rates measured on the default scenario: from about 4
// scheduler steps a client a virtual second (set-nx-cad, fencing) to 250
// (zk-lock's session traffic); Redlock on 5 nodes about 70. A world's cost
// is estimated between the two: at least LowEventRate a client-second is
// sure enough to refuse a world past the event budget up front, and
// HighEventRate a client-second is what it may cost.
const (
	LowEventRate  = 2
	HighEventRate = 250
)

// DefaultMaxEvents is the engine's event budget when nothing sets one
// (sim.Config.MaxEvents 0).
const DefaultMaxEvents = 50_000_000

// Cost is a world's estimated size in scheduler steps (events).
type Cost struct {
	Clients     int
	Virtual     time.Duration // safety + liveness
	Low, High   int64         // events, at LowEventRate and HighEventRate
	Budget      int64         // the event budget (--max-events)
	ClientHours float64
}

// Cost estimates the job's world: clients × virtual time × an event rate.
func (j *Job) Cost() Cost {
	c := Cost{Clients: j.Config.Clients, Virtual: j.Config.Duration + j.Config.Liveness, Budget: j.Config.MaxEvents}
	if c.Budget == 0 {
		c.Budget = DefaultMaxEvents
	}
	cs := float64(c.Clients) * c.Virtual.Seconds()
	c.Low, c.High = int64(cs*LowEventRate), int64(cs*HighEventRate)
	c.ClientHours = cs / 3600
	return c
}
