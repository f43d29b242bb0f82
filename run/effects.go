package run

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

// FaultEffect is what one scheduled fault did in a run, in three steps:
//
//   - Injected: it started in the safety phase (a fault armed at a point,
//     a targeted pause included: it fired, its client reached the point).
//   - Reached: what it breaks is something the code under test reads: a
//     client clock the lock itself read after the fault began (a library
//     that calls time.Now never does: one bubble has one clock), a target
//     node that exists, a link that carried the lock's traffic.
//   - Bit: it struck while it could matter, per kind: a client pause that
//     began while its client held a lease or its winning try was in
//     flight (a live lock key held its value; for a consensus store, which
//     the engine does not look into: an acquisition in flight that ended
//     ok); a client clock fault whose client acquired or held the lock
//     while its clock was wrong; a node pause, crash or clock fault on a
//     node holding a live lock key when it began (a node that was down:
//     when it went down; on a consensus member:
//     while a client held the lock); a failover that promoted a replica
//     lacking a live lock key; a partition, delay or loss that held,
//     slowed or lost a message of the lock's or the protected resource's
//     traffic.
//
// A fault that bit did not necessarily break anything: the verdict says
// whether the lock survived it. A safe run whose faults never bit did not
// test the lock.
type FaultEffect struct {
	Fault    faults.Fault `json:"fault"`
	Injected bool         `json:"injected"`
	Reached  bool         `json:"reached"`
	Bit      bool         `json:"bit"`
	// Why says, for a fault that was not reached or did not bite, why not.
	Why string `json:"why,omitempty"`
	// Promoted is the replica promoted in the place of the primary this
	// fault took out (a failover; in a cluster that fails over by itself,
	// also the partition, pause or crash that made it flag the primary
	// FAIL), and PromotedLacking that it lacked a lock key live on that
	// primary: the lock's key was lost.
	Promoted        string `json:"promoted,omitempty"`
	PromotedLacking bool   `json:"promoted_lacking,omitempty"`
}

// EffectCounts counts faults by how far they got.
type EffectCounts struct {
	Scheduled int `json:"scheduled"`
	Injected  int `json:"injected"`
	Reached   int `json:"reached"`
	Bit       int `json:"bit"`
}

// Count tallies effects.
func Count(es []FaultEffect) EffectCounts {
	c := EffectCounts{Scheduled: len(es)}
	for _, e := range es {
		if e.Injected {
			c.Injected++
		}
		if e.Reached {
			c.Reached++
		}
		if e.Bit {
			c.Bit++
		}
	}
	return c
}

// String is the summary's words: "4 injected, 4 reached, 0 bit".
func (c EffectCounts) String() string {
	return fmt.Sprintf("%d scheduled, %d injected, %d reached, %d bit", c.Scheduled, c.Injected, c.Reached, c.Bit)
}

// ClockReach is a client whose clock the world set wrong from the start
// (a scenario's per-client offset or drift, not a fault), and whether its
// lock read that clock.
type ClockReach struct {
	Client   string `json:"client"`
	DriftPPM int64  `json:"drift_ppm,omitempty"`
	OffsetNS int64  `json:"offset_ns,omitempty"`
	Reached  bool   `json:"reached"`
}

