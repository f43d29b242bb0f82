// Package faults defines faults as values: what breaks, where, when and for
// how long. A schedule is a list of faults; the simulator carries them out.
// Nothing here runs anything or reads a clock.
package faults

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Kind names a fault kind. The names are stable: scenario files use them.
type Kind string

const (
	ClientPause Kind = "client-pause" // a client process stops (GC, SIGSTOP); its clock runs on
	NodePause   Kind = "node-pause"   // a Redis node stops serving; keys expire on resume
	ClockDrift  Kind = "clock-drift"  // a process's clock runs fast/slow by DriftPPM
	ClockJump   Kind = "clock-jump"   // a process's clock steps by Jump (negative: backward)
	Partition   Kind = "partition"    // messages between From and To are held until heal
	Delay       Kind = "delay"        // messages between From and To take Delay longer
	Loss        Kind = "loss"         // messages between From and To are lost with LossProb and retransmitted
	Crash       Kind = "crash"        // a node crashes and restarts after Duration under its persistence mode
	Failover    Kind = "failover"     // the current primary crashes; Sentinel promotes a replica
	// SlotMigration migrates the lock key's hash slot to the next shard of
	// a Redis Cluster (IMPORTING/MIGRATING, MIGRATE halfway, SETSLOT NODE at
	// the end: sim/cluster_migrate.go). Scenario files only: the swarm
	// never draws it (Kinds).
	SlotMigration Kind = "slot-migration"
)

// Kinds lists every fault kind.
var Kinds = []Kind{ClientPause, NodePause, ClockDrift, ClockJump, Partition, Delay, Loss, Crash, Failover}

// Fault is one fault. Start is the true time (from the run's start) it
// begins; Duration is how long it lasts before it heals (0 for a clock jump,
// which is instantaneous). Targets are process names ("c0", "n1",
// "sentinel"); a partition, delay or loss uses From and To instead.
type Fault struct {
	Kind     Kind          `json:"kind" yaml:"kind"`
	Start    time.Duration `json:"start" yaml:"start"`
	Duration time.Duration `json:"duration,omitempty" yaml:"duration"`
	Targets  []string      `json:"targets,omitempty" yaml:"targets"`
	From     []string      `json:"from,omitempty" yaml:"from"`
	To       []string      `json:"to,omitempty" yaml:"to"`
	OneWay   bool          `json:"one_way,omitempty" yaml:"one_way"`
	DriftPPM int64         `json:"drift_ppm,omitempty" yaml:"drift_ppm"`
	Jump     time.Duration `json:"jump,omitempty" yaml:"jump"`
	Delay    time.Duration `json:"delay,omitempty" yaml:"delay"`
	LossProb float64       `json:"loss_prob,omitempty" yaml:"loss_prob"`
	// At arms the fault at a moment of the run (one of Points): it begins
	// the first time a client reaches that point at or after Start, and
	// lasts Duration from then. A client pause waits for its own target;
	// any other kind for the client On names. Empty: the fault begins at
	// Start. An armed fault whose client never reaches the point before
	// the heal never begins (it is reported as not injected).
	At string `json:"at,omitempty" yaml:"at"`
	// On is the client whose arrival at At begins an armed fault of a
	// kind other than a client pause (required there; refused on a client
	// pause, which waits for its target, and without At).
	On string `json:"on,omitempty" yaml:"on"`
	// NodeClock makes a crash's Duration a time on the crashed node's own
	// clock: the node restarts when its clock has counted Duration since
	// the crash, as a delayed restart's timer on that machine would. A
	// jump or drift of that clock during the downtime moves the restart.
	NodeClock bool `json:"node_clock,omitempty" yaml:"node_clock"`
}

// Leader names, in a fault's targets, from or to, whichever member of the
// world's coordination service leads when the fault starts (a consensus
// world only). Each arm resolves it at the fault's start (WithLeader): the
// simulator asks its zk store's members, the real arm the servers.
const Leader = "leader"

// NamesLeader reports whether f names Leader.
func (f Fault) NamesLeader() bool {
	return slices.Contains(f.Targets, Leader) || slices.Contains(f.From, Leader) || slices.Contains(f.To, Leader)
}

