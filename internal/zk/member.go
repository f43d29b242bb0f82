package zk

import (
	"fmt"
	"github.com/locksim/locksim/event"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/locksim/locksim/sim"
)

// Options configure the service.
type Options struct {
	// Members is how many raft members run (3 when 0).
	Members int
	// Tick is the raft tick, a scheduler event on each member's own clock
	// (20 ms when 0).
	Tick time.Duration
	// ElectionTicks is the election timeout in ticks: a follower that
	// hears from no leader for a timeout drawn uniformly from
	// [ElectionTicks, 2×ElectionTicks) on its own seeded stream campaigns
	// (10 when 0). The leader heartbeats every HeartbeatTicks (2 when 0).
	ElectionTicks, HeartbeatTicks int
	// CompactEvery bounds the log: every CompactEvery applied entries a
	// member snapshots its state machine and drops all but the last
	// CompactEvery/2 entries; a member that lags further behind gets the
	// snapshot (1000 when 0).
	CompactEvery int
}

func (o Options) withDefaults() Options {
	if o.Members == 0 {
		o.Members = 3
	}
	if o.Tick == 0 {
		o.Tick = 20 * time.Millisecond
	}
	if o.ElectionTicks == 0 {
		o.ElectionTicks = 10
	}
	if o.HeartbeatTicks == 0 {
		o.HeartbeatTicks = 2
	}
	if o.CompactEvery == 0 {
		o.CompactEvery = 1000
	}
	return o
}

// DefaultMembers is the service's size in the scenarios' worlds.
const DefaultMembers = 3

// MemberName is member i's process name (zk0, zk1, ...).
func MemberName(i int) string { return fmt.Sprintf("zk%d", i) }

// Services returns the members' service configs. first is the index the
// first member will have in sim.Config.Services (members address each
// other by service index).
func Services(o Options, first int) []sim.ServiceConfig {
	o = o.withDefaults()
	var out []sim.ServiceConfig
	for i := 0; i < o.Members; i++ {
		i := i
		out = append(out, sim.ServiceConfig{Name: MemberName(i), New: func() sim.Service {
			return newMember(o, first, i)
		}})
	}
	return out
}

// Coordination is the service of the scenarios' consensus worlds
// (DefaultMembers members), as locks/catalogue registers it
// (sim.RegisterCoordination).
func Coordination() sim.Coordination {
	names := make([]string, DefaultMembers)
	for i := range names {
		names[i] = MemberName(i)
	}
	return sim.Coordination{Name: "zk", Members: names, Services: func(first int) []sim.ServiceConfig {
		return Services(Options{Members: DefaultMembers}, first)
	}}
}

// Raft v3.6.0 randomizes its election timeout from crypto/rand
// (raft.go: globalRand), which no seed controls, and consults it only in
// tickElection, the tick of a follower or candidate. So a member calls
// RawNode.Tick only while it leads (heartbeats); as a follower it runs its
// own election timer, drawn from its seeded stream, and calls Campaign.
// The value raft draws is never consulted. Raft's CheckQuorum is off (its
// follower lease reads the election ticks followers never get); the
// leader steps down itself instead, as CheckQuorum's leader side does:
// every ElectionTicks it steps MsgCheckQuorum, and raft demotes a leader
// that heard from no quorum since the last check.

// Member is one member of the service: a raft RawNode over a
// MemoryStorage (its durable log and hard state: written before any
// message that depends on it is sent, as "fsync always"), the state
// machine, and the client commands it holds until their entries apply.
type Member struct {
	o     Options
	first int // service index of member 0
	id    uint64
	peers []uint64

	storage *raft.MemoryStorage // durable across crashes
	rn      *raft.RawNode
	h       *sim.Host
	st      *State

	applied, snapIndex uint64 // last applied entry, last snapshot
	snapsInstalled     int    // snapshots received from a leader

	inc     int // incarnation (a request id names it)
	seq     int
	pending map[string]pend

	// mono is the member's monotonic time (ns): its ticks × Tick. Session
	// timeouts count it, as ZooKeeper's session tracker counts ticks of
	// a monotonic clock: a drift of the member's clock changes its rate,
	// a jump of its wall clock does not move it.
	mono int64

	elapsed, timeout int // the seeded election timer, in ticks
	leader           bool
	leaderTicks      int
	expiring         map[int64]bool
}

