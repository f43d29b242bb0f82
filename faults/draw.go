package faults

import (
	"fmt"
	"math/bits"
	"slices"
	"time"
)

// source is where a schedule's draws come from: Swarm's *rand.Rand
// (randSource) or a rapid test's *rapid.T (rapidSource). draw decides
// what is drawn, in which order and within which bounds; a source decides
// only how a value falls within them (uniform for Swarm; spread over
// decades and shrinkable for rapid).
type source interface {
	// count draws how many faults, in [lo, hi], and draws each with fault.
	count(lo, hi int, fault func(source) Fault) []Fault
	// index draws one of n choices (a kind, a target): [0, n).
	index(label string, n int) int
	// start draws a start in [0, span).
	start(span int64) time.Duration
	// size draws a duration in [lo, hi].
	size(label string, lo, hi time.Duration) time.Duration
	// signed draws a value in [-hi, hi] (rapidSource leaves out 0).
	signed(label string, hi int64) int64
	// coin draws true or false, about evenly.
	coin(label string) bool
	// split draws a network fault's sides: From, a non-empty proper
	// subset of n processes, and To, the rest (as indexes).
	split(n int) (from, to []int)
	// oneWay draws whether a network fault holds one direction only.
	oneWay() bool
	// lossProb draws a loss fault's probability.
	lossProb() float64
	// pausePoint draws which of n pause points a client pause targets
	// (0: none, i: PausePoints[i-1]); randSource draws none.
	pausePoint(n int) int
}

// sizeRange is one fault size's bounds: [lo, hi] without a TTL, [TTL /
// loDen, TTL × hiMul] with one, capped by limit (a Limits field).
type sizeRange struct {
	label        string
	lo, hi       time.Duration
	loDen, hiMul int64
	limit        func(Limits) time.Duration
}

// The sizes of every kind, in one table.
var (
	sizePause     = sizeRange{"pause", 50 * time.Millisecond, SwarmMaxPause, 1000, 5, func(l Limits) time.Duration { return l.Pause }}
	sizeNodePause = sizeRange{"pause", 50 * time.Millisecond, SwarmMaxNodePause, 1000, 2, func(l Limits) time.Duration { return l.NodePause }}
	sizeDriftFor  = sizeRange{"drift-for", time.Second, 30 * time.Second, 100, 10, nil}
	sizeJump      = sizeRange{"jump", 0, SwarmMaxJump, 1000, 5, func(l Limits) time.Duration { return l.Jump }}
	sizePartition = sizeRange{"partition", 100 * time.Millisecond, SwarmMaxPartition, 1000, 5, func(l Limits) time.Duration { return l.Partition }}
	sizeDelayFor  = sizeRange{"delay-for", 100 * time.Millisecond, 10 * time.Second, 100, 5, nil}
	sizeDelay     = sizeRange{"delay", 10 * time.Millisecond, SwarmMaxDelay, 1000, 2, func(l Limits) time.Duration { return l.Delay }}
	sizeLossFor   = sizeRange{"loss-for", 100 * time.Millisecond, 10 * time.Second, 100, 5, nil}
	sizeCrash     = sizeRange{"down", 100 * time.Millisecond, SwarmMaxCrash, 1000, 5, func(l Limits) time.Duration { return l.Down }}
	sizeFailover  = sizeRange{"down", time.Second, SwarmMaxFailover, 1000, 5, func(l Limits) time.Duration { return l.Down }}
)

// bounds are r's [lo, hi] under b.
func (r sizeRange) bounds(b Bounds) (lo, hi time.Duration) {
	lo, hi = r.lo, r.hi
	if b.TTL > 0 {
		lo, hi = max(b.TTL/time.Duration(r.loDen), time.Millisecond), b.TTL*time.Duration(r.hiMul)
	}
	if r.limit != nil {
		if l := r.limit(b.Limits); l > 0 {
			hi = min(hi, l)
			lo = min(lo, hi)
		}
	}
	return lo, hi
}

func (r sizeRange) draw(s source, b Bounds) time.Duration {
	lo, hi := r.bounds(b)
	return s.size(r.label, lo, hi)
}

// draw draws a schedule within b from s (b valid: b.check), sorted.
func draw(s source, b Bounds) []Fault {
	kinds := b.kinds()
	all := append(append([]string(nil), b.Clients...), b.Nodes...)
	span := max(int64(b.Duration)*8/10, 1)
	out := s.count(b.MinFaults, b.MaxFaults, func(s source) Fault { return drawFault(s, b, kinds, all, span) })
	Sort(out)
	return out
}

