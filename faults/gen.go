package faults

import (
	"fmt"
	"math/bits"
	"time"

	"pgregory.net/rapid"
)

// Gen is a rapid generator of fault schedules within b, for users' property
// tests: between b.MinFaults and b.MaxFaults faults of b.Kinds (nil: every
// kind that applies; failover only when b.Replicated), each valid
// (Fault.Validate accepts it with b's names), starting in
// [0, 0.8 × b.Duration), magnitudes within the swarm limits (SwarmMaxPause,
// SwarmMaxDriftPPM, ...). The schedule is sorted (Sort).
//
// With b.TTL set (the lease of the lock under test), every size that can
// break a lease is drawn relative to it instead, spread evenly over its
// decades so that sizes below, around and well above the TTL are all
// common: pauses, partitions, clock jumps, crash and failover down times
// in [TTL/1000, 5 × TTL], node pauses and delay spikes in [TTL/1000,
// 2 × TTL], delay and loss spells in [TTL/100, 5 × TTL], drift rates in
// ±[10 ppm, 50%] for [TTL/100, 10 × TTL]; clock faults then land on a node
// half of the time (a node's clock decides when the lock's key expires).
// b.Limits caps any of these sizes, with or without TTL.
//
// rapid shrinks a failing schedule toward fewer faults (any fault can be
// dropped, not only the last), earlier starts, shorter durations, smaller
// magnitudes (drift and jumps toward ±1, never to a no-op 0), fewer
// processes on a partition's side, and toward the first kinds of Kinds.
//
// Gen panics when b is unusable (no clients or nodes, a non-positive
// duration, a bad fault count range), like rapid's own generators do for
// bad arguments.
func Gen(b Bounds) *rapid.Generator[[]Fault] {
	if err := b.check(); err != nil {
		panic("faults.Gen: " + err.Error())
	}
	one := GenFault(b)
	return rapid.Custom(func(t *rapid.T) []Fault {
		s := rapid.SliceOfN(one, b.MinFaults, b.MaxFaults).Draw(t, "faults")
		Sort(s)
		return s
	})
}

