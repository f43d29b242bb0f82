package zk_test

// This file is package zk_test because it drives the members with
// locks/catalogue's ZooKeeper client, and the catalogue imports zk (it
// registers the service: locks/catalogue/coord.go).

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/zk"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/sim"
)

// ack is one create a client saw answered.
type ack struct {
	name  string
	czxid int64
	at    int64 // true time the reply arrived
}

// world runs 3 members (services 0..2) and the given client programs (one
// per client), and returns the members as they ended.
func world(t *testing.T, seed uint64, dur time.Duration, fs []faults.Fault, progs ...func(p *sim.Proc)) ([]*zk.Member, *sim.Result) {
	t.Helper()
	return worldOpts(t, zk.Options{}, seed, dur, fs, progs...)
}

func worldOpts(t *testing.T, o zk.Options, seed uint64, dur time.Duration, fs []faults.Fault, progs ...func(p *sim.Proc)) ([]*zk.Member, *sim.Result) {
	t.Helper()
	svcs := zk.Services(o, 0)
	ms := make([]*zk.Member, len(svcs))
	for i := range svcs {
		i, orig := i, svcs[i].New
		svcs[i].New = func() sim.Service {
			m := orig().(*zk.Member)
			ms[i] = m
			return m
		}
	}
	cfg := sim.Config{Seed: seed, Duration: dur, Liveness: 2 * time.Second, Clients: len(progs),
		Nodes: []sim.NodeConfig{{}}, Services: svcs, Faults: fs}.WithDefaults()
	cfg.Program = func(p *sim.Proc) { progs[p.ID()](p) }
	res, err := sim.Run(sim.TestBubble(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ms, res
}

func members(p *sim.Proc, idx ...int) []*redis.Client {
	var out []*redis.Client
	for _, i := range idx {
		out = append(out, p.Service(i))
	}
	return out
}

// creator opens a session through the given members and creates a node
// under /t every 50 ms until the run stops, appending what was answered.
func creator(out *[]ack, timeoutMS int, idx ...int) func(p *sim.Proc) {
	return func(p *sim.Proc) {
		c := &catalogue.ZKClient{Members: members(p, idx...), Clock: p}
		ctx := p.Context()
		var sid int64
		for sid == 0 && !p.Stopping() {
			if v, err := c.Do(ctx, "ZK.SESSION", timeoutMS); err == nil {
				sid = v.(int64)
			}
		}
		for i := 0; !p.Stopping(); i++ {
			v, err := c.Do(ctx, "ZK.CREATE", "/t", sid, fmt.Sprintf("%s-%d", p.Name(), i))
			if err == nil {
				r := v.([]any)
				*out = append(*out, ack{name: r[0].(string), czxid: r[1].(int64), at: p.TrueNow()})
			}
			p.Sleep(50 * time.Millisecond)
		}
	}
}

// converged checks that every member applied the same children of /t and
// that they include every acknowledged create.
func converged(t *testing.T, ms []*zk.Member, acks []ack) {
	t.Helper()
	want := ms[0].State().Children("/t")
	for i, m := range ms {
		if got := m.State().Children("/t"); !slices.Equal(got, want) {
			t.Fatalf("member %d has %d children, member 0 has %d", i, len(got), len(want))
		}
	}
	for _, a := range acks {
		if !slices.Contains(want, a.name[len("/t/"):]) {
			t.Fatalf("acknowledged create %s is not in the replicated state", a.name)
		}
	}
}

// TestReplicatedSurvivesCrashes crashes each member in turn (so the leader
// at least once): every acknowledged create is on every member at the
// end, and creation revisions grow with the sequence.
func TestReplicatedSurvivesCrashes(t *testing.T) {
	var acks []ack
	fs := []faults.Fault{
		{Kind: faults.Crash, Start: 1 * time.Second, Duration: 2 * time.Second, Targets: []string{"zk0"}},
		{Kind: faults.Crash, Start: 3500 * time.Millisecond, Duration: 1500 * time.Millisecond, Targets: []string{"zk1"}},
		{Kind: faults.Crash, Start: 5500 * time.Millisecond, Duration: 1500 * time.Millisecond, Targets: []string{"zk2"}},
	}
	ms, res := world(t, 1, 8*time.Second, fs, creator(&acks, 5000, 0, 1, 2))
	if res.Stats.Crashes != 3 {
		t.Fatalf("crashes = %d, want 3", res.Stats.Crashes)
	}
	if len(acks) < 100 {
		t.Fatalf("only %d creates acknowledged in 10 s", len(acks))
	}
	converged(t, ms, acks)
	for i := 1; i < len(acks); i++ {
		if acks[i].czxid <= acks[i-1].czxid || acks[i].name <= acks[i-1].name {
			t.Fatalf("create %d (%s, zxid %d) does not follow %s (zxid %d)", i, acks[i].name, acks[i].czxid, acks[i-1].name, acks[i-1].czxid)
		}
	}
	leaders := map[string]bool{}
	for _, e := range res.History {
		if e.Kind == event.KindZKLeader {
			leaders[e.Proc] = true
		}
	}
	if len(leaders) < 2 {
		t.Fatalf("leaders %v: the leader was never replaced", leaders)
	}
	st, _ := ms[0].Status()
	term := st.Term
	t.Logf("%d creates acknowledged, final term %d, %d events", len(acks), term, res.Stats.Events)
}

// TestMinorityCannotCommit partitions zk0 from the two others: a client
// that reaches only zk0 gets nothing acknowledged while the partition
// lasts, a client of the majority keeps going, and all converge after.
func TestMinorityCannotCommit(t *testing.T) {
	var minority, majority []ack
	start, end := 2*time.Second, 6*time.Second
	fs := []faults.Fault{{Kind: faults.Partition, Start: start, Duration: end - start,
		From: []string{"zk0"}, To: []string{"zk1", "zk2"}}}
	ms, _ := world(t, 2, 8*time.Second, fs, creator(&minority, 10000, 0), creator(&majority, 10000, 1, 2))
	inside := func(acks []ack, from, to time.Duration) int {
		n := 0
		for _, a := range acks {
			if a.at >= int64(from) && a.at < int64(to) {
				n++
			}
		}
		return n
	}
	if n := inside(minority, start+100*time.Millisecond, end); n != 0 {
		t.Fatalf("the minority acknowledged %d creates during the partition", n)
	}
	if n := inside(minority, 0, start); n < 10 {
		t.Fatalf("the minority client acknowledged only %d creates before the partition", n)
	}
	if n := inside(majority, start+time.Second, end); n < 20 {
		t.Fatalf("the majority acknowledged only %d creates in the last 3 s of the partition", n)
	}
	if n := inside(minority, end, 10*time.Second); n < 10 {
		t.Fatalf("the minority client acknowledged only %d creates after the heal", n)
	}
	converged(t, ms, append(minority, majority...))
	t.Logf("minority %d acks, majority %d", len(minority), len(majority))
}

// TestSessionExpiry: a session that stops heartbeating expires (its
// ephemeral node goes); one that keeps heartbeating does not, even when
// every member's wall clock jumps 5 s forward (sessions are timed by the
// members' monotonic ticks, as ZooKeeper's session tracker does).
func TestSessionExpiry(t *testing.T) {
	jump := []faults.Fault{{Kind: faults.ClockJump, Start: 2 * time.Second, Jump: 5 * time.Second, Targets: []string{"zk0", "zk1", "zk2"}}}
	for _, fs := range [][]faults.Fault{nil, jump} {
		sessionExpiry(t, fs)
	}
}

func sessionExpiry(t *testing.T, fs []faults.Fault) {
	var quiet, live []ack
	prog := func(out *[]ack, beat bool) func(p *sim.Proc) {
		return func(p *sim.Proc) {
			c := &catalogue.ZKClient{Members: members(p, 0, 1, 2), Clock: p}
			ctx := p.Context()
			v, err := c.Do(ctx, "ZK.SESSION", 1000)
			for err != nil && !p.Stopping() {
				p.Sleep(100 * time.Millisecond)
				v, err = c.Do(ctx, "ZK.SESSION", 1000)
			}
			sid := v.(int64)
			if v, err := c.Do(ctx, "ZK.CREATE", "/t", sid, p.Name()); err == nil {
				r := v.([]any)
				*out = append(*out, ack{name: r[0].(string), czxid: r[1].(int64), at: p.TrueNow()})
			}
			for beat && !p.Stopping() {
				p.Sleep(300 * time.Millisecond)
				_, _ = c.Do(ctx, "ZK.HEARTBEAT", sid)
			}
		}
	}
	ms, _ := world(t, 3, 4*time.Second, fs, prog(&quiet, false), prog(&live, true))
	if len(quiet) != 1 || len(live) != 1 {
		t.Fatalf("creates: %d and %d, want 1 each", len(quiet), len(live))
	}
	for i, m := range ms {
		kids := m.State().Children("/t")
		if !slices.Equal(kids, []string{live[0].name[len("/t/"):]}) {
			t.Fatalf("member %d: children %v, want only the live session's %s", i, kids, live[0].name)
		}
		if n := len(m.State().Sessions()); n != 1 {
			t.Fatalf("member %d: %d sessions, want 1", i, n)
		}
	}
}

// TestDeterministic runs a world with crashes twice: same trace.
func TestDeterministic(t *testing.T) {
	fs := []faults.Fault{
		{Kind: faults.Crash, Start: 1 * time.Second, Duration: time.Second, Targets: []string{"zk1"}},
		{Kind: faults.Partition, Start: 2500 * time.Millisecond, Duration: time.Second, From: []string{"zk2"}, To: []string{"zk0", "zk1"}},
	}
	var hashes []string
	for range 2 {
		var a, b []ack
		_, res := world(t, 7, 4*time.Second, fs, creator(&a, 5000, 0, 1, 2), creator(&b, 5000, 2, 1, 0))
		hashes = append(hashes, res.TraceSHA256)
	}
	if hashes[0] != hashes[1] {
		t.Fatalf("two runs of one seed differ: %s vs %s", hashes[0], hashes[1])
	}
}

// TestDeafLeaderStepsDown cuts every message to the leader (it still
// sends heartbeats, so its followers never time out): it must step down
// (the leader side of CheckQuorum), and the others elect a leader and
// commit while the cut lasts.
func TestDeafLeaderStepsDown(t *testing.T) {
	firstLeader := func(res *sim.Result) string {
		for _, e := range res.History {
			if e.Kind == event.KindZKLeader {
				return e.Proc
			}
		}
		return ""
	}
	var probe []ack
	_, res := world(t, 11, time.Second, nil, creator(&probe, 5000, 0, 1, 2))
	lead := firstLeader(res)
	var others []string
	for i := 0; i < 3; i++ {
		if zk.MemberName(i) != lead {
			others = append(others, zk.MemberName(i))
		}
	}
	start, end := 2*time.Second, 8*time.Second
	fs := []faults.Fault{{Kind: faults.Partition, Start: start, Duration: end - start, OneWay: true, From: others, To: []string{lead}}}
	var acks []ack
	ms, res := world(t, 11, 9*time.Second, fs, creator(&acks, 20000, 0, 1, 2))
	if firstLeader(res) != lead {
		t.Fatalf("the first leader is %s, the probe found %s", firstLeader(res), lead)
	}
	var after []string
	for _, e := range res.History {
		if e.Kind == event.KindZKLeader && e.T > int64(start) && e.T < int64(end) {
			after = append(after, e.Proc)
		}
	}
	if len(after) == 0 || after[0] == lead {
		t.Fatalf("leaders elected during the cut: %v (the deaf leader was %s)", after, lead)
	}
	n := 0
	for _, a := range acks {
		if a.at >= int64(start+2*time.Second) && a.at < int64(end) {
			n++
		}
	}
	if n < 20 {
		t.Fatalf("only %d creates acknowledged in the last 4 s of the cut", n)
	}
	converged(t, ms, acks)
	t.Logf("deaf leader %s, then %v; %d acks in the last 4 s of the cut", lead, after, n)
}

// TestCompactionAndSnapshot: with a log compacted every 40 entries, a
// member down for 4 s comes back behind the leader's first entry and
// catches up from a snapshot; every member ends with the same state, and
// the logs stay short.
func TestCompactionAndSnapshot(t *testing.T) {
	var acks []ack
	fs := []faults.Fault{
		{Kind: faults.Crash, Start: time.Second, Duration: 4 * time.Second, Targets: []string{"zk1"}},
		// zk0 restarts from its own snapshot and the entries after it.
		{Kind: faults.Crash, Start: 6 * time.Second, Duration: 500 * time.Millisecond, Targets: []string{"zk0"}},
	}
	ms, res := worldOpts(t, zk.Options{CompactEvery: 40}, 5, 8*time.Second, fs, creator(&acks, 5000, 0, 2))
	if res.Stats.Crashes != 2 {
		t.Fatalf("%d crashes", res.Stats.Crashes)
	}
	if len(acks) < 80 {
		t.Fatalf("only %d creates acknowledged", len(acks))
	}
	converged(t, ms, acks)
	if n := ms[1].SnapshotsInstalled(); n == 0 {
		t.Fatalf("zk1 caught up without a snapshot (first index of the others: %d, %d)", ms[0].FirstIndex(), ms[2].FirstIndex())
	}
	for i, m := range ms {
		st, _ := m.Status()
		if kept := st.Commit - m.FirstIndex(); kept > 80 {
			t.Fatalf("member %d keeps %d entries (commit %d), want at most 80", i, kept, st.Commit)
		}
	}
	t.Logf("%d acks; zk1 installed %d snapshots; first indexes %d %d %d", len(acks), ms[1].SnapshotsInstalled(), ms[0].FirstIndex(), ms[1].FirstIndex(), ms[2].FirstIndex())
}
