package faults

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Bounds limit a random ("swarm") fault mix.
type Bounds struct {
	Duration   time.Duration // faults start in [0, 0.8*Duration)
	Clients    []string
	Nodes      []string
	Replicated bool // failover is drawn only for a replicated topology
	MinFaults  int
	MaxFaults  int    // at most this many faults
	Kinds      []Kind // nil: every kind that applies
	// TTL, when set, makes Gen draw every size that can break a lease
	// relative to it (see Gen); Swarm ignores it.
	TTL time.Duration
	// Limits cap Gen's sizes (a zero field: no cap); Swarm ignores them.
	Limits Limits
}

// Limits of the swarm draws, per kind.
const (
	SwarmMaxPause     = 15 * time.Second
	SwarmMaxNodePause = 5 * time.Second
	SwarmMaxDriftPPM  = 200_000 // ±20%
	SwarmMaxJump      = 30 * time.Second
	SwarmMaxPartition = 20 * time.Second
	SwarmMaxDelay     = 5 * time.Second
	SwarmMaxCrash     = 20 * time.Second
	SwarmMaxFailover  = 30 * time.Second
)

// Swarm draws a random fault schedule within b from r. The same r state and
// bounds give the same schedule.
func Swarm(r *rand.Rand, b Bounds) ([]Fault, error) {
	if b.Duration <= 0 {
		return nil, fmt.Errorf("swarm: duration must be positive")
	}
	if len(b.Clients) == 0 || len(b.Nodes) == 0 {
		return nil, fmt.Errorf("swarm: needs at least one client and one node")
	}
	if b.MaxFaults < b.MinFaults || b.MaxFaults > 1000 {
		return nil, fmt.Errorf("swarm: fault count range %d..%d invalid (max 1000)", b.MinFaults, b.MaxFaults)
	}
	kinds := b.Kinds
	if kinds == nil {
		for _, k := range Kinds {
			if k == Failover && !b.Replicated {
				continue
			}
			kinds = append(kinds, k)
		}
	}
	n := b.MinFaults + r.IntN(b.MaxFaults-b.MinFaults+1)
	out := make([]Fault, 0, n)
	span := int64(b.Duration) * 8 / 10
	if span < 1 && n > 0 {
		return nil, fmt.Errorf("swarm: duration %v leaves no room for a fault (faults start in its first 80%%)", b.Duration)
	}
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	pick := func(names []string) string { return names[r.IntN(len(names))] }
	all := append(append([]string(nil), b.Clients...), b.Nodes...)
	for i := 0; i < n; i++ {
		f := Fault{Kind: kinds[r.IntN(len(kinds))], Start: time.Duration(r.Int64N(span))}
		switch f.Kind {
		case ClientPause:
			f.Targets, f.Duration = []string{pick(b.Clients)}, dur(50*time.Millisecond, SwarmMaxPause)
		case NodePause:
			f.Targets, f.Duration = []string{pick(b.Nodes)}, dur(50*time.Millisecond, SwarmMaxNodePause)
		case ClockDrift:
			f.Targets, f.Duration = []string{pick(all)}, dur(time.Second, 30*time.Second)
			f.DriftPPM = r.Int64N(2*SwarmMaxDriftPPM+1) - SwarmMaxDriftPPM
		case ClockJump:
			f.Targets = []string{pick(all)}
			f.Jump = dur(-SwarmMaxJump, SwarmMaxJump)
		case Partition, Delay, Loss:
			// Split the processes in two random, non-empty sides.
			perm := r.Perm(len(all))
			cut := 1 + r.IntN(len(all)-1)
			for j, p := range perm {
				if j < cut {
					f.From = append(f.From, all[p])
				} else {
					f.To = append(f.To, all[p])
				}
			}
			f.OneWay = r.IntN(4) == 0
			switch f.Kind {
			case Partition:
				f.Duration = dur(100*time.Millisecond, SwarmMaxPartition)
			case Delay:
				f.Duration, f.Delay = dur(100*time.Millisecond, 10*time.Second), dur(10*time.Millisecond, SwarmMaxDelay)
			case Loss:
				f.Duration, f.LossProb = dur(100*time.Millisecond, 10*time.Second), 0.05+0.45*r.Float64()
			}
		case Crash:
			f.Targets, f.Duration = []string{pick(b.Nodes)}, dur(100*time.Millisecond, SwarmMaxCrash)
		case Failover:
			f.Duration = dur(time.Second, SwarmMaxFailover)
		}
		out = append(out, f)
	}
	Sort(out)
	return out, nil
}
