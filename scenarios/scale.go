package scenarios

import (
	"fmt"
	"math"
	"time"
)

// NominalTTL is the lease a lock without one (setnx-del, version-cas) is
// scaled by when a world is built for another TTL (Params.TTL):
// set-nx-cad's 3 s, so such a lock plays a scenario as fast as set-nx-cad.
const NominalTTL = 3 * time.Second

// A ScaleError is a world that cannot be played at the asked TTL
// (Params.TTL): the scale out of range, or a lock whose durations are
// fixed. The field to correct is the TTL.
type ScaleError struct{ Err error }

func (e *ScaleError) Error() string { return "ttl: " + e.Err.Error() }
func (e *ScaleError) Unwrap() error { return e.Err }

// scaleParts plays built parts k times faster: every duration of the world
// (the phases, the fault schedule, clock offsets, replication lag,
// Sentinel's down-after, the go-redis timeouts), of the workload (hold and
// think times) and of the lock (every duration parameter of its table,
// its TTL included: locks.Info.Scaled) is multiplied by k. Ratios between
// them stay what the scenario says; the network's latency does not scale
// (loopback's in the real arm; the simulator's model in the sim arm), nor
// do counts and fractions (tries, replicas, drift factors, the drift rate
// of a clock: a rate, the same at any speed).
func scaleParts(p Parts, k float64) (Parts, error) {
	if math.IsNaN(k) || k <= 0 || k > 100 {
		return p, &ScaleError{fmt.Errorf("time scale %v out of range (0, 100]", k)}
	}
	info, err := p.Lock.Scaled(k)
	if err != nil {
		return p, &ScaleError{err}
	}
	sc := func(d time.Duration) time.Duration { return time.Duration(math.Round(float64(d) * k)) }
	wl := p.Workload
	wl.HoldMin, wl.HoldMax, wl.ThinkMin, wl.ThinkMax = sc(wl.HoldMin), sc(wl.HoldMax), sc(wl.ThinkMin), sc(wl.ThinkMax)
	cfg := p.Config
	cfg.Duration, cfg.Liveness = sc(cfg.Duration), sc(cfg.Liveness)
	cfg.Faults = append(cfg.Faults[:0:0], cfg.Faults...)
	for i := range cfg.Faults {
		f := &cfg.Faults[i]
		f.Start, f.Duration, f.Jump, f.Delay = sc(f.Start), sc(f.Duration), sc(f.Jump), sc(f.Delay)
	}
	cfg.Nodes = append(cfg.Nodes[:0:0], cfg.Nodes...)
	for i := range cfg.Nodes {
		cfg.Nodes[i].ClockOffset = sc(cfg.Nodes[i].ClockOffset)
	}
	cfg.ClientOffsets = append(cfg.ClientOffsets[:0:0], cfg.ClientOffsets...)
	for i := range cfg.ClientOffsets {
		cfg.ClientOffsets[i] = sc(cfg.ClientOffsets[i])
	}
	cfg.Topology.ReplLag, cfg.Topology.DownAfter = sc(cfg.Topology.ReplLag), sc(cfg.Topology.DownAfter)
	cfg.Redis.DialTimeout, cfg.Redis.ReadTimeout = sc(cfg.Redis.DialTimeout), sc(cfg.Redis.ReadTimeout)
	cfg.Redis.WriteTimeout, cfg.Redis.RetryBackoff = sc(cfg.Redis.WriteTimeout), sc(cfg.Redis.RetryBackoff)
	cfg.Program = Program(info, wl)
	return Parts{Config: cfg, Lock: info, Workload: wl, Scale: k * p.Scale, OrigTTL: p.OrigTTL}, nil
}
