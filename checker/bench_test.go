package checker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
)

// syntheticLockOps builds n belief records of clients taking a lock in
// turn with occasional overlaps: per round an acquire call and outcome,
// and for an ok a renewal now and then and a release call and outcome.
func syntheticLockOps(n, clients int, seed uint64) ([]Op, int64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	ops := make([]Op, 0, n+8)
	names := make([]string, clients)
	ids := make([]int64, clients)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	now := int64(0)
	for len(ops) < n {
		c := rng.IntN(clients)
		p := names[c]
		now += rng.Int64N(1000) + 1
		ids[c]++
		ops = append(ops, Op{T: now, Proc: p, Kind: event.KindCall, Op: event.OpAcquire, OpID: ids[c]})
		now += rng.Int64N(1000) + 1
		if rng.IntN(3) == 0 {
			ops = append(ops, Op{T: now, Proc: p, Kind: event.KindFail, Op: event.OpAcquire, OpID: ids[c]})
			continue
		}
		acq := ids[c]
		ops = append(ops, Op{T: now, Proc: p, Kind: event.KindOK, Op: event.OpAcquire, OpID: acq, Until: now + 3000})
		if rng.IntN(4) == 0 {
			ops = append(ops, Op{T: now + 1, Proc: p, Kind: event.KindRenew, Op: event.OpAcquire, OpID: acq, Until: now + 6000})
		}
		// Usually released before the next round; sometimes left to
		// expire while the next holder starts (an overlap).
		if rng.IntN(10) > 0 {
			now += rng.Int64N(1000) + 2
			ids[c]++
			ops = append(ops, Op{T: now, Proc: p, Kind: event.KindCall, Op: event.OpRelease, OpID: ids[c]},
				Op{T: now + 1, Proc: p, Kind: event.KindOK, Op: event.OpRelease, OpID: ids[c]})
			now++
		}
	}
	return ops[:n], now + 1
}

// BenchmarkOverlaps: Holds + Overlaps on a 1M-operation history; reports
// belief records per second (target ≥ 1M ops/s).
func BenchmarkOverlaps(b *testing.B) {
	const n = 1_000_000
	ops, end := syntheticLockOps(n, 50, 1)
	b.ReportAllocs()
	b.ResetTimer()
	var k int
	for b.Loop() {
		k = len(Overlaps(Holds(ops, end)))
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(k), "overlaps")
}

// syntheticSections builds a history shaped like the default scenario:
// clients take a lock in turn and run read → write(read−1) sections on a
// compare-and-set pool; some writes time out (unknown, applied or not),
// and some holders stall so that their late write is fenced while the next
// holder's section runs. Always linearizable.
func syntheticSections(sections, clients int, seed uint64) History {
	rng := rand.New(rand.NewPCG(seed, 2))
	names := make([]string, clients)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	b := newHistory(ResourcePool, int64(sections)+10, "", names...)
	ids := make([]int64, clients)
	store := b.h.Initial
	now := int64(0)
	type late struct {
		c     int
		read  int64
		write int64 // time of the late write
	}
	var stalled []late
	busy := make([]int64, clients) // a client runs one operation at a time
	for s := 0; s < sections; s++ {
		now += rng.Int64N(50_000_000) + 1_000_000
		c := rng.IntN(clients)
		for busy[c] > now || slices.ContainsFunc(stalled, func(l late) bool { return l.c == c }) {
			c = (c + 1) % clients
			now += 1_000_000
		}
		p := names[c]
		// Late writes of stalled holders land now: fenced.
		stalled = slices.DeleteFunc(stalled, func(l late) bool {
			if l.write > now {
				return false
			}
			ids[l.c]++
			b.op(names[l.c], "write", ids[l.c], l.write, l.write+500_000, "fail", l.read-1)
			busy[l.c] = l.write + 500_000
			return true
		})
		ids[c]++
		b.op(p, "read", ids[c], now, now+1_000_000, "ok", store)
		read := store
		if rng.IntN(20) == 0 && len(stalled) < clients-1 {
			stalled = append(stalled, late{c: c, read: read, write: now + rng.Int64N(200_000_000) + 100_000_000})
			continue
		}
		now += rng.Int64N(800_000_000) + 2_000_000
		ids[c]++
		switch {
		case rng.IntN(30) == 0: // timed out: applied or not
			if rng.IntN(2) == 0 {
				store = read - 1
			}
			b.op(p, "write", ids[c], now, now+1_000_000_000, "unknown", read-1)
			busy[c] = now + 1_000_000_000
		default:
			store = read - 1
			b.op(p, "write", ids[c], now, now+1_000_000, "ok", read-1)
		}
		now += 2_000_000
	}
	for _, l := range stalled {
		ids[l.c]++
		b.op(names[l.c], "write", ids[l.c], max(l.write, now), max(l.write, now)+500_000, "fail", l.read-1)
		now = max(l.write, now) + 1_000_000
	}
	return b.history(0, now+1_000_000_000)
}

func TestSyntheticSectionsLinearizable(t *testing.T) {
	for seed := range uint64(4) {
		h := syntheticSections(300, 5, seed)
		lin := Linearizable(h, time.Minute, 0)
		fenced := 0
		for _, op := range Sections(h) {
			if op.Input.(Section).Outcome == "fail" {
				fenced++
			}
		}
		if lin.Result != LinOK || lin.Sections != 300 || lin.Unknown == 0 || fenced == 0 {
			t.Errorf("seed %d: %s on %d sections (%d unknown, %d fenced), want ok on 300 with some of each",
				seed, lin.Result, lin.Sections, lin.Unknown, fenced)
		}
	}
}

// BenchmarkPorcupine: the linearizability check of histories shaped like
// the default scenario (5 clients, 300 sections, ~3% unknown, ~5% fenced
// late writes). Reports the median wall time per check.
func BenchmarkPorcupine(b *testing.B) {
	hs := make([]History, 8)
	for i := range hs {
		hs[i] = syntheticSections(300, 5, uint64(i))
	}
	var times []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if lin := Linearizable(hs[i%len(hs)], time.Minute, 0); lin.Result != LinOK {
			b.Fatalf("history %d: %s", i%len(hs), lin.Result)
		}
		times = append(times, time.Since(start))
		i++
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "median-ns/op")
}

// BenchmarkCheckTrace: every check on a real default-scenario history.
func BenchmarkCheckTrace(b *testing.B) {
	h := loadTrace(b, "testdata/set-nx-cad-2.jsonl.gz", "")
	b.ReportMetric(float64(len(h.Events)), "events")
	for b.Loop() {
		if r := Check(h, Options{}); r.Verdict != VerdictSafe {
			b.Fatal(r.Verdict)
		}
	}
}
