package sim

// Benchmarks of the engine against its floors, meant to be read side by
// side from one run:
//
//	go test -run xxx -bench . -benchtime 2000x ./sim/
//
//	FloorDispatch*  miniredis server.Dispatch into a buffer: no client, no
//	                network (what a command costs miniredis itself)
//	FloorPipe*      a real go-redis client talking to miniredis over
//	                net.Pipe, outside any bubble (the cheapest real path)
//	Engine*         the same go-redis client inside a world: simulated
//	                conn, scheduler, trace, one synctest bubble
//	TimeCompression (bench_ext_test.go) virtual seconds per wall second of
//	                the default scenario
//
// Every path runs the same commands on the same data: SET k v PX 30500 NX
// on a key that already exists (the contended-acquire case: the reply is
// nil), and the compare-and-delete script by EVALSHA with a value that does
// not match (the script runs GET and returns 0; state never changes, so
// every iteration does identical work).

import (
	"context"
	"flag"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// benchTTL is ms-precise, so go-redis sends PX (not EX), as lock code does.
const benchTTL = 30500 * time.Millisecond

// cadSHA is the compare-and-delete script's SHA1 (the SET NX PX command of
// the floors is FloorSETNXArgs, floor.go). Its body is nativeBodies' copy
// of locks/catalogue's CompareAndDelete (TestCatalogueScriptsAreNative
// holds the two equal): this package's own tests cannot import the
// catalogue, which imports sim through internal/zk.
var cadSHA = sha1hex(nativeBodies["compare-and-delete"])

// BenchBubble returns a Bubble for a benchmark. synctest.Test needs a
// *testing.T, which a benchmark does not have, so each call hosts the
// bubble in a fresh top-level test through testing.RunTests (legal inside a
// test binary: its flags are parsed). RunTests obeys the binary's
// -test.run, -test.skip, -test.count, -test.v and -test.cpu flags, which
// were meant for the outer tests: the first four are cleared for the call
// and restored after, and the host test runs its body once however often
// the -cpu list makes RunTests call it, with the benchmark's GOMAXPROCS.
//
// It is exported (from a _test file only) so that package sim_test's
// benchmarks can use it too.
func BenchBubble(b *testing.B) Bubble {
	return func(f func()) {
		b.Helper()
		restore := setTestFlags(b, map[string]string{"test.run": "", "test.skip": "", "test.count": "1", "test.v": "false"})
		procs := runtime.GOMAXPROCS(0)
		ran := false
		ok := testing.RunTests(
			func(string, string) (bool, error) { return true, nil },
			[]testing.InternalTest{{Name: "BenchBubble", F: func(t *testing.T) {
				if ran {
					return
				}
				ran = true
				runtime.GOMAXPROCS(procs)
				synctest.Test(t, func(*testing.T) { f() })
			}}})
		runtime.GOMAXPROCS(procs)
		restore()
		switch {
		case !ran:
			b.Fatal("BenchBubble: the host test did not run (-failfast after a failure?)")
		case !ok:
			b.Fatal("BenchBubble: the host test failed")
		}
	}
}

// setTestFlags sets testing flags by name and returns a func restoring them.
func setTestFlags(b *testing.B, vals map[string]string) (restore func()) {
	old := map[string]string{}
	for name, v := range vals {
		f := flag.Lookup(name)
		if f == nil {
			b.Fatalf("no flag %s", name)
		}
		old[name] = f.Value.String()
		if err := flag.Set(name, v); err != nil {
			b.Fatalf("flag %s: %v", name, err)
		}
	}
	return func() {
		for name, v := range old {
			flag.Set(name, v)
		}
	}
}

// benchTimer lets a Program start and stop b's timer. testing.B reads the
// clock with time.Now, which inside a bubble is the virtual clock (and
// would measure nothing), so the bubble never touches b: it asks a helper
// goroutine outside the bubble, through channels made outside it, and waits
// until the timer is switched. Blocking on those channels is not durable
// blocking, so the scheduler's synctest.Wait simply waits out the handshake;
// virtual time does not move meanwhile. Only the command loop is timed:
// world setup, dialing, the HELLO handshake, warm-up, shutdown and the
// RunTests/bubble overhead all run with the timer stopped.
type benchTimer struct {
	req  chan bool
	ack  chan struct{}
	on   bool
	done sync.WaitGroup
}

func newBenchTimer(b *testing.B) *benchTimer {
	t := &benchTimer{req: make(chan bool), ack: make(chan struct{})}
	t.done.Add(1)
	go func() {
		defer t.done.Done()
		for on := range t.req {
			if on {
				b.StartTimer()
			} else {
				b.StopTimer()
			}
			t.ack <- struct{}{}
		}
	}()
	return t
}

func (t *benchTimer) set(on bool) {
	if t.on == on {
		return
	}
	t.on = on
	t.req <- on
	<-t.ack
}

func (t *benchTimer) close() {
	close(t.req)
	t.done.Wait()
}

// benchEngine runs one world (one client, one node, default network
// latency: virtual time is free in wall time) whose program runs setup,
// 50 warm-up ops, then b.N timed ops. It returns the run's stats.
//
// Compare runs at a fixed -benchtime (e.g. 2000x): today every blocked
// conn.Read queues a deadline event, and one that fires while the client is
// blocked in a later Read wakes it and queues another, so these chains pile
// up and the cost per op grows with b.N (the events/op metric shows it: 3
// would be one arrive, one reply and one deadline per command).
func benchEngine(b *testing.B, setup func(ctx context.Context, c *redis.Client) error, op func(ctx context.Context, c *redis.Client) error) Stats {
	b.ReportAllocs()
	const warm = 50
	n := b.N
	cfg := Config{Seed: 1, Duration: MaxDuration, Clients: 1, Nodes: []NodeConfig{{}}}.WithDefaults()
	tm := newBenchTimer(b)
	var progErr error
	var t0, t1 int64
	cfg.Program = func(p *Proc) {
		defer tm.set(false)
		ctx, c := p.Context(), p.Nodes()[0]
		if progErr = setup(ctx, c); progErr != nil {
			return
		}
		for i := 0; i < warm; i++ {
			if progErr = op(ctx, c); progErr != nil {
				return
			}
		}
		t0 = p.TrueNow()
		tm.set(true)
		for i := 0; i < n; i++ {
			if progErr = op(ctx, c); progErr != nil {
				return
			}
		}
		tm.set(false)
		t1 = p.TrueNow()
	}
	b.StopTimer()
	res, err := Run(BenchBubble(b), cfg)
	tm.close()
	if err != nil {
		b.Fatal(err)
	}
	if progErr != nil {
		b.Fatal(progErr)
	}
	b.ReportMetric(float64(t1-t0)/float64(n)/1e3, "virt-µs/op")
	b.ReportMetric(float64(res.Stats.Events)/float64(n+warm), "events/op")
	return res.Stats
}

func setNXOp(ctx context.Context, c *redis.Client) error {
	return c.SetNX(ctx, "k", "v", benchTTL).Err()
}

func setKey(ctx context.Context, c *redis.Client) error {
	return c.Set(ctx, "k", "v", 0).Err()
}

var cadScript = redis.NewScript(nativeBodies["compare-and-delete"])

// cadOp runs the script as go-redis does: EVALSHA, EVAL on NOSCRIPT (the
// first call only; the warm-up absorbs it).
func cadOp(ctx context.Context, c *redis.Client) error {
	return cadScript.Run(ctx, c, []string{"k"}, "not-the-value").Err()
}

// BenchmarkEngineSETNX is a go-redis SetNX (PX) through the engine.
func BenchmarkEngineSETNX(b *testing.B) {
	benchEngine(b, setKey, setNXOp)
}

// BenchmarkEngineCADEvalSHA is locks.CompareAndDelete through the engine
// by EVALSHA: "native" as the engine runs it (its Go fast path for known
// scripts), "lua" with the fast path off for the connection (a SELECT 0
// turns it off, see conn.noNative), i.e. miniredis's interpreter.
func BenchmarkEngineCADEvalSHA(b *testing.B) {
	for _, mode := range []string{"native", "lua"} {
		b.Run(mode, func(b *testing.B) {
			setup := setKey
			if mode == "lua" {
				setup = func(ctx context.Context, c *redis.Client) error {
					if err := c.Do(ctx, "select", 0).Err(); err != nil {
						return err
					}
					return setKey(ctx, c)
				}
			}
			st := benchEngine(b, setup, cadOp)
			evals := float64(st.NativeEvals + st.LuaEvals)
			b.ReportMetric(float64(st.NativeEvals)/evals, "native-frac")
			if (mode == "native") != (st.NativeEvals > st.LuaEvals) {
				b.Errorf("%s: the engine ran %d native and %d Lua evals", mode, st.NativeEvals, st.LuaEvals)
			}
		})
	}
}

// floorServer is a miniredis without a listener (floor.go).
func floorServer(b *testing.B) *miniredis.Miniredis {
	m, err := NewFloorServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Close)
	return m
}

