package sim

import (
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
)

// toyMember answers LATER after 100 ms of its own clock (a deferred
// reply), and SEND by sending a message to service 1; it counts starts
// and what it received, with the true time of each.
type toyMember struct {
	h        *Host
	starts   int
	received []int64
}

func (m *toyMember) Start(h *Host) { m.h = h; m.starts++ }
func (m *toyMember) Crash()        { m.h = nil }
func (m *toyMember) Receive(from int, msg any) {
	m.received = append(m.received, m.h.n.w.now())
}
func (m *toyMember) Exec(now int64, client string, args []string, reply Reply, record func(Event)) {
	switch args[0] {
	case "LATER":
		p := m.h.Defer("LATER")
		m.h.After(100*time.Millisecond, func() { p.Reply(func(r Reply) { r.WriteBulk(args[1]) }) })
	case "SEND":
		m.h.Send(1, "hi")
		reply.WriteOK()
	default:
		reply.WriteError("ERR unknown")
	}
}

func toyWorld(t *testing.T, fs []faults.Fault, prog Program) (*Result, []*toyMember) {
	t.Helper()
	ms := []*toyMember{{}, {}}
	cfg := Config{Seed: 1, Duration: 2 * time.Second, Liveness: 100 * time.Millisecond, Clients: 1, Nodes: []NodeConfig{{}},
		Services: []ServiceConfig{{Name: "m0", New: func() Service { return ms[0] }}, {Name: "m1", New: func() Service { return ms[1] }}},
		Faults:   fs}.WithDefaults()
	cfg.Program = prog
	res, err := Run(TestBubble(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, ms
}

// A deferred reply arrives when the member sends it; a crash drops it
// (the client sees a reset, never the reply) and restarts the member.
func TestMemberDeferredReply(t *testing.T) {
	var took time.Duration
	var got string
	var err1, err2 error
	_, ms := toyWorld(t, []faults.Fault{{Kind: faults.Crash, Start: 1050 * time.Millisecond, Duration: 200 * time.Millisecond, Targets: []string{"m0"}}},
		func(p *Proc) {
			start := p.TrueNow()
			got, err1 = p.Service(0).Do(p.Context(), "LATER", "x").Text()
			took = time.Duration(p.TrueNow() - start)
			p.Sleep(time.Second - time.Duration(p.TrueNow()))
			_, err2 = p.Service(0).Do(p.Context(), "LATER", "y").Text() // the crash at 1.05 s drops it
			for !p.Stopping() {
				p.Sleep(100 * time.Millisecond)
			}
		})
	if err1 != nil || got != "x" || took < 100*time.Millisecond || took > 110*time.Millisecond {
		t.Fatalf("first LATER: %q, %v after %v; want x after 100 ms", got, err1, took)
	}
	if err2 == nil {
		t.Fatalf("second LATER answered across a crash")
	}
	if ms[0].starts != 2 {
		t.Fatalf("m0 started %d times, want 2 (start, restart)", ms[0].starts)
	}
}

// A message between members takes the link's latency, and a partition
// holds it until it heals.
func TestMemberSendHeldByPartition(t *testing.T) {
	_, ms := toyWorld(t, []faults.Fault{{Kind: faults.Partition, Start: 500 * time.Millisecond, Duration: time.Second, From: []string{"m0"}, To: []string{"m1"}}},
		func(p *Proc) {
			for _, at := range []time.Duration{100 * time.Millisecond, 700 * time.Millisecond} {
				p.Sleep(at - time.Duration(p.TrueNow()))
				if err := p.Service(0).Do(p.Context(), "SEND").Err(); err != nil {
					t.Errorf("SEND: %v", err)
				}
			}
			for !p.Stopping() {
				p.Sleep(100 * time.Millisecond)
			}
		})
	r := ms[1].received
	if len(r) != 2 {
		t.Fatalf("m1 received %d messages, want 2", len(r))
	}
	if r[0] < int64(100*time.Millisecond) || r[0] > int64(110*time.Millisecond) {
		t.Fatalf("first message arrived at %v, want just after 100 ms", time.Duration(r[0]))
	}
	if r[1] < int64(1500*time.Millisecond) || r[1] > int64(1510*time.Millisecond) {
		t.Fatalf("held message arrived at %v, want just after the heal at 1.5 s", time.Duration(r[1]))
	}
}