// GenFault is a rapid generator of one fault within b (see Gen).
func GenFault(b Bounds) *rapid.Generator[Fault] {
	if err := b.check(); err != nil {
		panic("faults.GenFault: " + err.Error())
	}
	kinds := b.kinds()
	all := append(append([]string(nil), b.Clients...), b.Nodes...)
	span := max(int64(b.Duration)*8/10, 1)
	return rapid.Custom(func(t *rapid.T) Fault {
		// dur draws a duration in [lo, hi] spread evenly over its decades
		// (1–10 ms, 10–100 ms, ...): a plain range draw favours its low
		// end, so the pauses and partitions longer than a lease's TTL, the
		// ones that break locks, would be rare. It shrinks toward lo.
		dur := func(label string, lo, hi time.Duration) time.Duration {
			if hi <= lo {
				return lo
			}
			decades := 0
			for d := lo; d < hi/10; d *= 10 {
				decades++
			}
			// The decade is how many steps up a ladder of draws lead
			// (step i is taken with probability (n-i)/(n-i+1), so every
			// decade is about as likely), not one range draw: the
			// shrinker can then lower it one decade at a time (set a step
			// to 0), where an integer draw can get stuck between bit
			// lengths (TestGenShrinks stopped at 10 s in ~3% of seeds).
			// All steps are always drawn, so later draws never shift.
			k, climbing := 0, true
			for i := range decades {
				up := rapid.IntRange(0, decades-i).Draw(t, label+"-up-"+decadeNames[min(i, len(decadeNames)-1)]) > 0
				if climbing && up {
					k++
				} else {
					climbing = false
				}
			}
			from := lo
			for range k {
				from *= 10
			}
			return within(from, min(hi, from*10), rapid.Int64Range(0, fracOne).Draw(t, label))
		}
		// magnitude draws a non-zero value in ±[1, hi] that shrinks toward +1.
		magnitude := func(label string, hi int64) int64 {
			m := rapid.Int64Range(1, hi).Draw(t, label)
			if rapid.Bool().Draw(t, label+"-negative") {
				return -m
			}
			return m
		}
		// size draws one of the sizes that can break a lease: relative to
		// the TTL when b.TTL is set (lo and hi as TTL fractions: [TTL ×
		// loNum/loDen, TTL × hiMul]), else in [time.Millisecond, swarm],
		// capped by limit when it is set.
		size := func(label string, swarm time.Duration, loDen, hiMul int64, limit time.Duration) time.Duration {
			lo, hi := time.Millisecond, swarm
			if b.TTL > 0 {
				lo, hi = max(b.TTL/time.Duration(loDen), time.Millisecond), b.TTL*time.Duration(hiMul)
			}
			if limit > 0 {
				hi = min(hi, limit)
				lo = min(lo, hi)
			}
			return dur(label, lo, hi)
		}
		onNode := func() bool { return b.TTL > 0 && rapid.Bool().Draw(t, "on-node") }
		clockTarget := func() string {
			if onNode() {
				return rapid.SampledFrom(b.Nodes).Draw(t, "node")
			}
			return rapid.SampledFrom(all).Draw(t, "process")
		}
		f := Fault{Kind: rapid.SampledFrom(kinds).Draw(t, "kind")}
		// The start is drawn in two steps, a tenth of the span, then a
		// point in it: a plain range draw puts most faults in the first
		// microseconds, before any client holds anything.
		tenth := int64(rapid.IntRange(0, 9).Draw(t, "start-tenth"))
		lo, hi := span*tenth/10, span*(tenth+1)/10-1
		f.Start = within(time.Duration(lo), time.Duration(max(lo, hi)), rapid.Int64Range(0, fracOne).Draw(t, "start"))
		switch f.Kind {
		case ClientPause:
			f.Targets = []string{rapid.SampledFrom(b.Clients).Draw(t, "client")}
			f.Duration = size("pause", SwarmMaxPause, 1000, 5, b.Limits.Pause)
			f.At = rapid.SampledFrom(append([]string{""}, PausePoints...)).Draw(t, "at")
		case NodePause:
			f.Targets = []string{rapid.SampledFrom(b.Nodes).Draw(t, "node")}
			f.Duration = size("pause", SwarmMaxNodePause, 1000, 2, b.Limits.NodePause)
		case ClockDrift:
			f.Targets = []string{clockTarget()}
			if b.TTL > 0 {
				f.Duration = size("drift-for", 30*time.Second, 100, 10, 0)
				hi := time.Duration(limitOr(b.Limits.DriftPPM, 500_000))
				ppm := dur("drift-ppm", min(10, hi), hi)
				if rapid.Bool().Draw(t, "drift-ppm-negative") {
					ppm = -ppm
				}
				f.DriftPPM = int64(ppm)
				break
			}
			f.Duration = dur("drift-for", time.Millisecond, 30*time.Second)
			f.DriftPPM = magnitude("drift-ppm", limitOr(b.Limits.DriftPPM, SwarmMaxDriftPPM))
		case ClockJump:
			f.Targets = []string{clockTarget()}
			if b.TTL > 0 {
				j := size("jump", SwarmMaxJump, 1000, 5, b.Limits.Jump)
				if rapid.Bool().Draw(t, "jump-negative") {
					j = -j
				}
				f.Jump = j
				break
			}
			f.Jump = time.Duration(magnitude("jump", int64(limitOr(b.Limits.Jump, SwarmMaxJump))))
		case Partition, Delay, Loss:
			side := rapid.SliceOfNDistinct(rapid.SampledFrom(all), 1, len(all)-1, rapid.ID[string]).Draw(t, "side")
			in := map[string]bool{}
			for _, s := range side {
				in[s] = true
			}
			f.From = side
			for _, s := range all {
				if !in[s] {
					f.To = append(f.To, s)
				}
			}
			f.OneWay = rapid.Bool().Draw(t, "one-way")
			switch f.Kind {
			case Partition:
				f.Duration = size("partition", SwarmMaxPartition, 1000, 5, b.Limits.Partition)
			case Delay:
				f.Duration = size("delay-for", 10*time.Second, 100, 5, 0)
				f.Delay = size("delay", SwarmMaxDelay, 1000, 2, b.Limits.Delay)
			case Loss:
				f.Duration = size("loss-for", 10*time.Second, 100, 5, 0)
				f.LossProb = rapid.Float64Range(0.01, 1).Draw(t, "loss-prob")
			}
		case Crash:
			f.Targets = []string{rapid.SampledFrom(b.Nodes).Draw(t, "node")}
			f.Duration = size("down", SwarmMaxCrash, 1000, 5, b.Limits.Down)
		case Failover:
			f.Duration = size("down", SwarmMaxFailover, 1000, 5, b.Limits.Down)
		}
		return f
	})
}