func benchDispatch(b *testing.B, setup [][]string, args []string, want string) {
	f, err := NewDispatchFloor(setup, args, want)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(f.Close)
	b.ReportAllocs()
	b.ResetTimer()
	if err := f.Run(b.N); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFloorDispatchSETNX is miniredis's own cost for SET NX PX.
func BenchmarkFloorDispatchSETNX(b *testing.B) {
	benchDispatch(b, FloorSETNXSetup, FloorSETNXArgs, FloorSETNXReply)
}

// BenchmarkFloorDispatchEvalSHA is miniredis's own cost for the
// compare-and-delete EVALSHA (a fresh Lua VM per call).
func BenchmarkFloorDispatchEvalSHA(b *testing.B) {
	benchDispatch(b, [][]string{{"SET", "k", "v"}, {"SCRIPT", "LOAD", nativeBodies["compare-and-delete"]}},
		[]string{"EVALSHA", cadSHA, "1", "k", "not-the-value"}, ":0\r\n")
}

// pipeClient is a go-redis client on miniredis over net.Pipe, with the
// engine's client options (minus what only a bubble needs).
func pipeClient(b *testing.B) *redis.Client {
	m := floorServer(b)
	c := NewFloorClient(m)
	b.Cleanup(func() { c.Close() })
	return c
}

func benchPipe(b *testing.B, setup, op func(ctx context.Context, c *redis.Client) error) {
	ctx := context.Background()
	c := pipeClient(b)
	if err := setup(ctx, c); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := op(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := op(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFloorPipeSETNX is go-redis SetNX (PX) on miniredis over net.Pipe.
func BenchmarkFloorPipeSETNX(b *testing.B) { benchPipe(b, setKey, setNXOp) }

// BenchmarkFloorPipeEvalSHA is the compare-and-delete script by EVALSHA on
// miniredis over net.Pipe (Lua).
func BenchmarkFloorPipeEvalSHA(b *testing.B) { benchPipe(b, setKey, cadOp) }
