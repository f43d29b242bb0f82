package sim

import (
	"math"
	"math/rand/v2"

	"github.com/locksim/locksim/faults"
)

// Endpoints: client processes are 0..Clients-1, nodes nodeAddr(i), Sentinel
// sentinelAddr.
const (
	nodeBase     = 1 << 20
	serviceBase  = nodeBase + 1<<16
	sentinelAddr = 1 << 21
	// serviceIndex is where services start in a process's dial index space
	// (nodes are 0..MaxNodes-1).
	serviceIndex = 1 << 10
	// SentinelName is the Sentinel process's name in fault targets.
	SentinelName = "sentinel"
)

func nodeAddr(i int) int { return nodeBase + i }

// linkFault is an active partition, delay spike or loss on a set of links.
type linkFault struct {
	kind   faults.Kind
	from   map[int]bool
	to     map[int]bool
	oneWay bool
	end    int64
	delay  int64
	loss   float64
	fault  int // the schedule's fault number, 1-based (Result.Effects)
}

func (f *linkFault) matches(a, b int) bool {
	if f.from[a] && f.to[b] {
		return true
	}
	return !f.oneWay && f.from[b] && f.to[a]
}

type network struct {
	w      *World
	active []*linkFault
	rng    *rand.Rand // for engine-originated messages; client sends use their conn's stream
}

func newNetwork(w *World) *network {
	return &network{w: w, rng: w.streams.Get("network")}
}

// latency draws one message's one-way latency on the link a->b at true time
// t, including active delay spikes and loss (a lost segment is retransmitted
// after an RTO of 200 ms, doubling, as TCP does).
func (n *network) latency(rng *rand.Rand, a, b int, t int64) int64 {
	cfg := n.w.cfg.Net
	d := int64(cfg.LatencyMin)
	if cfg.LatencyJitter > 0 {
		d += int64(rng.ExpFloat64() * float64(cfg.LatencyJitter))
	}
	for _, f := range n.active {
		if f.end <= t || !f.matches(a, b) {
			continue
		}
		switch f.kind {
		case faults.Delay:
			d += f.delay
			n.w.noteLinkEffect(f, a, b)
		case faults.Loss:
			rto := int64(200e6)
			for i := 0; i < 8 && rng.Float64() < f.loss; i++ {
				d += rto
				rto *= 2
				if i == 0 {
					n.w.noteLinkEffect(f, a, b)
				}
			}
		}
	}
	return d
}

// heldUntil reports whether a partition holds messages on a->b at true time
// t, and until when.
func (n *network) heldUntil(a, b int, t int64) (int64, bool) {
	until, held := int64(0), false
	for _, f := range n.active {
		if f.kind != faults.Partition || f.end <= t || !f.matches(a, b) {
			continue
		}
		held = true
		until = max(until, f.end)
	}
	return until, held
}

// reachable reports whether a and b can talk both ways now.
func (n *network) reachable(a, b int) bool {
	t := n.w.now()
	_, h1 := n.heldUntil(a, b, t)
	_, h2 := n.heldUntil(b, a, t)
	return !h1 && !h2
}

func (n *network) add(f faults.Fault, end int64, fault int) *linkFault {
	lf := &linkFault{kind: f.Kind, from: n.addrs(f.From), to: n.addrs(f.To), oneWay: f.OneWay, end: end, delay: int64(f.Delay), loss: f.LossProb, fault: fault}
	n.active = append(n.active, lf)
	return lf
}

func (n *network) remove(lf *linkFault) {
	for i, f := range n.active {
		if f == lf {
			n.active = append(n.active[:i], n.active[i+1:]...)
			return
		}
	}
}

func (n *network) healAll() { n.active = nil }

func (n *network) addrs(names []string) map[int]bool {
	m := make(map[int]bool, len(names))
	for _, s := range names {
		if a, ok := n.w.lookup(s); ok {
			m[a] = true
		}
	}
	return m
}

// deliver carries a message from a to b sent at true time t: it arrives
// after the link's latency (never before an earlier message on the same
// ordered stream, whose last arrival *last tracks), is held while a
// partition separates the two, and is dropped after MaxHold. fn runs at
// arrival; target, if set, defers it while that process is paused.
func (n *network) deliver(rng *rand.Rand, a, b int, last *int64, target *Proc, kind stepKind, fn func()) {
	ev := n.deliverLink(rng, a, b, last, target, kind)
	ev.fn = fn
	n.w.mu.Unlock()
}

// deliverLink is deliver that returns the event with w.mu held, for the
// caller to say what it does.
func (n *network) deliverLink(rng *rand.Rand, a, b int, last *int64, target *Proc, kind stepKind) *event {
	t := n.w.now()
	at := t + n.latency(rng, a, b, t)
	if last != nil {
		at = max(at, *last)
		*last = at
	}
	n.w.mu.Lock()
	return n.w.afterLinkLocked(at, target, kind, a, b, t)
}

// held runs when a message event (event.link) arrives: while a partition
// separates its link it is put off until the partition heals (plus a fresh
// latency), up to MaxHold after sending, then dropped. It reports whether
// the message was held or dropped (not delivered now).
func (n *network) held(ev *event) bool {
	now := n.w.now()
	until, held := n.heldUntil(ev.a, ev.b, now)
	if !held {
		return false
	}
	for _, f := range n.active {
		if f.kind == faults.Partition && f.end > now && f.matches(ev.a, ev.b) {
			n.w.noteLinkEffect(f, ev.a, ev.b)
		}
	}
	if until-ev.sent > int64(n.w.cfg.Net.MaxHold) || until == math.MaxInt64 {
		return true // the connection gave up: the message is lost
	}
	at := until + n.latency(n.rng, ev.a, ev.b, until)
	w := n.w
	w.mu.Lock()
	w.seq++
	ev.at, ev.hold, ev.src, ev.seq = at, until, 0, w.seq
	ev.requeued = true
	w.q.push(ev)
	w.mu.Unlock()
	return true
}
