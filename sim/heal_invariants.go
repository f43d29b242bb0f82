package sim

import (
	"fmt"
	"time"
)

// healedInvariants checks what the heal promises, for the rest of the run:
// every node and service up and unpaused with a resynced clock, no network
// fault, no client paused or waiting on a pause point, nothing in the queue
// still held for a fault, and (replicated) exactly one primary in each
// group that the group's replicas and every client follow.
func (w *World) healedInvariants() error {
	now := w.now()
	for _, n := range append(append([]*Node(nil), w.nodes...), w.services...) {
		switch {
		case !n.up:
			return fmt.Errorf("invariant \"every node up\" broken: %s is down", n.name)
		case n.pausedUntil > now:
			return fmt.Errorf("invariant \"no fault active\" broken: %s is paused until t=%v", n.name, time.Duration(n.pausedUntil))
		case n.clk.Local(now) != now || n.clk.DriftPPM() != 0:
			return fmt.Errorf("invariant \"clocks resynced\" broken: %s's clock reads %v at t=%v (drift %d ppm)", n.name, time.Duration(n.clk.Local(now)), time.Duration(now), n.clk.DriftPPM())
		}
	}
	if len(w.net.active) > 0 {
		return fmt.Errorf("invariant \"no fault active\" broken: %d network faults remain (first: %v)", len(w.net.active), w.net.active[0].kind)
	}
	for _, p := range w.procs {
		switch {
		case p.pausedUntil > now:
			return fmt.Errorf("invariant \"no fault active\" broken: %s is paused until t=%v", p.name, time.Duration(p.pausedUntil))
		case p.arms.Pauses() > 0:
			return fmt.Errorf("invariant \"no fault active\" broken: %s has %d targeted pauses armed", p.name, p.arms.Pauses())
		case p.clk.Local(now) != now || p.clk.DriftPPM() != 0:
			return fmt.Errorf("invariant \"clocks resynced\" broken: %s's clock reads %v at t=%v", p.name, time.Duration(p.clk.Local(now)), time.Duration(now))
		}
	}
	w.mu.Lock()
	held := w.q.heldAfter(now)
	w.mu.Unlock()
	if held != nil {
		return fmt.Errorf("invariant \"no fault active\" broken: a %s event is still held until t=%v", held.kind, time.Duration(held.hold))
	}
	if s := w.sentinel; s != nil {
		for _, g := range s.groups {
			for _, n := range s.members(g) {
				switch {
				case n.id == g.primary && n.replicaOf >= 0:
					return fmt.Errorf("invariant \"one primary\" broken: Sentinel's primary %s is a replica of n%d", n.name, n.replicaOf)
				case n.id != g.primary && n.replicaOf < 0:
					return fmt.Errorf("invariant \"one primary\" broken: %s is a primary beside Sentinel's %s", n.name, w.nodes[g.primary].name)
				case n.id != g.primary && n.replicaOf != g.primary:
					return fmt.Errorf("invariant \"one primary\" broken: %s follows n%d, not Sentinel's primary %s", n.name, n.replicaOf, w.nodes[g.primary].name)
				}
			}
			for _, p := range w.procs {
				if p.primary[g.id] != g.primary {
					return fmt.Errorf("invariant \"clients follow the primary\" broken: %s follows %s, Sentinel's primary is %s", p.name, w.nodes[p.primary[g.id]].name, w.nodes[g.primary].name)
				}
			}
		}
	}
	return nil
}
