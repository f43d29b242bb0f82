package realredis

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/resource"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// requireRedis skips a test that needs redis-server when it is absent,
// except in CI (LOCKSIM_CI=1, set by .ci/run), where its absence fails.
func requireRedis(t *testing.T) {
	t.Helper()
	if err := CheckBinaries(); err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatalf("real-Redis arm: %v", err)
		}
		t.Skipf("real-Redis arm skipped: %v", err)
	}
}

// ours lists live redis-server and redis-sentinel processes serving one of
// addrs (they set their process title to "redis-server ADDR" or
// "redis-sentinel ADDR [sentinel]", which pgrep -a shows).
func ours(t *testing.T, addrs []string) []string {
	t.Helper()
	out, err := exec.Command("pgrep", "-a", "redis-se").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return nil // no redis-server at all
		}
		t.Fatalf("pgrep: %v", err)
	}
	var mine []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		for _, a := range addrs {
			if strings.HasSuffix(l, " "+a) || strings.Contains(l, " "+a+" ") {
				mine = append(mine, l)
			}
		}
	}
	return mine
}

func empty(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) > 0 {
		t.Errorf("%s still holds %v: the run's temp dir was not removed", dir, es[0].Name())
	}
}

// short is a real job on a shortened world (TTL 200 ms: a run of ~2 s).
func short(t *testing.T, scenario, lock string, seed uint64) *Job {
	t.Helper()
	j, err := Build(run.Spec{Scenario: scenario, Lock: lock, Seed: seed}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:6379": true, "127.163.63.51:28165": true, "127.255.255.254:1": true, "128.0.0.1:1": false, "126.255.255.255:1": false, "[::ffff:127.0.0.1]:1": false, "localhost:6379": false, "0.0.0.0:1": false, "10.0.0.1:6379": false, "[::1]:6379": false, "nonsense": false} {
		err := checkLoopback(addr)
		if (err == nil) != ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
	if _, err := loopbackDialer(nil)(context.Background(), "tcp", "192.0.2.1:80"); !errors.Is(err, errNotLoopback) {
		t.Errorf("dialling a non-loopback address: %v, want errNotLoopback", err)
	}
}

// TestScaleLock: every duration of a catalogue lock is scaled, its other
// fields (unexported ones included) kept; a library lock that fixes its
// durations is refused, naming why.
func TestScaleLock(t *testing.T) {
	info, err := catalogue.Get("redlock")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ScaleLock(info, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if s.TTL != 500*time.Millisecond {
		t.Errorf("TTL %v, want 500ms", s.TTL)
	}
	lk, err := s.New(locks.Env{Client: "c9"})
	if err != nil {
		t.Fatal(err)
	}
	r := lk.(*catalogue.Redlock)
	want := catalogue.RedlockRedisIO
	if r.P.TTL != want.TTL/20 || r.P.RetryDelay != want.RetryDelay/20 || r.P.NodeTimeout != want.NodeTimeout/20 || r.P.DriftFixed != want.DriftFixed/20 {
		t.Errorf("scaled params %+v, want %+v / 20", r.P, want)
	}
	if r.P.Tries != want.Tries || r.P.DriftFactor != want.DriftFactor || r.Env.Client != "c9" {
		t.Errorf("unscaled fields changed: %+v env %q", r.P, r.Env.Client)
	}
	if info.TTL != 10*time.Second {
		t.Errorf("the catalogue's redlock changed: TTL %v", info.TTL)
	}
	rl, err := catalogue.Get("redislock")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := ScaleLock(rl, 0.1); err != nil || s.TTL != 300*time.Millisecond {
		t.Errorf("redislock scaled: TTL %v, %v; want 300ms through locks.NewRedislock", s.TTL, err)
	}
	opaque := locks.Info{ID: "opaque", TTL: time.Second, New: func(locks.Env) (locks.Lock, error) { return opaqueLock{}, nil }}
	if _, err := ScaleLock(opaque, 0.1); err == nil || !strings.Contains(err.Error(), "cannot be time-scaled") {
		t.Errorf("a lock with no parameters to scale: %v, want a refusal", err)
	}
	panicky := locks.Info{ID: "panicky", TTL: time.Second, New: func(e locks.Env) (locks.Lock, error) { e.Primary.Ping(context.Background()); return nil, nil }}
	if _, err := ScaleLock(panicky, 0.1); err == nil {
		t.Errorf("a constructor that needs a live Env: no error")
	}
}

type opaqueLock struct{}

func (opaqueLock) Acquire(context.Context) (locks.Lease, error) { return locks.Lease{}, nil }
func (opaqueLock) Release(context.Context, locks.Lease) error   { return nil }

// TestScaleWorld: the world's durations scale with the lock's TTL, in
// the same ratio, so the scenario is the same scenario played faster.
func TestScaleWorld(t *testing.T) {
	j := short(t, "pause-after-check", "set-nx-cad", 1)
	if j.Lock.TTL != 200*time.Millisecond || j.OrigTTL != 3*time.Second {
		t.Fatalf("TTL %v (from %v)", j.Lock.TTL, j.OrigTTL)
	}
	if got := j.Config.Duration; got != 8*j.Lock.TTL {
		t.Errorf("duration %v, want 8 TTL = %v", got, 8*j.Lock.TTL)
	}
	f := j.Config.Faults[0]
	if f.Start != j.Lock.TTL/2 || f.Duration != 3*j.Lock.TTL/2 || f.At != "after-check" {
		t.Errorf("first fault %v, want a 1.5 TTL pause at 0.5 TTL", f)
	}
	if j.Parts.Workload.HoldMax >= j.Lock.TTL {
		t.Errorf("hold max %v not scaled below the TTL %v", j.Parts.Workload.HoldMax, j.Lock.TTL)
	}
}

// TestUnsupportedSaysWhy: a scenario the arm cannot run is refused with
// the reason, before any process starts.
func TestUnsupportedSaysWhy(t *testing.T) {
	if _, err := Build(run.Spec{Scenario: "failover", Lock: "primary-replica", Seed: 1}, 3*time.Second); err != nil {
		t.Errorf("failover: %v, want it accepted (real replicas and Sentinels)", err)
	}
	if _, err := Build(run.Spec{Scenario: "delayed-restart-jump", Lock: "set-nx-cad", Seed: 1}, 0); err == nil || !strings.Contains(err.Error(), "node_clock") {
		t.Errorf("delayed-restart-jump: %v, want a refusal naming node_clock (a real restart would be timed by true time)", err)
	}
	if _, err := Build(run.Spec{Scenario: "no-faults", Lock: "set-nx-cad", Seed: 1}, time.Hour); err == nil || !strings.Contains(err.Error(), "ttl") {
		t.Errorf("--ttl 1h: %v, want an error naming ttl", err)
	}
}

// TestStoreServer: the storage state machine answers over RESP as it
// does in the simulator: reads, accepted writes, fenced stale writes.
func TestStoreServer(t *testing.T) {
	var evs []sim.Event
	st, err := newStoreServer(resource.Name, resource.New(resource.Options{Mode: resource.ModeMaxToken, Initial: map[string]int64{"k": 5}}),
		func() int64 { return 1 }, func(ev sim.Event) { evs = append(evs, ev) })
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	c := redis.NewClient(&redis.Options{Addr: st.addr(), Protocol: 2, DisableIdentity: true, ClientName: "c7", Dialer: loopbackDialer(nil)})
	defer c.Close()
	cl := resource.Client{C: c}
	ctx := context.Background()
	s, err := cl.Read(ctx, "k", resource.Fence{Token: 3})
	if err != nil || s.Value != 5 {
		t.Fatalf("read: %+v %v", s, err)
	}
	if err := cl.Write(ctx, "k", 4, resource.Fence{Token: 3, Owner: "a"}); err != nil {
		t.Fatalf("write token 3: %v", err)
	}
	if err := cl.Write(ctx, "k", 3, resource.Fence{Token: 2, Owner: "b"}); !errors.Is(err, resource.ErrFenced) {
		t.Fatalf("write token 2 after 3: %v, want fenced", err)
	}
	if len(evs) < 3 || evs[0].Peer != "c7" || evs[0].Proc != resource.Name {
		t.Errorf("storage events %+v: want store-read/store-write by c7", evs)
	}
}

// TestNodeClockJump: the emulated clock jump expires a key whose PTTL is
// at most the jump, shortens a longer one, and a backward jump lengthens.
func TestNodeClockJump(t *testing.T) {
	requireRedis(t)
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{name: "n0", port: port, dir: dir, persistence: "none"}
	ctx := context.Background()
	if err := s.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	w := &world{ctx: ctx, servers: []*server{s}}
	a := s.admin
	a.Set(ctx, "short", "x", 300*time.Millisecond)
	a.Set(ctx, "long", "y", 5*time.Second)
	a.Set(ctx, "forever", "z", 0)
	w.jumpNode(0, time.Second)
	if n := a.Exists(ctx, "short").Val(); n != 0 {
		t.Errorf("a key with PTTL 300ms survived a 1s forward jump")
	}
	if p := a.PTTL(ctx, "long").Val(); p > 4100*time.Millisecond || p < 3500*time.Millisecond {
		t.Errorf("long's PTTL after a 1s jump: %v, want about 4s", p)
	}
	w.jumpNode(0, -2*time.Second)
	if p := a.PTTL(ctx, "long").Val(); p < 5500*time.Millisecond {
		t.Errorf("long's PTTL after a 2s backward jump: %v, want about 6s", p)
	}
	if p := a.PTTL(ctx, "forever").Val(); p != -1 {
		t.Errorf("a key without TTL got one: %v", p)
	}
	if len(w.errs) > 0 {
		t.Errorf("harness errors: %v", w.errs)
	}
	if w.clockNote != NodeClockMechanism {
		t.Errorf("clock mechanism %q not reported", w.clockNote)
	}
}

// TestRealVerdicts is the end-to-end slice: pause-after-check
// breaks set-nx-cad on real Redis (a counterexample from the real
// history), and fencing stays safe with fenced rejections. Every
// listener and dial is 127.0.0.1, and nothing is left behind.
//
// A real run's seed fixes the fault schedule, not the interleaving: a
// pause armed at after-check lands only when c0 next wins the lock, and
// on a loaded machine c0 may not win it while the pause is armed. So
// each lock runs seeds 1, 2, … until the pauses bite (set-nx-cad
// unsafe; fencing with a fenced rejection), at most realVerdictSeeds;
// every run must still be right (fencing never unsafe, set-nx-cad never
// unknown), and a lock whose pauses never bit fails.
func TestRealVerdicts(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	const realVerdictSeeds = 5
	for _, tc := range []struct {
		lock string
		want checker.Verdict
	}{{"set-nx-cad", checker.VerdictUnsafe}, {"fencing", checker.VerdictSafe}} {
		bit := false
		for seed := uint64(1); seed <= realVerdictSeeds && !bit; seed++ {
			bit = realVerdictRun(t, tmp, tc.lock, tc.want, seed)
		}
		if !bit {
			t.Errorf("%s: the pauses did not bite in %d real runs (no unsafe run for set-nx-cad, no fenced rejection for fencing)", tc.lock, realVerdictSeeds)
		}
	}
}

// realVerdictRun runs one seed of TestRealVerdicts, checks what every run
// must show, and says whether the pauses bit.
func realVerdictRun(t *testing.T, tmp, lock string, want checker.Verdict, seed uint64) (bit bool) {
	t.Helper()
	j := short(t, "pause-after-check", lock, seed)
	jd, err := j.RunAndJudge(context.Background(), tmp)
	if err != nil {
		t.Fatalf("%s seed %d: %v", lock, seed, err)
	}
	r := jd.Report(j.Repro())
	switch v := jd.Verdict(); {
	case v == checker.VerdictUnknown:
		t.Errorf("%s seed %d: verdict unknown: %v", lock, seed, jd.Check.Reasons)
	case want == checker.VerdictSafe && v != checker.VerdictSafe:
		t.Errorf("%s seed %d: verdict %s, want safe: %v", lock, seed, v, jd.Check.Reasons)
	case want == checker.VerdictUnsafe && v == checker.VerdictUnsafe:
		bit = true
	case want == checker.VerdictSafe:
		bit = r.FencedRejections > 0
		if !bit {
			t.Logf("%s seed %d: safe, but no fenced rejection (stale sections %d): the pauses did not bite this time", lock, seed, r.StaleSections)
		}
	default:
		t.Logf("%s seed %d: verdict %s: the pauses did not bite this time", lock, seed, v)
	}
	if bit && want == checker.VerdictUnsafe {
		if r.Counterexample == nil || !strings.Contains(r.Counterexample.Repro, "--backend real") {
			t.Errorf("%s: counterexample %+v, want one whose repro runs the real arm", lock, r.Counterexample)
		}
		png, err := jd.WriteCounterexample(r, filepath.Join(t.TempDir(), "cex"))
		if err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
			t.Errorf("timeline %s: %v", png, err)
		}
	}
	if len(jd.Info.Listeners) < 3 || len(jd.Info.Dials) == 0 {
		t.Errorf("%s: listeners %v, dials %v: too few recorded", lock, jd.Info.Listeners, jd.Info.Dials)
	}
	for _, a := range append(append([]string(nil), jd.Info.Listeners...), jd.Info.Dials...) {
		if !strings.HasPrefix(a, Loopback+":") {
			t.Errorf("%s: address %q is not on %s (a world without replicas uses 127.0.0.1 alone)", lock, a, Loopback)
		}
	}
	if got := ours(t, jd.Info.Listeners); len(got) > 0 {
		t.Errorf("%s: redis-server left running: %v", lock, got)
	}
	empty(t, tmp)
	return bit
}

// TestCleanupOnFailureAndInterrupt: a run that fails after its servers
// started, and one interrupted mid-run, leave no redis-server and no temp
// dir behind.
func TestCleanupOnFailureAndInterrupt(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	j := short(t, "restart-no-persistence", "redlock", 1)
	var addrs, seen []string
	setupHook = func(w *world) error {
		addrs = w.listeners()[:5]
		seen = ours(t, addrs)
		return errors.New("injected failure")
	}
	_, err := j.RunAndJudge(context.Background(), tmp)
	setupHook = nil
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("failed run: %v", err)
	}
	if len(seen) != 5 {
		t.Errorf("before the failure: %d redis-server processes of the run, want 5 (%v)", len(seen), seen)
	}
	if got := ours(t, addrs); len(got) > 0 {
		t.Errorf("after a failed run: %v", got)
	}
	empty(t, tmp)

	ctx, cancel := context.WithCancel(context.Background())
	setupHook = func(w *world) error {
		addrs = w.listeners()[:5]
		seen = ours(t, addrs) // the 5 servers are up now
		time.AfterFunc(700*time.Millisecond, cancel)
		return nil
	}
	defer func() { setupHook = nil }()
	_, err = j.RunAndJudge(ctx, tmp)
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want context.Canceled", err)
	}
	if len(seen) != 5 {
		t.Errorf("while running: %d redis-server processes of the run, want 5 (%v)", len(seen), seen)
	}
	if got := ours(t, addrs); len(got) > 0 {
		t.Errorf("after an interrupted run: %v", got)
	}
	empty(t, tmp)
}