// drawFault draws one fault: its kind, its start, then its targets and
// sizes (see Gen for the ranges).
func drawFault(s source, b Bounds, kinds []Kind, all []string, span int64) Fault {
	f := Fault{Kind: kinds[s.index("kind", len(kinds))], Start: s.start(span)}
	pick := func(label string, names []string) []string {
		names = b.among(names)
		return []string{names[s.index(label, len(names))]}
	}
	// A clock fault lands on a node half of the time with a TTL (a node's
	// clock decides when the lock's key expires), else on any process;
	// an aimed one on any of the targets.
	clockTarget := func() []string {
		if len(b.Targets) > 0 {
			return pick("process", all)
		}
		if b.TTL > 0 && s.coin("on-node") {
			return pick("node", b.Nodes)
		}
		return pick("process", all)
	}
	switch f.Kind {
	case ClientPause:
		f.Targets = pick("client", b.Clients)
		f.Duration = sizePause.draw(s, b)
		if len(b.PausePoints) > 0 {
			f.At = b.PausePoints[s.index("at", len(b.PausePoints))]
			break
		}
		if i := s.pausePoint(len(PausePoints)); i > 0 {
			f.At = PausePoints[i-1]
		}
	case NodePause:
		f.Targets = pick("node", b.Nodes)
		f.Duration = sizeNodePause.draw(s, b)
	case ClockDrift:
		f.Targets = clockTarget()
		f.Duration = sizeDriftFor.draw(s, b)
		if b.Limits.DriftMinPPM > 0 {
			// Aimed at drift: a clock that runs off keeps running off, to
			// the end of the safety phase (a drift over a fraction of a
			// lease moves its deadline by that fraction of the rate).
			f.Duration = max(b.Duration-f.Start, time.Millisecond)
		}
		if b.TTL > 0 || b.Limits.DriftMinPPM > 0 {
			def := int64(500_000)
			if b.TTL == 0 {
				def = SwarmMaxDriftPPM
			}
			hi := time.Duration(limitOr(b.Limits.DriftPPM, def))
			lo := min(10, hi)
			if b.Limits.DriftMinPPM > 0 {
				lo = min(time.Duration(b.Limits.DriftMinPPM), hi)
			}
			f.DriftPPM = int64(s.size("drift-ppm", lo, hi))
			if s.coin("drift-ppm-negative") {
				f.DriftPPM = -f.DriftPPM
			}
			break
		}
		f.DriftPPM = s.signed("drift-ppm", limitOr(b.Limits.DriftPPM, SwarmMaxDriftPPM))
	case ClockJump:
		f.Targets = clockTarget()
		if b.TTL > 0 {
			f.Jump = sizeJump.draw(s, b)
			if s.coin("jump-negative") {
				f.Jump = -f.Jump
			}
			break
		}
		f.Jump = time.Duration(s.signed("jump", int64(limitOr(b.Limits.Jump, SwarmMaxJump))))
	case Partition, Delay, Loss:
		f.From, f.To = b.sides(s, all)
		f.OneWay = s.oneWay()
		switch f.Kind {
		case Partition:
			f.Duration = sizePartition.draw(s, b)
		case Delay:
			f.Duration = sizeDelayFor.draw(s, b)
			f.Delay = sizeDelay.draw(s, b)
		case Loss:
			f.Duration = sizeLossFor.draw(s, b)
			f.LossProb = s.lossProb()
		}
	case Crash:
		f.Targets = pick("node", b.Nodes)
		f.Duration = sizeCrash.draw(s, b)
	case Failover:
		f.Duration = sizeFailover.draw(s, b)
	}
	if len(b.ArmPoints) > 0 {
		b.arm(s, &f)
	}
	return f
}

// sizeArmed is how long an armed network fault lasts: from about one
// action (a command's reply late past its deadline) to an outage past the
// lease.
var sizeArmed = sizeRange{"armed-for", 10 * time.Millisecond, 2 * time.Second, 100, 2, nil}

// arm arms f, half of the time, at one of b.ArmPoints (see
// Bounds.ArmPoints). Its draws come after all of f's others, so an unarmed
// f reads the same values as it would without ArmPoints.
func (b Bounds) arm(s source, f *Fault) {
	switch f.Kind {
	case ClientPause, Partition, Delay, Loss:
	default:
		return // not armed: no draw, so its draws are the unarmed ones
	}
	if f.At != "" || !s.coin("armed") {
		return
	}
	f.At = b.ArmPoints[s.index("armed-at", len(b.ArmPoints))]
	if f.Kind == ClientPause {
		return // it waits for its own target
	}
	// A network fault waits for a client whose traffic it cuts (a node on
	// the other side), when it cuts any: its next request then meets the
	// fault.
	on := b.Clients
	if cut := cutClients(f, b); len(cut) > 0 {
		on = cut
	}
	f.On = on[s.index("armed-on", len(on))]
	r := sizeArmed
	if f.Kind == Partition {
		r.limit = sizePartition.limit // Limits.Partition caps an armed partition too
	}
	f.Duration = r.draw(s, b)
}

// Limits cap the sizes drawn (Bounds.Limits); a zero field is no cap.
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
	// DriftMinPPM is the least drift rate's size drawn, either way: with
	// DriftPPM, a band (DriftMinPPM 5_000, DriftPPM 9_999: 0.5% to under
	// 1%). Setting it aims the search at drift: a drift then lasts from
	// its start to the end of the safety phase (Bounds.Duration), as a
	// clock whose oscillator runs off keeps running off; a drift drawn
	// for a fraction of a lease moves the lease's deadline by only that
	// fraction of its rate.
	DriftMinPPM int64
}

