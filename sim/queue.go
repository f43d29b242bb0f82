package sim

import "container/heap"

// stepKind names what a step of the world is.
type stepKind string

// The kinds of step.
const (
	stepArrive       stepKind = "arrive"
	stepDeadline     stepKind = "deadline"
	stepFault        stepKind = "fault"
	stepFaultEnd     stepKind = "fault-end"
	stepFsync        stepKind = "fsync"
	stepGo           stepKind = "go"
	stepHeal         stepKind = "heal"
	stepLive         stepKind = "live"
	stepMemberMsg    stepKind = "member-msg"
	stepMemberTimer  stepKind = "member-timer"
	stepRepl         stepKind = "repl"
	stepReplAck      stepKind = "repl-ack"
	stepReply        stepKind = "reply"
	stepReset        stepKind = "reset"
	stepResume       stepKind = "resume"
	stepSend         stepKind = "send"
	stepSentinel     stepKind = "sentinel"
	stepStart        stepKind = "start"
	stepStop         stepKind = "stop"
	stepSwitchMaster stepKind = "switch-master"
	stepWaitTimeout  stepKind = "wait-timeout"
	stepWake         stepKind = "wake"
)

// phase is the world's phase: phaseSafety while faults may be active,
// phaseLiveness after the heal (Proc.Phase).
type phase string

// The phases.
const (
	phaseSafety   phase = "safety"
	phaseLiveness phase = "liveness"
)

// An event is one step of the world: something that happens at a true time.
// Events are ordered by (at, src, seq). src names who scheduled the event
// (0: the engine itself; otherwise a connection or process) and seq counts
// that source's events, so the order never depends on which goroutine got
// to the queue first.
type event struct {
	at     int64
	src    uint64
	seq    uint64
	target *Proc // if set, the event is deferred while target is paused
	// hold, when set, is the end of the pause or partition that put the
	// event off: the heal, which ends every fault, brings it forward to
	// heal time (plus whatever at adds beyond hold, a latency).
	hold int64
	// dead marks an event cancelled: the scheduler drops it unrun,
	// without advancing the clock to it.
	dead bool
	kind stepKind // what it is, for an invariant's message and the scheduler's ack rule
	// What the event does: fn, or, for the events of every Redis command,
	// an op on the fields below (no closure to allocate per command).
	op   evOp
	fn   func()
	c    *conn         // opArrive, opReply, opDeadline
	cmds [][]string    // opArrive
	data []byte        // opReply
	ch   chan struct{} // opWake
	arg  int64         // opDeadline: the deadline it was armed for
	// link marks a message on the network link a->b sent at sent: when it
	// arrives, a partition between the two holds it (network.held).
	link bool
	a, b int
	sent int64
	// requeued: the scheduler put the event back in the queue (a pause or
	// a partition holds it), so it is not recycled after running.
	requeued bool
}

// evOp is what an event does.
type evOp uint8

const (
	opFunc     evOp = iota // run fn
	opArrive               // cmds reach c's node
	opReply                // data reaches c's reader
	opDeadline             // c's read deadline armed for arg may have passed
	opWake                 // the sleeper blocked on ch wakes (target is its process)
)

type eventHeap []*event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return before(h[i], h[j]) }

// before is the queue's order: time, then source, then the source's sequence.
func before(a, b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.src != b.src {
		return a.src < b.src
	}
	return a.seq < b.seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	n := len(old)
	ev := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return ev
}

type eventQueue struct{ h eventHeap }

func (q *eventQueue) push(ev *event) { heap.Push(&q.h, ev) }
func (q *eventQueue) pop() *event    { return heap.Pop(&q.h).(*event) }
func (q *eventQueue) peek() *event {
	if len(q.h) == 0 {
		return nil
	}
	return q.h[0]
}
func (q *eventQueue) len() int { return len(q.h) }

// release brings every event held by a fault that ends later than now
// forward to now (keeping the latency it adds beyond the hold).
func (q *eventQueue) release(now int64) {
	for _, ev := range q.h {
		if ev.hold > now {
			ev.at = now + (ev.at - ev.hold)
			ev.hold = 0
		}
	}
	heap.Init(&q.h)
}

// heldAfter returns a live event still held by a fault past now, or nil.
func (q *eventQueue) heldAfter(now int64) *event {
	for _, ev := range q.h {
		if !ev.dead && ev.hold > now {
			return ev
		}
	}
	return nil
}
