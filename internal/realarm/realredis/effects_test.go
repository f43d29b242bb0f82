package realredis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// keylessDriver is a driver (docs/DRIVERS.md) whose lock keeps no key on
// its Redis node: it excludes through a file created with O_EXCL in dir
// and, while it holds, keeps a pub/sub subscription on the node (as
// portalocker's RedisLock holds a subscription). Python's standard
// library only (a RESP client of its own): it runs wherever
// /usr/bin/python3 does.
const keylessDriver = `#!/usr/bin/python3
import json, os, socket, sys
LOCK = os.path.join(DIR, "held")

def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()

def dial(addr, t):
    h, p = addr.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=t)
    return s, s.makefile("rb")

def call(conn, *args):
    s, f = conn
    b = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        b += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(b)
    return reply(f)

def reply(f):
    line = f.readline()
    if not line:
        raise IOError("connection closed")
    t, rest = line[:1], line[1:-2].decode()
    if t == b"+":
        return rest
    if t == b"-":
        raise ValueError(rest)
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        v = f.read(n + 2)[:-2].decode()
        return v
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [reply(f) for _ in range(n)]
    raise IOError("bad reply %r" % line)

def main():
    start = json.loads(sys.stdin.readline())
    t = max(2.0, start["timeout_ms"] / 1000)  # the lock needs no Redis: a slow reply is no failure
    node_addr = start["nodes"][0]
    store = dial(start["storage"], t)
    call(store, "CLIENT", "SETNAME", start["client"])
    send({"re": "start", "result": "ok", "library": "keyless (a file and a pub/sub subscription)"})
    sub = None
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "stop":
            return
        try:
            if kind == "acquire":
                value = os.urandom(8).hex()
                try:
                    fd = os.open(LOCK, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    send({"re": kind, "result": "fail", "error": "held"})
                    continue
                os.write(fd, value.encode())
                os.close(fd)
                try:
                    sub = dial(node_addr, t)
                    call(sub, "CLIENT", "SETNAME", start["client"])
                    call(sub, "SUBSCRIBE", "keyless:" + start["key"])
                except (IOError, OSError, ValueError) as e:
                    os.unlink(LOCK)  # not held: let the others take it
                    send({"re": kind, "result": "fail", "error": str(e)})
                    continue
                send({"re": kind, "result": "ok", "value": value})
            elif kind == "release":
                try:
                    with open(LOCK) as f:
                        mine = f.read() == req["value"]
                except FileNotFoundError:
                    mine = False
                if mine:
                    os.unlink(LOCK)
                if sub is not None:
                    sub[0].close()
                    sub = None
                send({"re": kind, "result": "ok" if mine else "fail", "error": "" if mine else "not the owner"})
            elif kind in ("read", "write"):
                r = call(store, *req["command"])
                send({"re": kind, "result": "ok", "reply": r if isinstance(r, list) else [str(r)]})
            else:
                send({"re": kind, "result": "fail", "error": "not supported"})
        except ValueError as e:
            send({"re": kind, "result": "fail", "error": str(e)})
        except (IOError, OSError) as e:
            send({"re": kind, "result": "unknown", "error": str(e)})

main()
`

// requirePython skips a test that needs /usr/bin/python3 when it is
// absent, except in CI, where its absence fails.
func requirePython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatalf("drivers: /usr/bin/python3: %v", err)
		}
		t.Skipf("Python drivers skipped: %v", err)
	}
}