func limitOr[T int64 | time.Duration](limit, def T) T {
	if limit > 0 {
		return min(limit, def)
	}
	return def
}

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

// cutClients are the clients a network fault f separates from a node (in
// b.Clients' order).
func cutClients(f *Fault, b Bounds) []string {
	var out []string
	for _, c := range b.Clients {
		other := f.To
		switch {
		case slices.Contains(f.From, c):
		case slices.Contains(f.To, c):
			other = f.From
		default:
			continue
		}
		if slices.ContainsFunc(other, func(n string) bool { return slices.Contains(b.Nodes, n) }) {
			out = append(out, c)
		}
	}
	return out
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
	if b.Kinds != nil && len(b.kinds()) == 0 && len(b.Targets) == 0 {
		return fmt.Errorf("bounds: no kind applies (failover needs Replicated)")
	}
	return b.checkAim()
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
		if k == Failover && !b.Replicated || !b.reaches(k) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// among is names restricted to b.Targets (all of names when unaimed), in
// names' order.
func (b Bounds) among(names []string) []string {
	if len(b.Targets) == 0 {
		return names
	}
	var out []string
	for _, n := range names {
		if slices.Contains(b.Targets, n) {
			out = append(out, n)
		}
	}
	return out
}

// reaches reports whether a fault of kind k can land on b.Targets (every
// kind can when unaimed).
func (b Bounds) reaches(k Kind) bool {
	if len(b.Targets) == 0 {
		return true
	}
	switch k {
	case ClientPause:
		return len(b.among(b.Clients)) > 0
	case NodePause, Crash:
		return len(b.among(b.Nodes)) > 0
	case Failover:
		// The primary it fails can be any node by then.
		return len(b.among(b.Nodes)) == len(b.Nodes)
	}
	return true
}

// sides draws a network fault's From and To over all: any cut of the
// processes (in the order split drew them), or, aimed, a non-empty set of
// the targets cut off from every other process (in process order).
func (b Bounds) sides(s source, all []string) (from, to []string) {
	aimed := b.among(all)
	if len(aimed) == len(all) {
		f, t := s.split(len(all))
		for _, i := range f {
			from = append(from, all[i])
		}
		for _, i := range t {
			to = append(to, all[i])
		}
		return from, to
	}
	// A cut of the targets and one more index standing for everyone else:
	// the side without it is a non-empty set of targets.
	f, t := s.split(len(aimed) + 1)
	if slices.Contains(f, len(aimed)) {
		f = t
	}
	for _, n := range all {
		if i := slices.Index(aimed, n); i >= 0 && slices.Contains(f, i) {
			from = append(from, n)
		} else {
			to = append(to, n)
		}
	}
	return from, to
}

// checkAim reports why b's Targets, PausePoints or drift band cannot aim
// a schedule.
func (b Bounds) checkAim() error {
	for i, n := range b.Targets {
		if !slices.Contains(b.Clients, n) && !slices.Contains(b.Nodes, n) {
			return fmt.Errorf("bounds: target %q is neither a client (%v) nor a node (%v)", clip(n), b.Clients, b.Nodes)
		}
		if slices.Contains(b.Targets[:i], n) {
			return fmt.Errorf("bounds: target %q is named twice", n)
		}
	}
	if len(b.Targets) > 0 && len(b.kinds()) == 0 {
		return fmt.Errorf("bounds: no fault kind of %v can land on the targets %v", kindList(b), b.Targets)
	}
	for _, pt := range b.PausePoints {
		if !slices.Contains(PausePoints, pt) {
			return fmt.Errorf("bounds: pause point %q is not one of %v", clip(pt), PausePoints)
		}
	}
	for _, pt := range b.ArmPoints {
		if !slices.Contains(Points, pt) {
			return fmt.Errorf("bounds: arm point %q is not one of %v", clip(pt), Points)
		}
	}
	l := b.Limits
	switch {
	case l.DriftMinPPM < 0 || l.DriftPPM < 0:
		return fmt.Errorf("bounds: drift band %d..%d ppm: a size is never negative (drift is drawn either way)", l.DriftMinPPM, l.DriftPPM)
	case l.DriftMinPPM > 500_000:
		return fmt.Errorf("bounds: drift band floor %d ppm is above the largest drift, 500000 (50%%)", l.DriftMinPPM)
	case l.DriftPPM > 0 && l.DriftMinPPM > l.DriftPPM:
		return fmt.Errorf("bounds: drift band %d..%d ppm is empty (DriftMinPPM above DriftPPM)", l.DriftMinPPM, l.DriftPPM)
	}
	return nil
}

// kindList names the kinds b may draw from before aiming.
func kindList(b Bounds) []Kind {
	if b.Kinds != nil {
		return b.Kinds
	}
	return Kinds
}