// Effects judges each fault of the run's schedule (Judged.Job.Config.Faults)
// from the engine's record (sim.Result.Effects) and the history. nil when
// the history was capped (what happened is then not known).
func Effects(h checker.History, res *sim.Result, cfg sim.Config) []FaultEffect {
	if h.Capped || res == nil || len(res.Effects) != len(cfg.Faults) {
		return nil
	}
	holds := checker.Holds(h.LockOps(), h.End)
	wins := winningAcquisitions(h)
	fired, began := map[int]int64{}, map[int]int64{}
	for _, e := range h.Events {
		m := fired
		switch {
		case e.Fault <= 0:
			continue
		case e.Kind == event.KindPause:
		case e.Proc == "world" && e.Kind == event.KindFault:
			m = began
		default:
			continue
		}
		if _, ok := m[e.Fault]; !ok {
			m[e.Fault] = e.T
		}
	}
	clientIndex := map[string]int{}
	for i, c := range h.Clients {
		clientIndex[c] = i
	}
	// A jump steps only the wall clock (Now); a drift also runs the
	// monotonic reading (Mono) at its rate.
	lockRead := func(c string, since int64, kind faults.Kind) bool {
		i, ok := clientIndex[c]
		if !ok {
			return false
		}
		if i < len(res.LockClock) && res.LockClock[i] >= since {
			return true
		}
		return kind == faults.ClockDrift && i < len(res.LockMono) && res.LockMono[i] >= since
	}
	heal := h.Heal
	out := make([]FaultEffect, len(cfg.Faults))
	for i, f := range cfg.Faults {
		ee := res.Effects[i]
		e := FaultEffect{Fault: f, Injected: ee.Started}
		start := int64(f.Start)
		if t, ok := began[i+1]; ok && f.At != "" && f.Kind != faults.ClientPause {
			start = t // an armed fault began when its client reached its point
		}
		clients := clientTargets(f, clientIndex)
		switch {
		case !e.Injected && ee.Armed && !ee.NoLeader:
			e.Why = "its client " + f.On + " never reached " + f.At + " while it waited"
		case !e.Injected && ee.NoLeader:
			e.Why = "no member led when it was due (an election was under way): its leader target named nobody"
		case !e.Injected:
			e.Why = "it would start after the safety phase"
		case f.Kind == faults.ClientPause:
			at := start
			if f.At != "" {
				t, ok := fired[i+1]
				if !ok {
					e.Injected = false
					e.Why = "its client never reached " + f.At + " while it waited"
					break
				}
				at = t
			}
			e.Reached = len(clients) > 0
			// A winning try in flight: the client's write holds a live lock
			// key (the engine saw it); without key truth (a consensus
			// store), an acquisition in flight that ended ok.
			// After the check the lock has decided it holds: an acquisition
			// in flight that ends ok is a winning one there, and it is the
			// only evidence for a lock whose keys the engine does not see.
			e.Bit = ee.OwnsKey
			inFlightWins := f.At == "after-check" || !res.KeysSeen
			for _, c := range clients {
				if heldAt(holds, c, at) || (inFlightWins && wins.inFlight(c, at)) {
					e.Bit = true
				}
			}
			if !e.Bit {
				e.Why = "its client held no lease and no lock key of its own when it stopped"
				for _, c := range clients {
					if wins.acquiring(h, c, at) {
						e.Why += " (a losing try)"
						break
					}
				}
			}
		case (f.Kind == faults.ClockJump || f.Kind == faults.ClockDrift) && len(clients) > 0:
			for _, c := range clients {
				if lockRead(c, start, f.Kind) {
					e.Reached = true
					if heldDuring(holds, c, start, heal) || wins.okDuring(c, start, heal) {
						e.Bit = true
					}
				}
			}
			switch {
			case !e.Reached:
				e.Why = "the lock never read its client's clock after it began (a library reads time.Now, and one bubble has one clock)"
			case !e.Bit:
				e.Why = "its client neither acquired nor held the lock while its clock was wrong"
			}
		case f.Kind == faults.Partition || f.Kind == faults.Delay || f.Kind == faults.Loss:
			e.Reached = ee.Messages > 0
			e.Bit = ee.Messages > 0
			if !e.Reached {
				e.Why = "no message crossed its links while it lasted"
			}
		case f.Kind == faults.Failover:
			e.Reached = ee.Nodes > 0
			e.Bit = ee.PromotedLacking
			switch {
			case !e.Reached:
				e.Why = "no primary to crash"
			case ee.Promoted == "":
				e.Why = "Sentinel promoted no replica before the heal"
			case !e.Bit:
				e.Why = "the promoted replica " + ee.Promoted + " had every live lock key"
			}
		default: // node pause, crash, node clock
			e.Reached = ee.Nodes > 0 || ee.Members > 0
			e.Bit = ee.LiveKeys > 0
			if ee.Members > 0 && heldAny(holds, start) {
				e.Bit = true
			}
			switch {
			case !e.Reached:
				e.Why = "no client ever used its target node"
			case !e.Bit && ee.Members > 0:
				e.Why = "no client held the lock when it began"
			case !e.Bit && f.Kind == faults.ClockDrift:
				e.Why = "its node held no live lock key while it ran"
			case !e.Bit:
				e.Why = "its node held no live lock key when it began"
			}
		}
		if ee.Promoted != "" {
			e.Promoted, e.PromotedLacking = ee.Promoted, ee.PromotedLacking
			if ee.PromotedLacking && e.Reached && !e.Bit {
				e.Bit, e.Why = true, ""
			}
		}
		out[i] = e
	}
	return out
}

// promotedNote says what a fault's promotion was, for the summary's fault
// line: "" when it promoted none.
func (e FaultEffect) promotedNote() string {
	switch {
	case e.Promoted == "" || namesNode(e.Why, e.Promoted):
		return ""
	case e.PromotedLacking:
		return "; promoted " + e.Promoted + ", which lacked a live lock key"
	}
	return "; promoted " + e.Promoted // lacking nothing seen: the real arm cannot always read a cut-off primary
}