// Limits cap the sizes Gen draws (Bounds.Limits); a zero field is no cap.
// A cap below a size's lower end lowers that end too.
type Limits struct {
	Pause, NodePause, Partition, Delay time.Duration
	// Jump caps a clock jump's size, either way.
	Jump time.Duration
	// Down caps how long a crashed node (or a failed-over primary) stays
	// down before it restarts.
	Down time.Duration
	// DriftPPM caps a drift rate's size, either way (10_000: under 1%).
	DriftPPM int64
}

func limitOr[T int64 | time.Duration](limit, def T) T {
	if limit > 0 {
		return min(limit, def)
	}
	return def
}

// decadeNames label the decade flips in rapid's draw log.
var decadeNames = []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "n"}

// fracOne is the denominator of the fractions within draws: a draw whose
// range is the same whatever came before, so that shrinking an earlier
// draw (a decade, a tenth) never shifts how the later ones read rapid's
// bits, and the shrinker can walk a duration down decade by decade.
const fracOne = 1 << 30

// within is lo + (hi-lo) × frac/fracOne, in integers (no float rounding
// that could differ between machines).
func within(lo, hi time.Duration, frac int64) time.Duration {
	h, l := bits.Mul64(uint64(hi-lo), uint64(frac))
	q, _ := bits.Div64(h, l, fracOne)
	return lo + time.Duration(q)
}

// check reports why b cannot bound a schedule.
func (b Bounds) check() error {
	switch {
	case b.Duration <= 0:
		return fmt.Errorf("bounds: duration must be positive")
	case len(b.Clients) == 0 || len(b.Nodes) == 0:
		return fmt.Errorf("bounds: needs at least one client and one node")
	case b.MinFaults < 0 || b.MaxFaults < b.MinFaults || b.MaxFaults > 1000:
		return fmt.Errorf("bounds: fault count range %d..%d invalid (0 ≤ min ≤ max ≤ 1000)", b.MinFaults, b.MaxFaults)
	case len(b.Clients)+len(b.Nodes) < 2:
		return fmt.Errorf("bounds: needs two processes")
	}
	for _, k := range b.Kinds {
		ok := false
		for _, known := range Kinds {
			ok = ok || k == known
		}
		if !ok {
			return fmt.Errorf("bounds: unknown fault kind %q", k)
		}
	}
	if b.Kinds != nil && len(b.kinds()) == 0 {
		return fmt.Errorf("bounds: no kind applies (failover needs Replicated)")
	}
	return nil
}

// kinds is b.Kinds, or every kind that applies, without failover unless
// the topology is replicated.
func (b Bounds) kinds() []Kind {
	src := b.Kinds
	if src == nil {
		src = Kinds
	}
	var out []Kind
	for _, k := range src {
		if k == Failover && !b.Replicated {
			continue
		}
		out = append(out, k)
	}
	return out
}