type pend struct {
	p  *sim.Pending
	at int64 // local time proposed
}

func newMember(o Options, first, i int) *Member {
	m := &Member{o: o, first: first, id: uint64(i + 1), storage: raft.NewMemoryStorage()}
	for j := 0; j < o.Members; j++ {
		m.peers = append(m.peers, uint64(j+1))
	}
	// Every member starts from the same snapshot at index 1 that holds
	// the voters (raft's recommended bootstrap).
	if err := m.storage.ApplySnapshot(pb.Snapshot{Metadata: pb.SnapshotMetadata{
		Index: 1, Term: 1, ConfState: pb.ConfState{Voters: m.peers}}}); err != nil {
		panic(err)
	}
	return m
}

// SnapshotsInstalled counts the snapshots this member received from a
// leader because it lagged behind the compacted log.
func (m *Member) SnapshotsInstalled() int { return m.snapsInstalled }

// FirstIndex is the first entry the member's log still holds.
func (m *Member) FirstIndex() uint64 {
	i, _ := m.storage.FirstIndex()
	return i
}

// State is the member's applied state machine.
func (m *Member) State() *State { return m.st }

// Status is the member's raft status (nil while down).
func (m *Member) Status() (raft.BasicStatus, bool) {
	if m.rn == nil {
		return raft.BasicStatus{}, false
	}
	return m.rn.BasicStatus(), true
}

// Leads reports whether the member is up and believes it leads, and its
// raft term (the simulator resolves a fault's "leader" target with it).
func (m *Member) Leads() (term uint64, ok bool) {
	if m.rn == nil || !m.leader {
		return 0, false
	}
	return m.rn.BasicStatus().Term, true
}

// Start implements sim.Member: a fresh RawNode over the durable storage;
// the state machine is rebuilt by reapplying the committed log.
func (m *Member) Start(h *sim.Host) {
	m.h = h
	m.inc++
	m.st = NewState()
	snap, _ := m.storage.Snapshot()
	m.applied, m.snapIndex = snap.Metadata.Index, snap.Metadata.Index
	if len(snap.Data) > 0 {
		st, err := decodeState(snap.Data, m.mono)
		if err != nil {
			panic(err)
		}
		m.st = st
	}
	m.pending = map[string]pend{}
	m.expiring = map[int64]bool{}
	m.leader = false
	rn, err := raft.NewRawNode(&raft.Config{
		ID:                        m.id,
		ElectionTick:              m.o.ElectionTicks,
		HeartbeatTick:             m.o.HeartbeatTicks,
		Storage:                   m.storage,
		Applied:                   m.applied,
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		MaxUncommittedEntriesSize: 1 << 30,
		PreVote:                   true,
		Logger:                    quiet{},
	})
	if err != nil {
		panic(err)
	}
	m.rn = rn
	m.elapsed = 0
	m.timeout = m.drawTimeout()
	m.drain()
	m.h.After(m.o.Tick, m.tick)
}

// Crash implements sim.Member: everything but the storage is lost.
func (m *Member) Crash() {
	m.rn, m.h, m.st, m.pending = nil, nil, nil, nil
}

func (m *Member) drawTimeout() int {
	e := m.o.ElectionTicks
	return e + m.h.Rand().IntN(e)
}