// namesNode reports whether text names node as a word of its own ("n1"
// is not named by "n10").
func namesNode(text, node string) bool {
	for _, f := range strings.Fields(text) {
		if strings.Trim(f, ",.;:()[]") == node {
			return true
		}
	}
	return false
}

// ClockReaches lists the clients whose clocks the world set wrong from the
// start, and whether their lock read them in the safety phase.
func ClockReaches(cfg sim.Config, res *sim.Result) []ClockReach {
	var out []ClockReach
	for i := 0; i < cfg.Clients; i++ {
		drift, off := cfg.ClientDriftPPM(i), cfg.ClientClockOffset(i)
		if drift == 0 && off == 0 {
			continue
		}
		r := ClockReach{Client: fmt.Sprintf("c%d", i), DriftPPM: drift, OffsetNS: int64(off)}
		if res != nil && i < len(res.LockClock) {
			// An offset shows only in the wall clock; a drift in the
			// monotonic reading too.
			r.Reached = res.LockClock[i] >= 0 || (drift != 0 && i < len(res.LockMono) && res.LockMono[i] >= 0)
		}
		out = append(out, r)
	}
	return out
}

// clientTargets returns the fault's targets that are clients, in order.
func clientTargets(f faults.Fault, index map[string]int) []string {
	var out []string
	for _, t := range f.Targets {
		if _, ok := index[t]; ok {
			out = append(out, t)
		}
	}
	return out
}

func heldAt(holds []checker.Hold, c string, t int64) bool {
	return slices.ContainsFunc(holds, func(h checker.Hold) bool { return h.Proc == c && h.Start <= t && t < h.End })
}

func heldAny(holds []checker.Hold, t int64) bool {
	return slices.ContainsFunc(holds, func(h checker.Hold) bool { return h.Start <= t && t < h.End })
}

func heldDuring(holds []checker.Hold, c string, from, to int64) bool {
	return slices.ContainsFunc(holds, func(h checker.Hold) bool { return h.Proc == c && h.Start < to && h.End > from })
}

// acquisition is one acquire call that ended ok: [call, ok].
type acquisition struct {
	proc     string
	call, ok int64
}

type acquisitions []acquisition

// winningAcquisitions lists the acquire calls that returned ok.
func winningAcquisitions(h checker.History) acquisitions {
	type key struct {
		proc string
		id   int64
	}
	calls := map[key]int64{}
	var out acquisitions
	for _, e := range h.Events {
		if e.Op != event.OpAcquire {
			continue
		}
		k := key{e.Proc, e.OpID}
		switch e.Kind {
		case event.KindCall:
			calls[k] = e.T
		case event.KindOK:
			if t, ok := calls[k]; ok {
				out = append(out, acquisition{e.Proc, t, e.T})
			}
		}
	}
	return out
}

// inFlight: c had an acquisition in flight at t that ended ok.
func (as acquisitions) inFlight(c string, t int64) bool {
	return slices.ContainsFunc(as, func(a acquisition) bool { return a.proc == c && a.call <= t && t <= a.ok })
}

// okDuring: c had an acquisition that ended ok, overlapping [from, to).
func (as acquisitions) okDuring(c string, from, to int64) bool {
	return slices.ContainsFunc(as, func(a acquisition) bool { return a.proc == c && a.call < to && a.ok >= from })
}

// missedFaults lists, one phrase a fault, why the faults that missed did: for a
// summary line.
func missedFaults(es []FaultEffect) []string {
	var out []string
	for _, e := range es {
		if e.Injected && e.Reached && e.Bit {
			continue
		}
		out = append(out, e.Fault.String()+": "+strings.TrimSpace(e.Why))
	}
	return out
}

// acquiring: c had an acquire call in flight at t (winning or not).
func (as acquisitions) acquiring(h checker.History, c string, t int64) bool {
	open := false
	for _, e := range h.Events {
		if e.T > t {
			break
		}
		if e.Proc != c || e.Op != event.OpAcquire {
			continue
		}
		switch e.Kind {
		case event.KindCall:
			open = true
		case event.KindOK, event.KindFail, event.KindUnknown:
			open = false
		}
	}
	return open
}

// NeverReadClock reports whether none of the named clients' locks read
// their clock in the run's safety phase (a lock that keeps no time of its
// own, or a library that reads time.Now): a clock fault on them could
// reach nothing, whatever its timing. Names that are not clients (c0,
// c1, ...) are skipped; false when there is none.
func NeverReadClock(res *sim.Result, targets []string) bool {
	seen := false
	for _, t := range targets {
		var i int
		if _, err := fmt.Sscanf(t, "c%d", &i); err != nil || i < 0 || res == nil || i >= len(res.LockClock) {
			continue
		}
		seen = true
		if res.LockClock[i] >= 0 {
			return false
		}
	}
	return seen
}