// TestKeylessLockClockJumpDidNotBite: a lock that keeps no key on its
// node (keylessDriver), under the node's clock jumps (clock-jump on
// set-nx-cad's world: n0 jumps four times): every jump is injected and
// reaches the node (its clients used it), none bites (the node held no
// lock key when it jumped), the summary says so, and the safe run is
// untested by the rule a report's cells are drawn by.
func TestKeylessLockClockJumpDidNotBite(t *testing.T) {
	requireRedis(t)
	requirePython(t)
	dir, lockDir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "keyless.py")
	body := strings.Replace(keylessDriver, "import json, os, socket, sys\n", "import json, os, socket, sys\nDIR = "+`"`+lockDir+`"`+"\n", 1)
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	j := short(t, "clock-jump", "set-nx-cad", 1)
	d, err := ResolveDriver(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.WithDriver(d); err != nil {
		t.Fatal(err)
	}
	jd, err := j.RunAndJudge(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if jd.Check.Verdict != checker.VerdictSafe || jd.Err != nil {
		t.Fatalf("verdict %s (%v), err %v: want the file lock safe", jd.Check.Verdict, jd.Check.Reasons, jd.Err)
	}
	if jd.Result.Stats.Faults != 4 {
		t.Fatalf("%d faults injected, want the 4 jumps", jd.Result.Stats.Faults)
	}
	r := jd.Report(j.Repro())
	if r.Faults == nil || r.Faults.Injected != 4 || r.Faults.Reached != 4 || r.Faults.Bit != 0 {
		t.Fatalf("faults %+v, want 4 injected, 4 reached, 0 bit", r.Faults)
	}
	for _, e := range r.FaultEffects {
		if !strings.Contains(e.Why, "held no live lock key") {
			t.Errorf("%s: why %q, want its node held no lock key", e.Fault, e.Why)
		}
	}
	if got := jd.Untested(); got != "no fault bit" {
		t.Errorf("Untested() = %q, want %q", got, "no fault bit")
	}
	var tally run.Tally
	tally.Add(run.OutcomeOf(jd.Judged), 1)
	if got := tally.Untested(); got != "no fault bit" {
		t.Errorf("the run's cell: untested %q, want %q", got, "no fault bit")
	}
	if got := jd.JSONFields()["untested"]; got != "no fault bit" {
		t.Errorf("--json untested = %v, want %q", got, "no fault bit")
	}
	var b strings.Builder
	jd.WriteSummary(&b, r)
	for _, want := range []string{"0 bit", "[did not bite: its node held no live lock key when it began]", "untested:       no fault bit"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
}

// TestKeyedLockClockJumpBites: a node clock jump on set-nx-cad's own Go
// lock, armed at c0's after-check (it begins the moment c0 has won its
// key on n0, so the key is live): it bites, and the run is not untested.
func TestKeyedLockClockJumpBites(t *testing.T) {
	requireRedis(t)
	j := short(t, "no-faults", "set-nx-cad", 1)
	j.Config.Faults = []faults.Fault{{Kind: faults.ClockJump, Start: j.Config.Duration / 4, Jump: 2 * j.TTL, Targets: []string{"n0"}, At: "after-check", On: "c0"}}
	jd, err := j.RunAndJudge(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := jd.Report(j.Repro())
	if r.Faults == nil || r.Faults.Injected != 1 || r.Faults.Bit != 1 {
		t.Fatalf("faults %+v (%+v), want the jump injected and bitten", r.Faults, r.FaultEffects)
	}
	if got := jd.Untested(); got != "" {
		t.Errorf("Untested() = %q, want none", got)
	}
}

// TestPauseAfterCheckBitReal: the targeted pauses of pause-after-check
// on set-nx-cad fire right after a winning SET, so each that fired bit
// (run.Effects: a winning acquisition in flight after the check), on the
// real arm as in the simulator.
func TestPauseAfterCheckBitReal(t *testing.T) {
	requireRedis(t)
	j := short(t, "pause-after-check", "set-nx-cad", 1)
	jd, err := j.RunAndJudge(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := jd.Report(j.Repro())
	if r.Faults == nil || r.Faults.Injected == 0 {
		t.Fatalf("faults %+v, want some injected", r.Faults)
	}
	for _, e := range r.FaultEffects {
		if e.Injected && !e.Bit {
			t.Errorf("%s: injected, did not bite: %s", e.Fault, e.Why)
		}
	}
	var b strings.Builder
	jd.WriteSummary(&b, r)
	if !strings.Contains(b.String(), "  [bit]") || strings.Contains(b.String(), "untested:") {
		t.Errorf("the summary does not say the pauses bit:\n%s", b.String())
	}
}

// TestFaultReachCutByHeal: a pause the heal ends before its end is said
// to have lasted until the heal, not its full length; one that ends
// before the heal is said as before.
func TestFaultReachCutByHeal(t *testing.T) {
	job, err := BuildScaled(run.Spec{Scenario: "no-faults", Lock: "set-nx-cad", Seed: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	job.Config.Faults = []faults.Fault{
		{Kind: faults.ClientPause, Start: 500 * time.Millisecond, Duration: 750 * time.Millisecond, Targets: []string{"c0"}, At: "after-check"},
		{Kind: faults.NodePause, Start: 700 * time.Millisecond, Duration: 200 * time.Millisecond, Targets: []string{"n0"}},
		{Kind: faults.ClientPause, Start: 100 * time.Millisecond, Duration: 100 * time.Millisecond, Targets: []string{"c1"}},
	}
	evs := []sim.Event{
		{T: ms(100), Proc: "world", Kind: event.KindFault, Fault: 3},
		{T: ms(500), Proc: "world", Kind: event.KindFault, Fault: 1},
		{T: ms(686), Proc: "c0", Kind: event.KindPause, Fault: 1},
		{T: ms(700), Proc: "world", Kind: event.KindFault, Fault: 2},
		{T: ms(750), Proc: "world", Kind: event.KindHeal},
	}
	jd := &Judged{Judged: &run.Judged{Job: job.Job, Result: &sim.Result{History: evs}}, Real: job, Info: &Info{}}
	got := jd.FaultReach()
	want := []string{
		"armed at t=500ms, fired at t=686ms (its client reached after-check); the heal ended it at t=750ms: it lasted 64ms of 750ms",
		"carried out at t=700ms; the heal ended it at t=750ms: it lasted 50ms of 200ms",
		"carried out at t=100ms",
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("fault %d: %q, want %q", i+1, got, want[i])
		}
	}
}

// TestGateCountsHeld: a chunk a partition holds is counted as that
// fault's (sim.FaultEffect.Messages), a chunk that passes is counted as
// carried, and a lifted cut counts nothing more.
func TestGateCountsHeld(t *testing.T) {
	st := newLinkState()
	defer gates.Delete(st.id)
	now := time.Now()
	st.change(func() { st.cuts++; st.cutBy = append(st.cutBy, 3) })
	st.change(func() {
		st.windows = append(st.windows, &window{latency: time.Second, from: now, until: now.Add(time.Second), fault: 5})
	})
	st.noteHeld(now)
	st.noteHeld(now.Add(2 * time.Second)) // outside the window: the cut's only
	if st.held[3] != 2 || st.held[5] != 1 {
		t.Fatalf("held %v, want fault 3: 2, fault 5: 1", st.held)
	}
}

// TestPartitionBitesReal: a partition of both clients from n0 for a TTL
// holds the chunks they send it (they keep acquiring and releasing), so
// it bites; on the real arm as in the simulator (run.Effects: a message
// held).
func TestPartitionBitesReal(t *testing.T) {
	requireRedis(t)
	j := short(t, "no-faults", "set-nx-cad", 1)
	j.Config.Faults = []faults.Fault{{Kind: faults.Partition, Start: j.Config.Duration / 4, Duration: j.TTL, From: []string{"c0", "c1"}, To: []string{"n0"}}}
	jd, err := j.RunAndJudge(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := jd.Report(j.Repro())
	if r.Faults == nil || r.Faults.Injected != 1 || r.Faults.Reached != 1 || r.Faults.Bit != 1 {
		t.Fatalf("faults %+v (%+v), want the partition injected, reached and bitten", r.Faults, r.FaultEffects)
	}
}

// TestLiveKeys: a node's live lock keys are its watched keys and every
// key with a TTL (a library's own key name), with their values; a key of
// another name without a TTL (a fencing counter) is not one. A stopped
// node gives what it held when last read; lacks compares values.
func TestLiveKeys(t *testing.T) {
	requireRedis(t)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{name: "n0", port: port, dir: t.TempDir(), persistence: "none"}
	ctx := context.Background()
	if err := s.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	w := &world{ctx: ctx, servers: []*server{s}, cfg: sim.Config{WatchKeys: []string{"lock"}}}
	a := s.admin
	a.Set(ctx, "lock", "v1", 0)
	a.Set(ctx, "mutex:other", "v2", 5*time.Second)
	a.Set(ctx, "lock:token", "7", 0)
	a.HSet(ctx, "hash", "f", "1")
	a.PExpire(ctx, "hash", 5*time.Second)
	got := w.liveKeys(0)
	want := map[string]string{"lock": "v1", "mutex:other": "v2", "hash": "hash"}
	if len(got) != len(want) {
		t.Fatalf("live keys %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("live key %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if w.lacks(0, map[string]string{"lock": "v1"}) || !w.lacks(0, map[string]string{"lock": "v2"}) || !w.lacks(0, map[string]string{"gone": "x"}) {
		t.Errorf("lacks: want false for a key it holds, true for another value or a missing key")
	}
	if err := s.pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.resume() }()
	if got := w.liveKeys(0); len(got) != 3 {
		t.Errorf("a stopped node: %v, want what it held when last read", got)
	}
	if w.lacks(0, map[string]string{"lock": "v2"}) {
		t.Errorf("lacks on a stopped node: want false (not known)")
	}
}