// tick is the member's clock: raft's tick, the seeded election timer, the
// leader's session expiry, and the pending commands' bound.
func (m *Member) tick() {
	h := m.h
	m.mono += int64(m.o.Tick)
	if m.leader {
		m.rn.Tick() // heartbeats only: a leader's tick never reads raft's randomized timeout
		m.elapsed = 0
		if m.leaderTicks++; m.leaderTicks%m.o.ElectionTicks == 0 {
			_ = m.rn.Step(pb.Message{Type: pb.MsgCheckQuorum, From: raft.LocalAppendThread})
		}
		if m.leader = m.rn.BasicStatus().RaftState == raft.StateLeader; m.leader {
			m.expireSessions()
		}
	} else if m.elapsed++; m.elapsed >= m.timeout {
		m.elapsed = 0
		m.timeout = m.drawTimeout()
		_ = m.rn.Campaign()
	}
	// A command whose proposal was lost (a leader change) is never
	// answered; its client timed out long ago. Forget it.
	now := m.mono
	for _, id := range sortedPending(m.pending) {
		if now-m.pending[id].at > int64(10*time.Second) {
			delete(m.pending, id)
		}
	}
	m.drain()
	h.After(m.o.Tick, m.tick)
}

func sortedPending(p map[string]pend) []string {
	ids := make([]string, 0, len(p))
	for id := range p {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// expireSessions proposes the expiry of every session the leader has not
// heard of for its timeout, once per leadership.
func (m *Member) expireSessions() {
	now := m.mono
	for _, sid := range m.st.Sessions() {
		if m.expiring[sid] {
			continue
		}
		if now-m.st.lastSeen[sid] > m.st.sessions[sid].timeout {
			m.expiring[sid] = true
			m.propose(op{req: m.reqID(), name: "EXPIRE", args: []string{strconv.FormatInt(sid, 10)}})
		}
	}
}

func (m *Member) reqID() string {
	m.seq++
	return fmt.Sprintf("%d.%d.%d", m.id, m.inc, m.seq)
}

func (m *Member) propose(o op) error {
	return m.rn.Propose(o.encode())
}

// Receive implements sim.Member: a raft message from another member.
func (m *Member) Receive(from int, msg any) {
	if m.rn == nil {
		return
	}
	rm, ok := msg.(pb.Message)
	if !ok {
		return
	}
	_ = m.rn.Step(rm)
	bs := m.rn.BasicStatus()
	switch rm.Type {
	case pb.MsgApp, pb.MsgHeartbeat, pb.MsgSnap:
		if bs.Lead == rm.From {
			m.elapsed = 0
		}
	case pb.MsgVote:
		if bs.Vote == rm.From && bs.Term == rm.Term {
			m.elapsed = 0
		}
	}
	m.drain()
}

// Exec implements sim.Service: a client command, proposed to the log and
// answered when it applies here.
func (m *Member) Exec(now int64, client string, args []string, reply sim.Reply, record func(sim.Event)) {
	name, ok := strings.CutPrefix(strings.ToUpper(args[0]), "ZK.")
	if !ok {
		reply.WriteError("ERR unknown command '" + args[0] + "'")
		return
	}
	switch name {
	case "SESSION", "HEARTBEAT", "CREATE", "CHILDREN", "EXISTS", "DELETE":
	default:
		reply.WriteError("ERR unknown command '" + args[0] + "'")
		return
	}
	if m.rn == nil || m.rn.BasicStatus().Lead == raft.None {
		reply.WriteError(ErrNotLeader)
		return
	}
	o := op{req: m.reqID(), name: name, args: args[1:]}
	p := m.h.Defer(args[0])
	if err := m.propose(o); err != nil {
		p.Reply(func(r sim.Reply) { r.WriteError(ErrNotLeader) })
		return
	}
	m.pending[o.req] = pend{p: p, at: m.mono}
	m.drain()
}

// drain handles every Ready: persist, send, apply, advance.
func (m *Member) drain() {
	for m.rn != nil && m.rn.HasReady() {
		rd := m.rn.Ready()
		if !raft.IsEmptySnap(rd.Snapshot) {
			// A snapshot from the leader: this member lagged behind its
			// compacted log.
			if err := m.storage.ApplySnapshot(rd.Snapshot); err == nil {
				st, err := decodeState(rd.Snapshot.Data, m.mono)
				if err != nil {
					panic(err)
				}
				m.st = st
				m.applied, m.snapIndex = rd.Snapshot.Metadata.Index, rd.Snapshot.Metadata.Index
				m.snapsInstalled++
			}
		}
		if err := m.storage.Append(rd.Entries); err != nil {
			panic(err)
		}
		if !raft.IsEmptyHardState(rd.HardState) {
			_ = m.storage.SetHardState(rd.HardState)
		}
		for _, msg := range rd.Messages {
			m.h.Send(m.first+int(msg.To)-1, msg)
			if msg.Type == pb.MsgSnap {
				// Sent is all a sender knows: if it is lost, the
				// follower's next rejection brings another.
				m.rn.ReportSnapshot(msg.To, raft.SnapshotFinish)
			}
		}
		for _, e := range rd.CommittedEntries {
			m.applyEntry(e)
		}
		m.compact()
		if rd.SoftState != nil {
			m.becomes(rd.SoftState.RaftState == raft.StateLeader)
		}
		m.rn.Advance(rd)
	}
}

// becomes notes leadership: a new leader gives every session a full
// timeout from now (ZooKeeper's leader does the same).
func (m *Member) becomes(leader bool) {
	if leader && !m.leader {
		m.leaderTicks = 0
		now := m.mono
		for _, sid := range m.st.Sessions() {
			m.st.lastSeen[sid] = now
		}
		m.expiring = map[int64]bool{}
		m.h.Record(sim.Event{Kind: event.KindZKLeader, Detail: fmt.Sprintf("term %d", m.rn.BasicStatus().Term)})
	}
	m.leader = leader
}

// compact snapshots the state machine and drops old entries once
// CompactEvery entries were applied since the last snapshot.
func (m *Member) compact() {
	every := uint64(m.o.CompactEvery)
	if m.applied-m.snapIndex < every {
		return
	}
	cs := pb.ConfState{Voters: m.peers}
	if _, err := m.storage.CreateSnapshot(m.applied, &cs, m.st.encode()); err != nil {
		return
	}
	m.snapIndex = m.applied
	if first, _ := m.storage.FirstIndex(); m.applied-every/2 > first {
		_ = m.storage.Compact(m.applied - every/2)
	}
}

func (m *Member) applyEntry(e pb.Entry) {
	m.applied = max(m.applied, e.Index)
	if e.Type != pb.EntryNormal || len(e.Data) == 0 {
		return
	}
	o, ok := decode(e.Data)
	if !ok {
		return
	}
	answer := m.st.apply(e.Index, o, m.mono)
	if o.name == "EXPIRE" && m.leader {
		m.h.Record(sim.Event{Kind: event.KindZKExpire, Detail: "session " + strings.Join(o.args, " "), Token: int64(e.Index)})
	}
	if pd, ok := m.pending[o.req]; ok {
		delete(m.pending, o.req)
		pd.p.Reply(answer)
	}
}

// quiet is raft's logger: the simulator's trace is the record; raft's
// own log lines would carry wall-clock timestamps.
type quiet struct{}

func (quiet) Debug(...any)            {}
func (quiet) Debugf(string, ...any)   {}
func (quiet) Error(...any)            {}
func (quiet) Errorf(string, ...any)   {}
func (quiet) Info(...any)             {}
func (quiet) Infof(string, ...any)    {}
func (quiet) Warning(...any)          {}
func (quiet) Warningf(string, ...any) {}
func (quiet) Fatal(v ...any)          { panic(fmt.Sprint(v...)) }
func (quiet) Fatalf(f string, v ...any) {
	panic(fmt.Sprintf(f, v...))
}
func (quiet) Panic(v ...any)            { panic(fmt.Sprint(v...)) }
func (quiet) Panicf(f string, v ...any) { panic(fmt.Sprintf(f, v...)) }
