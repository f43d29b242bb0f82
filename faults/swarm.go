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
	// TTL, when set, makes every size that can break a lease relative to
	// it (see Gen).
	TTL time.Duration
	// Limits cap the sizes (a zero field: no cap).
	Limits Limits
	// Targets, when set, aim the faults at these processes (names among
	// Clients and Nodes): a pause, crash or clock fault targets one of
	// them, and a partition, delay or loss cuts a non-empty set of them
	// off from every other process. A kind that cannot land on them (a
	// node pause among clients only; failover unless every node is a
	// target) is not drawn.
	Targets []string
	// PausePoints, when set, aim every client pause at one of these lock
	// phases (among PausePoints): none begins untargeted at its start.
	PausePoints []string
	// ArmPoints, when set, arm about half of the partitions, delays, losses
	// and client pauses drawn at one of these points (among Points; the ones
	// the world's clients reach): such a fault begins when a client first
	// reaches the point at or after its drawn start (Fault.At, Fault.On),
	// not at the start itself. A client pause waits for its target, a
	// network fault for a client it cuts off from a node (when it cuts one,
	// else any client). Clock faults, node pauses, crashes and failovers
	// are not armed: what they break is a lease's remaining time, which a
	// uniform start spreads best (TestSearchPower found single-node clock
	// jumps in 61 of 300 schedules unarmed, 48-51 armed at acquire or
	// releasing, 31 armed before the holder's write). An armed partition,
	// delay or loss lasts from TTL/100 to 2 × TTL
	// (without a TTL, 10 ms to 2 s): from one action in flight (a reply
	// late past its deadline) to an outage that outlives the lease from
	// that moment on. A client pause already drawn at a pause point keeps
	// it. nil: no fault is armed, and the draws are the same as before
	// ArmPoints existed.
	ArmPoints []string
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
	if b.Kinds != nil && len(b.kinds()) == 0 {
		return nil, fmt.Errorf("swarm: no kind applies (failover needs a replicated topology)")
	}
	if int64(b.Duration)*8/10 < 1 && b.MaxFaults > 0 {
		return nil, fmt.Errorf("swarm: duration %v leaves no room for a fault (faults start in its first 80%%)", b.Duration)
	}
	return draw(randSource{r}, b), nil
}

// randSource draws uniformly from a *rand.Rand: Swarm's stream, which
// every default run's trace depends on (its draws, their order and their
// arithmetic must not change).
type randSource struct{ r *rand.Rand }

func (s randSource) count(lo, hi int, fault func(source) Fault) []Fault {
	n := lo + s.r.IntN(hi-lo+1)
	out := make([]Fault, 0, n)
	for range n {
		out = append(out, fault(s))
	}
	return out
}

func (s randSource) index(_ string, n int) int       { return s.r.IntN(n) }
func (s randSource) start(span int64) time.Duration  { return time.Duration(s.r.Int64N(span)) }
func (s randSource) signed(_ string, hi int64) int64 { return s.r.Int64N(2*hi+1) - hi }
func (s randSource) coin(string) bool                { return s.r.IntN(2) == 0 }
func (s randSource) oneWay() bool                    { return s.r.IntN(4) == 0 }
func (s randSource) lossProb() float64               { return 0.05 + 0.45*s.r.Float64() }
func (s randSource) pausePoint(int) int              { return 0 }
func (s randSource) size(_ string, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.r.Int64N(int64(hi-lo)+1))
}

// split cuts a random permutation of the processes in two non-empty
// sides.
func (s randSource) split(n int) (from, to []int) {
	perm := s.r.Perm(n)
	cut := 1 + s.r.IntN(n-1)
	return perm[:cut], perm[cut:]
}