// WithLeader is f with Leader replaced by member (the member that leads
// now), and that member dropped from the other side of a link fault, so
// that "from: [leader], to: [zk0, zk1, zk2, c0]" cuts the leader from the
// rest. member "" (no member leads) drops Leader: the fault then reaches
// nothing it named by it. f is unchanged when it does not name Leader.
func (f Fault) WithLeader(member string) Fault {
	if !f.NamesLeader() {
		return f
	}
	sub := func(names []string) ([]string, bool) {
		var out []string
		had := false
		for _, n := range names {
			switch {
			case n == Leader:
				had = true
				if member != "" && !slices.Contains(out, member) {
					out = append(out, member)
				}
			case slices.Contains(out, n):
			default:
				out = append(out, n)
			}
		}
		return out, had
	}
	var inFrom, inTo bool
	f.Targets, _ = sub(f.Targets)
	f.From, inFrom = sub(f.From)
	f.To, inTo = sub(f.To)
	drop := func(names []string) []string {
		var out []string
		for _, n := range names {
			if n != member {
				out = append(out, n)
			}
		}
		return out
	}
	if member != "" && inFrom && !inTo {
		f.To = drop(f.To)
	}
	if member != "" && inTo && !inFrom {
		f.From = drop(f.From)
	}
	return f
}

// PausePoints are the lock phases a client pause can target (the lock
// contract's pause points: locks.PausePoints).
var PausePoints = []string{"acquiring", "after-check", "before-write", "renewing"}

// HarnessPoints are the moments the harness's own workload marks, whatever
// the lock marks: "acquire", just before it calls Acquire (or AcquireRead),
// and "releasing", just before it calls Release.
var HarnessPoints = []string{"acquire", "releasing"}

// Points are every point a fault's At can name: the lock's PausePoints and
// the HarnessPoints.
var Points = append(append([]string(nil), PausePoints...), HarnessPoints...)

// End is when the fault heals.
func (f Fault) End() time.Duration { return f.Start + f.Duration }

// String is a one-line description.
func (f Fault) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%v", f.Kind, f.Start)
	if f.Duration > 0 {
		fmt.Fprintf(&b, "+%v", f.Duration)
	}
	if len(f.Targets) > 0 {
		fmt.Fprintf(&b, " %s", strings.Join(f.Targets, ","))
	}
	if f.At != "" {
		fmt.Fprintf(&b, " at %s", f.At)
	}
	if f.On != "" {
		fmt.Fprintf(&b, " on %s", f.On)
	}
	if f.NodeClock {
		b.WriteString(" by its clock")
	}
	if len(f.From) > 0 || len(f.To) > 0 {
		arrow := "<->"
		if f.OneWay {
			arrow = "->"
		}
		fmt.Fprintf(&b, " %s%s%s", strings.Join(f.From, ","), arrow, strings.Join(f.To, ","))
	}
	switch f.Kind {
	case ClockDrift:
		fmt.Fprintf(&b, " %+dppm", f.DriftPPM)
	case ClockJump:
		fmt.Fprintf(&b, " %+v", f.Jump)
	case Delay:
		fmt.Fprintf(&b, " +%v", f.Delay)
	case Loss:
		fmt.Fprintf(&b, " p=%.2f", f.LossProb)
	}
	return b.String()
}

// Param is the kind's parameter as a label shows it: a drift's rate
// ("-126146ppm"), a jump's signed step ("+16s", "-2s"), a delay ("+2.5s"),
// a loss probability ("p=0.34"); "" for the other kinds.
func (f Fault) Param() string {
	switch f.Kind {
	case ClockDrift:
		return fmt.Sprintf("%+dppm", f.DriftPPM)
	case ClockJump:
		if f.Jump >= 0 {
			return "+" + f.Jump.String()
		}
		return f.Jump.String()
	case Delay:
		return "+" + f.Delay.String()
	case Loss:
		return fmt.Sprintf("p=%.2f", f.LossProb)
	}
	return ""
}

