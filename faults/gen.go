package faults

import (
	"time"

	"pgregory.net/rapid"
)

// Gen is a rapid generator of fault schedules within b, for users' property
// tests: between b.MinFaults and b.MaxFaults faults of b.Kinds (nil: every
// kind that applies; failover only when b.Replicated), each valid
// (Fault.Validate accepts it with b's names), starting in
// [0, 0.8 × b.Duration), magnitudes within the swarm limits (SwarmMaxPause,
// SwarmMaxDriftPPM, ...): the ranges Swarm draws from, by the same code
// (draw), with rapid's distributions: sizes spread over their decades,
// drift and jumps never a no-op 0, a client pause at a pause point (or
// none) a fifth of the time each. The schedule is sorted (Sort).
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
// b aims the search when it narrows it: b.Targets (faults land on these
// processes only), b.PausePoints (every client pause waits for one of
// these points) and b.Limits.DriftMinPPM (drift rates in a band, each
// lasting to the end of the safety phase). Unaimed draws are unchanged.
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
	return rapid.Custom(func(t *rapid.T) []Fault { return draw(rapidSource{t}, b) })
}

// GenFault is a rapid generator of one fault within b (see Gen).
func GenFault(b Bounds) *rapid.Generator[Fault] {
	if err := b.check(); err != nil {
		panic("faults.GenFault: " + err.Error())
	}
	kinds := b.kinds()
	all := append(append([]string(nil), b.Clients...), b.Nodes...)
	span := max(int64(b.Duration)*8/10, 1)
	return rapid.Custom(func(t *rapid.T) Fault { return drawFault(rapidSource{t}, b, kinds, all, span) })
}

// rapidSource draws from a rapid test case: every value shrinks toward
// its range's low end (sizes, starts, counts), the first choice, false.
type rapidSource struct{ t *rapid.T }

func (s rapidSource) count(lo, hi int, fault func(source) Fault) []Fault {
	one := rapid.Custom(func(t *rapid.T) Fault { return fault(rapidSource{t}) })
	return rapid.SliceOfN(one, lo, hi).Draw(s.t, "faults")
}

func (s rapidSource) index(label string, n int) int {
	return rapid.SampledFrom(indexes(n)).Draw(s.t, label)
}

// start draws in two steps, a tenth of the span, then a point in it: a
// plain range draw puts most faults in the first microseconds, before any
// client holds anything.
func (s rapidSource) start(span int64) time.Duration {
	tenth := int64(rapid.IntRange(0, 9).Draw(s.t, "start-tenth"))
	lo, hi := span*tenth/10, span*(tenth+1)/10-1
	return within(time.Duration(lo), time.Duration(max(lo, hi)), rapid.Int64Range(0, fracOne).Draw(s.t, "start"))
}

// size draws a duration in [lo, hi] spread evenly over its decades
// (1–10 ms, 10–100 ms, ...): a plain range draw favours its low end, so
// the pauses and partitions longer than a lease's TTL, the ones that
// break locks, would be rare. It shrinks toward lo.
func (s rapidSource) size(label string, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	decades := 0
	for d := lo; d < hi/10; d *= 10 {
		decades++
	}
	// The decade is how many steps up a ladder of draws lead (step i is
	// taken with probability (n-i)/(n-i+1), so every decade is about as
	// likely), not one range draw: the shrinker can then lower it one
	// decade at a time (set a step to 0), where an integer draw can get
	// stuck between bit lengths (TestGenShrinks stopped at 10 s in ~3% of
	// seeds). All steps are always drawn, so later draws never shift.
	k, climbing := 0, true
	for i := range decades {
		up := rapid.IntRange(0, decades-i).Draw(s.t, label+"-up-"+decadeNames[min(i, len(decadeNames)-1)]) > 0
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
	return within(from, min(hi, from*10), rapid.Int64Range(0, fracOne).Draw(s.t, label))
}

// signed draws a non-zero value in ±[1, hi] that shrinks toward +1.
func (s rapidSource) signed(label string, hi int64) int64 {
	m := rapid.Int64Range(1, hi).Draw(s.t, label)
	if rapid.Bool().Draw(s.t, label+"-negative") {
		return -m
	}
	return m
}

func (s rapidSource) coin(label string) bool { return rapid.Bool().Draw(s.t, label) }

func (s rapidSource) split(n int) (from, to []int) {
	from = rapid.SliceOfNDistinct(rapid.SampledFrom(indexes(n)), 1, n-1, rapid.ID[int]).Draw(s.t, "side")
	in := make([]bool, n)
	for _, i := range from {
		in[i] = true
	}
	for i := range n {
		if !in[i] {
			to = append(to, i)
		}
	}
	return from, to
}

func (s rapidSource) oneWay() bool { return rapid.Bool().Draw(s.t, "one-way") }

func (s rapidSource) lossProb() float64 { return rapid.Float64Range(0.01, 1).Draw(s.t, "loss-prob") }

func (s rapidSource) pausePoint(n int) int { return rapid.SampledFrom(indexes(n+1)).Draw(s.t, "at") }

// indexes is 0, 1, ..., n-1.
func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// decadeNames label the decade flips in rapid's draw log.
var decadeNames = []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "n"}

// Check reports why b cannot bound a schedule (what Gen panics with).
func (b Bounds) Check() error { return b.check() }
