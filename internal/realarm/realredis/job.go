package realredis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

// DefaultTTL is the lease the real arm runs a lock with unless told
// otherwise: scenarios are written in multiples of the TTL, so a short one
// makes a run take seconds (pause-after-check: 8 TTL of safety phase).
const DefaultTTL = 500 * time.Millisecond

// NominalTTL is the lease a lock without one (setnx-del, version-cas) is
// scaled by: set-nx-cad's 3 s, so --ttl plays its scenario as fast as
// set-nx-cad's.
const NominalTTL = scenarios.NominalTTL

// MinTTL and MaxTTL bound --ttl.
const (
	MinTTL = 50 * time.Millisecond
	MaxTTL = time.Minute
)

// Job is a run.Job for the real arm: the scenario built for the lock and
// seed, then played Scale times faster so that the lock's TTL is TTL
// (Scale). Its run.Job runs in the simulator too (the parity table's sim
// arm), on exactly the same scaled world.
type Job struct {
	*run.Job
	// Parts are the scaled world, lock and workload.
	Parts scenarios.Parts
	// Scale is the factor every duration was multiplied by; OrigTTL the
	// lock's own TTL before it.
	Scale   float64
	OrigTTL time.Duration
	// TTL is the lease asked for (--ttl); Lock.TTL is it too, or 0 for a
	// lock without a lease (scaled by NominalTTL).
	TTL time.Duration
	// Driver, when set, runs in every client instead of the lock's Go
	// code (WithDriver, driver.go).
	Driver *Driver
}

// Build builds spec for the real arm with the lock's TTL set to ttl (0:
// DefaultTTL). It refuses, naming the reason, what the arm cannot run yet.
func Build(spec run.Spec, ttl time.Duration) (*Job, error) {
	j, err := BuildScaled(spec, ttl)
	if err != nil {
		return nil, err
	}
	if err := Supported(j.Parts); err != nil {
		return nil, &run.InputError{Field: "scenario", Err: err}
	}
	return j, nil
}

// BuildScaled is Build without the check of what the real arm supports:
// the scaled world, which the simulator runs whatever it holds (the
// parity table's sim arm).
func BuildScaled(spec run.Spec, ttl time.Duration) (*Job, error) {
	if info, err := catalogue.Get(spec.Lock); err == nil && info.Real != "" {
		// Designs on a real coordination service (consensus.go).
		if ttl == 0 {
			ttl = ConsensusTTL
		}
		if info.Real == "etcd" && ttl%time.Second != 0 {
			return nil, &run.InputError{Field: "ttl", Err: fmt.Errorf("%v: %s runs on etcd, whose leases are whole seconds (1s, 2s, ...)", ttl, spec.Lock)}
		}
	}
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return nil, &run.InputError{Field: "ttl", Err: fmt.Errorf("%v out of range [%v, %v]", ttl, MinTTL, MaxTTL)}
	}
	switch {
	case spec.Pause != nil:
		return nil, &run.InputError{Field: "pause", Err: errors.New("not supported by the real backend yet")}
	case spec.Faults != nil:
		return nil, &run.InputError{Field: "faults", Err: errors.New("not supported by the real backend yet")}
	case spec.Step != nil:
		return nil, &run.InputError{Field: "step", Err: errors.New("not supported by the real backend yet")}
	}
	// The world is built once, by the scenario file's builder, with the
	// TTL as an input (scenarios.Params.TTL): the world, the workload and
	// the lock's parameters (its table, locks.Info.Scaled) come out played
	// TTL / the lock's own TTL times as fast. An input the builder refuses
	// is reported as the simulator reports it (run.Spec.Build).
	info, err := catalogue.Get(spec.Lock)
	if err != nil || info.Unavailable != "" {
		return nil, specError(spec, err)
	}
	sc, err := scenarios.Resolve(spec.ScenarioID())
	if err != nil {
		return nil, specError(spec, err)
	}
	if sc.File == nil {
		return nil, &run.InputError{Field: "scenario", Err: fmt.Errorf("%s is written in Go, not as a scenario file: the real backend runs scenario files only", sc.ID)}
	}
	params := spec.Params
	params.TTL = ttl
	scaled, err := sc.File.Parts(info, spec.Seed, params)
	if err != nil {
		if se := (*scenarios.ScaleError)(nil); errors.As(err, &se) {
			return nil, &run.InputError{Field: "ttl", Err: se.Err}
		}
		return nil, specError(spec, err)
	}
	k, own := scaled.Scale, scaled.OrigTTL
	j := sc.Judging(info)
	j.MaxUnavailable = time.Duration(math.Round(float64(j.MaxUnavailable) * k))
	cfg := scaled.Config
	if spec.MaxEvents > 0 {
		cfg.MaxEvents = spec.MaxEvents
	}
	job := &run.Job{Spec: spec, Scenario: sc.ID, Lock: scaled.Lock, Config: cfg, Judging: j,
		Check: checker.Options{RequireFairness: spec.Fairness}}
	return &Job{Job: job, Parts: scaled, Scale: k, OrigTTL: own, TTL: ttl}, nil
}

// Supported reports what the real arm cannot carry out in parts, or nil.
func Supported(p scenarios.Parts) error {
	var why []string
	// A cluster world's groups are its shards (sim.Config.checkShards).
	if p.Lock.Topology == locks.Groups || (p.Config.Topology.Groups > 1 && p.Config.Topology.Shards == 0) {
		why = append(why, "primary/replica groups (Redlock over Sentinel groups)")
	}
	if p.Lock.Topology == locks.Consensus && p.Lock.Real == "" {
		why = append(why, "a coordination service with no real counterpart")
	}
	if p.Lock.Topology == locks.Replicated && !p.Config.Topology.Replicated && len(p.Config.Nodes) > 1 {
		why = append(why, "a replicated lock on several nodes")
	}
	nodes := map[string]bool{}
	for _, n := range p.Config.Nodes {
		nodes[n.Name] = true
	}
	if p.Lock.Real != "" {
		for _, m := range coordMemberNames() {
			nodes[m] = true // the real coordination service's members (consensus.go)
		}
	}
	for i, f := range p.Config.Faults {
		switch f.Kind {
		case faults.Loss:
			why = append(why, "loss faults (toxiproxy has no per-packet loss on TCP)")
		case faults.NodePause, faults.Crash:
			if f.NodeClock {
				why = append(why, fmt.Sprintf("faults[%d]: a crash timed by the node's own clock (node_clock: the real arm restarts after true time)", i))
			}
			for _, t := range f.Targets {
				if !nodes[t] {
					why = append(why, fmt.Sprintf("faults[%d]: %s of %s (only Redis nodes)", i, f.Kind, t))
				}
			}
		}
	}
	if len(why) > 0 {
		why = slices.Compact(why)
		return fmt.Errorf("not supported by the real backend yet: %s", strings.Join(why, "; "))
	}
	return nil
}

// specError is the simulator's error for spec (run.Spec.Build: unknown or
// unavailable lock, unknown scenario, a world its builder refuses), or
// err when the simulator would build it.
func specError(spec run.Spec, err error) error {
	if _, serr := spec.Build(); serr != nil {
		return serr
	}
	return &run.InputError{Err: err}
}

// runClient runs the scenario's workload with the (scaled) lock on p.
func runClient(p *proc, j *Job) {
	if j.Driver != nil {
		runDriverClient(p, j)
		return
	}
	scenarios.RunClient(p, j.Parts.Lock, j.Parts.Workload)
}
