package scenarios

import (
	"fmt"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// History converts a run's result into the checkers' input. Resource and
// initial are the workload's object (ResourcePool and PoolSize for the
// built-in scenarios).
func History(res *sim.Result, cfg sim.Config, info locks.Info, resourceKind string, initial int64) checker.History {
	h := checker.History{
		Heal:     int64(cfg.Duration),
		End:      int64(cfg.Duration + cfg.Liveness),
		Fencing:  string(info.Fencing),
		Resource: resourceKind,
		Initial:  initial,
		Capped:   res.TraceCapped,
		KeyTruth: len(cfg.WatchKeys) > 0,
		LeaseTTL: int64(info.TTL),
		Fair:     info.Fair,
	}
	if res.Stats.VirtualNS > 0 {
		h.End = res.Stats.VirtualNS
	}
	for i := 0; i < cfg.Clients; i++ {
		h.Clients = append(h.Clients, fmt.Sprintf("c%d", i))
	}
	h.Events = make([]checker.Event, 0, len(res.History))
	for _, e := range res.History {
		if e.Proc == "world" && e.Kind == "heal" {
			h.Heal = e.T
		}
		h.Events = append(h.Events, checker.Event{T: e.T, Proc: e.Proc, Kind: e.Kind, Op: e.Op, OpID: e.OpID,
			Until: e.Until, Token: e.Token, Value: e.Value, Result: e.Result, Lock: e.Lock, Peer: e.Peer, Detail: e.Detail})
	}
	return h
}

// Judged is one run of a scenario with its checked result.
type Judged struct {
	Scenario string
	Lock     locks.Info
	Seed     uint64
	Config   sim.Config
	Result   *sim.Result
	History  checker.History
	Check    checker.Result
}

// RunChecked builds and runs one scenario in a bubble, then checks it
// (outside the bubble: porcupine uses goroutines and real timers). A
// built-in scenario file's workload resource and liveness bound
// (max_unavailable, unless opt sets one) decide how it is checked.
func RunChecked(b sim.Bubble, cfg sim.Config, scenario string, info locks.Info, opt checker.Options) (*Judged, error) {
	res, err := sim.Run(b, cfg)
	if err != nil {
		return nil, err
	}
	j := judgingFor(scenario, info)
	if opt.MaxUnavailable == 0 {
		opt.MaxUnavailable = j.MaxUnavailable
	}
	h := History(res, cfg, info, j.Resource, j.Initial)
	return &Judged{Scenario: scenario, Lock: info, Seed: cfg.Seed, Config: cfg, Result: res, History: h, Check: checker.Check(h, opt)}, nil
}