// Validate checks one fault against the names of the world's processes.
func (f Fault) Validate(known func(name string) bool) error {
	if f.Start < 0 {
		return fmt.Errorf("%s: start %v is negative", f.Kind, f.Start)
	}
	if f.Duration < 0 {
		return fmt.Errorf("%s: duration %v is negative", f.Kind, f.Duration)
	}
	for _, n := range append(append(append([]string(nil), f.Targets...), f.From...), f.To...) {
		if !known(n) {
			return fmt.Errorf("%s: unknown process %q", f.Kind, n)
		}
	}
	if f.At != "" && !slices.Contains(Points, f.At) {
		return fmt.Errorf("%s: at %q is not a point (one of %v)", f.Kind, clip(f.At), Points)
	}
	switch {
	case f.On != "" && f.At == "":
		return fmt.Errorf("%s: on %q needs at (the point whose arrival begins the fault)", f.Kind, clip(f.On))
	case f.On != "" && f.Kind == ClientPause:
		return fmt.Errorf("%s: on does not apply (a client pause waits for its own target to reach %q)", f.Kind, f.At)
	case f.At != "" && f.Kind != ClientPause && f.On == "":
		return fmt.Errorf("%s: at %q needs on (the client whose arrival at it begins the fault)", f.Kind, f.At)
	case f.On != "" && (f.On == Leader || !known(f.On)):
		return fmt.Errorf("%s: on: unknown client %q", f.Kind, clip(f.On))
	}
	// Fields that the kind ignores are refused: a fault that silently does
	// nothing of what it says is worse than an error.
	link := f.Kind == Partition || f.Kind == Delay || f.Kind == Loss
	for _, c := range []struct {
		field string
		set   bool
		kinds bool
	}{
		{"targets", len(f.Targets) > 0, !link},
		{"from/to", len(f.From) > 0 || len(f.To) > 0, link},
		{"one_way", f.OneWay, link},
		{"drift_ppm", f.DriftPPM != 0, f.Kind == ClockDrift},
		{"jump", f.Jump != 0, f.Kind == ClockJump},
		{"delay", f.Delay != 0, f.Kind == Delay},
		{"loss_prob", f.LossProb != 0, f.Kind == Loss},
		{"node_clock", f.NodeClock, f.Kind == Crash},
	} {
		if c.set && !c.kinds {
			return fmt.Errorf("%s: %s does not apply to this kind", f.Kind, c.field)
		}
	}
	if link {
		for _, a := range f.From {
			for _, b := range f.To {
				if a == b {
					return fmt.Errorf("%s: %q is on both sides (from and to)", f.Kind, a)
				}
			}
		}
	}
	switch f.Kind {
	case ClientPause, NodePause, Crash:
		if len(f.Targets) == 0 {
			return fmt.Errorf("%s: needs targets", f.Kind)
		}
		if f.Duration == 0 {
			return fmt.Errorf("%s: duration must be positive (a %s of 0s does nothing)", f.Kind, f.Kind)
		}
	case ClockDrift:
		if len(f.Targets) == 0 {
			return fmt.Errorf("%s: needs targets", f.Kind)
		}
		if f.DriftPPM < -500_000 || f.DriftPPM > 500_000 {
			return fmt.Errorf("%s: drift_ppm %d out of range -500000..500000 (±50%%)", f.Kind, f.DriftPPM)
		}
	case ClockJump:
		if len(f.Targets) == 0 {
			return fmt.Errorf("%s: needs targets", f.Kind)
		}
	case Partition, Delay, Loss:
		if len(f.From) == 0 || len(f.To) == 0 {
			return fmt.Errorf("%s: needs from and to", f.Kind)
		}
		if f.Duration == 0 {
			return fmt.Errorf("%s: duration must be positive (a %s of 0s does nothing)", f.Kind, f.Kind)
		}
		if f.Kind == Delay && f.Delay <= 0 {
			return fmt.Errorf("%s: delay must be positive", f.Kind)
		}
		if f.Kind == Loss && (f.LossProb <= 0 || f.LossProb > 1) {
			return fmt.Errorf("%s: loss_prob %v out of range (0,1]", f.Kind, f.LossProb)
		}
	case Failover:
		if f.Duration == 0 {
			return fmt.Errorf("%s: needs a positive duration (how long the old primary stays down)", f.Kind)
		}
	case SlotMigration:
		if len(f.Targets) > 0 {
			return fmt.Errorf("%s: targets do not apply (it migrates the lock key's slot to the next shard)", f.Kind)
		}
		if f.Duration <= 0 {
			return fmt.Errorf("%s: needs a positive duration (from MIGRATING to SETSLOT NODE)", f.Kind)
		}
	default:
		return fmt.Errorf("unknown fault kind %q (one of %s)", clip(string(f.Kind)), kindNames())
	}
	return nil
}

// clip shortens a value quoted in an error to 40 bytes ("…" after).
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}

// kindNames lists the fault kinds for an error message.
func kindNames() string {
	names := make([]string, 0, len(Kinds)+1)
	for _, k := range append(Kinds[:len(Kinds):len(Kinds)], SlotMigration) {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// Sort orders a schedule by start time, then kind, keeping the order of
// equal faults.
func Sort(s []Fault) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Start != s[j].Start {
			return s[i].Start < s[j].Start
		}
		return s[i].Kind < s[j].Kind
	})
}
