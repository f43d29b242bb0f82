package sim

import (
	"math/rand/v2"
	"time"
)

// Member is a Service that also acts on its own: it keeps timers on the
// scheduler and sends messages to other services over the simulated
// network (a member of a replicated coordination service). The engine
// calls Start when the service starts and after every restart, with a
// Host for that incarnation, and Crash when it crashes; what the member
// keeps across a crash is its own durable state. Everything runs on the
// scheduler, one call at a time.
type Member interface {
	Service
	Start(h *Host)
	Crash()
	// Receive is a message another service sent with Host.Send, delivered
	// after the link's latency.
	Receive(from int, msg any)
}

// Host is one incarnation of a member's handle on the engine. After a
// crash it is dead: its timers never fire and what it sends is dropped.
type Host struct {
	n     *Node
	epoch int
	cur   *conn // the connection whose command Exec is running
}

func (n *Node) member() (Member, bool) {
	m, ok := n.svc.(Member)
	return m, ok
}

func (n *Node) startMember() {
	if m, ok := n.member(); ok {
		if n.rng == nil {
			n.rng = n.w.streams.Get("member/" + n.name)
			n.netRng = n.w.streams.Get("member/" + n.name + "/net")
			n.lastTo = map[int]*int64{}
		}
		n.host = &Host{n: n, epoch: n.epoch}
		m.Start(n.host)
	}
}

func (n *Node) crashMember() {
	if m, ok := n.member(); ok {
		n.host = nil
		m.Crash()
	}
}

func (h *Host) alive() bool { return h.n.up && h.n.epoch == h.epoch && h.n.host == h }

// Name is the member's process name; Index its index in Config.Services.
func (h *Host) Name() string { return h.n.name }

// Index is the member's index in Config.Services (Send's address).
func (h *Host) Index() int { return h.n.id }

// Local is the member's own clock (ns), which clock faults move.
func (h *Host) Local() int64 { return h.n.local() }

// Rand is the member's own random stream ("member/<name>"), kept across
// restarts.
func (h *Host) Rand() *rand.Rand { return h.n.rng }

// Record adds an event to the trace as the member.
func (h *Host) Record(ev Event) {
	if ev.Proc == "" {
		ev.Proc = h.n.name
	}
	h.n.w.record(ev)
}

// After runs fn once d has passed on the member's own clock. A paused
// member runs it when it resumes; a crashed one never.
func (h *Host) After(d time.Duration, fn func()) {
	if !h.alive() {
		return
	}
	n := h.n
	n.w.after(n.w.now()+int64(n.clk.TrueAfter(d)), stepMemberTimer, func() {
		n.whenAwake(stepMemberTimer, func() {
			if h.alive() {
				fn()
			}
		})
	})
}

// Send carries msg to service to over the network: after the link's
// latency (drawn from the sender's stream "member/<name>/net"), in order
// per link, held by partitions and dropped after Net.MaxHold; a target that
// is down on arrival drops it, a paused one reads it on resume.
func (h *Host) Send(to int, msg any) {
	if !h.alive() || to < 0 || to >= len(h.n.w.services) {
		return
	}
	n, w := h.n, h.n.w
	r := w.services[to]
	last := n.lastTo[to]
	if last == nil {
		last = new(int64)
		n.lastTo[to] = last
	}
	from := n.id
	w.net.deliver(n.netRng, n.addr(), r.addr(), last, nil, stepMemberMsg, func() {
		r.whenAwake(stepMemberMsg, func() {
			if m, ok := r.member(); ok && r.up && r.host != nil {
				m.Receive(from, msg)
			}
		})
	})
}

// Pending is a client command whose reply comes later (Host.Defer).
type Pending struct {
	n     *Node
	c     *conn
	epoch int
	req   *waitReq
	cmd   string
}

// Defer, called from Exec, holds the running command's reply: the
// connection answers nothing (later commands on it queue) until
// Pending.Reply. A crash of the member drops it.
func (h *Host) Defer(cmd string) *Pending {
	c := h.cur
	if c == nil || !h.alive() {
		return nil
	}
	req := &waitReq{c: c}
	c.waitReq = req
	return &Pending{n: h.n, c: c, epoch: h.epoch, req: req, cmd: cmd}
}

// Reply writes the held reply with write and sends it; it does nothing
// after a crash, or the second time.
func (p *Pending) Reply(write func(Reply)) {
	if p == nil || p.req.done || p.n.epoch != p.epoch || !p.n.up {
		return
	}
	p.req.done = true
	c, n := p.c, p.n
	c.waitReq = nil
	before := c.out.Len() + c.bw.Buffered()
	write(c.peer)
	c.bw.Flush()
	n.w.trace.addCmd(n.w.now(), n.name, c.p.name, []string{p.cmd + "(done)"}, c.out.Bytes()[before:])
	backlog := c.backlog
	c.backlog = nil
	if len(backlog) > 0 {
		n.run(c, backlog)
		return
	}
	c.sendReply()
}
