package sim_test

// This file is package sim_test because its world runs locks/catalogue's
// redsync adapter, and the catalogue imports sim (through internal/zk).

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/sim"
)

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

// leakWorld is a small world: one node, two clients, 300 ms of safety and
// 100 ms of liveness. c0 runs unmodified redsync (which starts a goroutine
// per node in every Lock and Unlock), c1 plain go-redis SET NX PX and the
// compare-and-delete script, so both library goroutines and the engine's
// own connections, timers and deadlines are exercised.
func leakWorld(seed uint64) sim.Config {
	cfg := sim.Config{Seed: seed, Duration: 300 * time.Millisecond, Liveness: 100 * time.Millisecond,
		Clients: 2, Nodes: []sim.NodeConfig{{}}}.WithDefaults()
	rs, err := catalogue.Get("redsync")
	if err != nil {
		panic(err)
	}
	cad := redis.NewScript(catalogue.CompareAndDelete)
	cfg.Program = func(p *sim.Proc) {
		ctx := p.Context()
		if p.ID() == 0 {
			lk, err := rs.New(locks.Env{Nodes: locks.UniversalClients(p.Nodes()), Primary: p.Nodes()[0], Clock: p, Rand: p.Rand(), Client: p.Name(), Key: "lock:rs"})
			if err != nil {
				p.Record(sim.Event{Kind: "error", Detail: err.Error()})
				return
			}
			for !p.Stopping() {
				lease, err := lk.Acquire(ctx)
				p.Record(sim.Event{Kind: "op", Op: "acquire", Detail: sim.ErrString(err)})
				if err == nil {
					p.Sleep(time.Duration(1+p.Rand().IntN(20)) * time.Millisecond)
					err = lk.Release(ctx, lease)
					p.Record(sim.Event{Kind: "op", Op: "release", Detail: sim.ErrString(err)})
				}
				p.Sleep(time.Duration(1+p.Rand().IntN(20)) * time.Millisecond)
			}
			return
		}
		c := p.Nodes()[0]
		for !p.Stopping() {
			v := fmt.Sprint(p.Rand().Uint64())
			ok, err := c.SetNX(ctx, "lock:plain", v, 50*time.Millisecond).Result()
			p.Record(sim.Event{Kind: "op", Op: "setnx", Detail: sim.ErrString(err), Value: sim.B2I(ok)})
			if ok {
				p.Sleep(5 * time.Millisecond)
				n, err := cad.Run(ctx, c, []string{"lock:plain"}, v).Int64()
				p.Record(sim.Event{Kind: "op", Op: "cad", Detail: sim.ErrString(err), Value: n})
			}
			p.Sleep(time.Duration(1+p.Rand().IntN(10)) * time.Millisecond)
		}
	}
	return cfg
}

// heapInuse is HeapInuse after two GCs (the second frees what sync.Pool
// victim caches and finalizers kept alive through the first).
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// settleGoroutines waits, outside any bubble, for the goroutine count to
// drop to at most want (exiting goroutines need scheduling to finish), and
// returns the last count seen.
func settleGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > want; i++ {
		runtime.GC()
		runtime.Gosched()
		time.Sleep(time.Millisecond) // real time: this goroutine is not in a bubble
		n = runtime.NumGoroutine()
	}
	return n
}

// TestLeakSequentialRuns runs the small world 1,000 times in one process
// (100 under -short or -race) and checks that nothing accumulates:
//
//   - goroutines: the count after the last run (once exiting goroutines
//     have been scheduled) must not exceed the count before the first.
//     synctest already fails a run whose bubble still holds goroutines, so
//     this catches goroutines that escaped the bubble or outlive it;
//   - heap: HeapInuse after GC at the end may exceed HeapInuse after GC at
//     run N/10 (a warm baseline: lazily built global state, script caches,
//     sync.Pools and the allocator's span classes are populated by then) by
//     at most 20% + 8 MiB. Heap-in-use moves with span fragmentation and
//     GC timing by a few MiB, hence the generous slack; a leak of one world
//     per run (a miniredis, clients, a trace history: ≥ 100 KiB) would add
//     ~90 MiB over 900 runs and fail, and so would anything over ~10 KiB a
//     run at full length;
//   - independence: every run of the same seed yields the same trace hash,
//     so no state carries over from one run to the next.
func TestLeakSequentialRuns(t *testing.T) {
	runs := 1000
	if testing.Short() || raceEnabled() {
		runs = 100
	}
	const seeds = 8
	mark := runs / 10

	before := settleGoroutines(0)
	hashes := map[uint64]string{}
	var baseHeap uint64
	start := time.Now()
	for i := 1; i <= runs; i++ {
		seed := uint64(1 + i%seeds)
		res, err := sim.Run(sim.TestBubble(t), leakWorld(seed))
		if err != nil {
			t.Fatalf("run %d (seed %d): %v", i, seed, err)
		}
		if res.Stats.Commands < 20 {
			t.Fatalf("run %d (seed %d): only %d commands: the world did not do its work", i, seed, res.Stats.Commands)
		}
		if h, ok := hashes[seed]; !ok {
			hashes[seed] = res.TraceSHA256
		} else if h != res.TraceSHA256 {
			t.Fatalf("run %d (seed %d): trace hash %s, earlier runs of this seed gave %s: runs are not independent", i, seed, res.TraceSHA256, h)
		}
		if i == mark {
			baseHeap = heapInuse()
		}
	}
	elapsed := time.Since(start)
	endHeap := heapInuse()
	after := settleGoroutines(before)

	t.Logf("%d runs in %v (%v a run); goroutines %d before, %d after; HeapInuse %.1f MiB after run %d, %.1f MiB after run %d",
		runs, elapsed.Round(time.Millisecond), (elapsed / time.Duration(runs)).Round(time.Microsecond),
		before, after, float64(baseHeap)/(1<<20), mark, float64(endHeap)/(1<<20), runs)
	if after > before {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutines: %d before the runs, %d after:\n%s", before, after, buf)
	}
	if limit := baseHeap + baseHeap/5 + 8<<20; endHeap > limit {
		t.Errorf("heap: HeapInuse grew from %d B after run %d to %d B after run %d (limit %d B)", baseHeap, mark, endHeap, runs, limit)
	}
	if len(hashes) != seeds {
		t.Errorf("%d seeds seen, want %d", len(hashes), seeds)
	}
}