// TestNodePauseAndCrash: SIGSTOP stops a node from answering, SIGCONT
// resumes it with its keys; a crash without persistence restarts it
// empty, one with appendfsync always keeps every acknowledged write.
func TestNodePauseAndCrash(t *testing.T) {
	requireRedis(t)
	ctx := context.Background()
	for _, persistence := range []string{"none", "always"} {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &server{name: "n0", port: port, dir: t.TempDir(), persistence: persistence}
		if err := s.start(ctx); err != nil {
			t.Fatal(err)
		}
		a := s.admin
		if err := a.Set(ctx, "k", "v", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.pause(); err != nil {
			t.Fatal(err)
		}
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err = a.Get(c, "k").Err()
		cancel()
		if err == nil {
			t.Errorf("%s: a SIGSTOPped node answered", persistence)
		}
		if err := s.resume(); err != nil {
			t.Fatal(err)
		}
		if v, err := a.Get(ctx, "k").Result(); err != nil || v != "v" {
			t.Errorf("%s: after SIGCONT: %q %v", persistence, v, err)
		}
		s.kill()
		if err := s.start(ctx); err != nil {
			t.Fatal(err)
		}
		n, err := a.Exists(ctx, "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int64{"none": 0, "always": 1}[persistence]; n != want {
			t.Errorf("%s: after SIGKILL and restart the key exists %d, want %d", persistence, n, want)
		}
		s.close()
	}
}

// TestRetriedDelDeletesNextHolder is the real-Redis behaviour behind the
// no-faults × getset-expiry disagreement (docs/PARITY.md): when a reply
// comes later than go-redis's ReadTimeout, go-redis retries the command
// on a new connection; a plain DEL that already ran then runs twice, and
// the second deletes the key another client set in between. The simulator
// runs the same go-redis retries, but its latency model (0.2 ms + an
// exponential of mean 0.3 ms) never reaches a read timeout without a
// fault; a loaded machine's loopback does.
func TestRetriedDelDeletesNextHolder(t *testing.T) {
	requireRedis(t)
	ctx := context.Background()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{name: "n0", port: port, dir: t.TempDir(), persistence: "none"}
	if err := s.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ls := newLinks()
	defer ls.close()
	addr, err := ls.add("c0", "n0", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	a := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, Dialer: loopbackDialer(nil),
		ReadTimeout: 50 * time.Millisecond, MaxRetries: 3, MinRetryBackoff: 30 * time.Millisecond, MaxRetryBackoff: 30 * time.Millisecond})
	defer a.Close()
	b := s.admin // another client, not delayed
	if err := a.Set(ctx, "lock", "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The replies c0's proxy gets in the next 20 ms come 200 ms late (a
	// transient stall; its requests are not delayed, nor later replies,
	// such as a new connection's handshake).
	if _, _, err := ls.apply(faults.Fault{Kind: faults.Delay, From: []string{"n0"}, To: []string{"c0"}, OneWay: true, Duration: 20 * time.Millisecond, Delay: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Del(ctx, "lock").Err() }()
	// The first DEL runs at once; B takes the lock before the retry.
	deadline := time.Now().Add(time.Second)
	for b.Exists(ctx, "lock").Val() == 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if ok, err := b.SetNX(ctx, "lock", "b", 0).Result(); err != nil || !ok {
		t.Fatalf("B's SET NX after A's first DEL: %v %v", ok, err)
	}
	if err := <-done; err != nil { // the retry's reply came in time
		t.Fatalf("A's DEL: %v", err)
	}
	if v, err := b.Get(ctx, "lock").Result(); err == nil {
		t.Fatalf("B's key survived (%q): A's DEL ran only once; the retry did not happen", v)
	} else if !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
}

// TestReplicatedWorld: a replicated world runs real replicas and three
// real Sentinels. The failover scenario (run unscaled, the lock's own
// 3 s TTL, shortened to its first failover) crashes the primary, Sentinel
// promotes a replica and the clients follow it; every address is in
// 127.0.0.0/8, and a run that fails after set-up, or is interrupted,
// leaves no redis-server, no redis-sentinel and no temp dir.
func TestReplicatedWorld(t *testing.T) {
	requireRedis(t)
	if testing.Short() {
		t.Skip("a real Sentinel failover takes seconds of real time (run without -short)")
	}
	tmp := t.TempDir()
	j, err := Build(run.Spec{Scenario: "failover", Lock: "primary-replica", Seed: 1}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j.Config.Faults = j.Config.Faults[:1] // one failover at 3 s, the primary down 3 s
	j.Config.Duration, j.Config.Liveness = 8*time.Second, 3*time.Second
	jd, err := j.RunAndJudge(context.Background(), tmp)
	if err != nil {
		t.Fatal(err)
	}
	var failover, crash bool
	for _, ev := range jd.Result.History {
		failover = failover || (ev.Proc == sim.SentinelName && ev.Kind == event.KindFailover && strings.HasPrefix(ev.Detail, "n0 -> "))
		crash = crash || (ev.Proc == "n0" && ev.Kind == event.KindCrash && ev.Detail == "failover")
	}
	if !crash || !failover {
		t.Errorf("history: crash of n0 %v, Sentinel failover from n0 %v", crash, failover)
	}
	acquired := 0
	for _, ev := range jd.Result.History {
		if ev.Op == event.OpAcquire && ev.Kind == event.KindOK {
			acquired++
		}
	}
	if acquired == 0 || jd.Result.Stats.Failovers == 0 {
		t.Errorf("%d acquisitions, stats %+v", acquired, jd.Result.Stats)
	}
	// The failover's effect names the replica Sentinel promoted (effects.go),
	// so run.Effects judges it: reached, and "did not bite" only with why.
	if es := jd.Result.Effects; len(es) != 1 || !es[0].Started || es[0].Promoted == "" || es[0].Promoted == "n0" {
		t.Errorf("failover effect %+v: want started, a promoted replica named", es)
	}
	if fe := run.Effects(jd.History, jd.Result, j.Config); len(fe) != 1 || !fe[0].Reached || (!fe[0].Bit && !strings.Contains(fe[0].Why, "had every live lock key")) {
		t.Errorf("failover judged %+v", fe)
	}
	for _, a := range append(append([]string(nil), jd.Info.Listeners...), jd.Info.Dials...) {
		if checkLoopback(a) != nil {
			t.Errorf("address %q is not in 127.0.0.0/8", a)
		}
	}
	if got := ours(t, jd.Info.Listeners); len(got) > 0 {
		t.Errorf("left running: %v", got)
	}
	empty(t, tmp)

	// A failure after set-up, and an interrupt: 3 servers and 3 Sentinels
	// up, none left after.
	for _, interrupt := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		var addrs, seen []string
		setupHook = func(w *world) error {
			addrs = w.listeners()
			seen = ours(t, addrs)
			if interrupt {
				time.AfterFunc(700*time.Millisecond, cancel)
				return nil
			}
			return errors.New("injected failure")
		}
		_, err := j.RunAndJudge(ctx, tmp)
		setupHook = nil
		cancel()
		if err == nil {
			t.Fatalf("interrupt %v: the run did not fail", interrupt)
		}
		if len(seen) != 6 {
			t.Errorf("interrupt %v: %d redis processes of the run while it ran, want 6 (3 servers, 3 Sentinels): %v", interrupt, len(seen), seen)
		}
		if got := ours(t, addrs); len(got) > 0 {
			t.Errorf("interrupt %v: left running: %v", interrupt, got)
		}
		empty(t, tmp)
	}
}
