package sim_test

// This file is package sim_test because scenarios imports sim.

import (
	"runtime"
	"testing"
	"time"

	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// BenchmarkTimeCompression runs the "default" scenario with redlock (5
// clients, 5 nodes, 120 s of faults + 30 s liveness, 150 virtual seconds a
// run) and reports how many virtual seconds the engine simulates per wall
// second, and the heap allocations per simulated Redis command of the
// whole run (allocs/cmd: clients, locks, engine and nodes).
//
// One op is one virtual second, not one run: a run takes a fraction of a
// second of wall time, so "-benchtime 2000x" of whole runs would take many
// minutes. Whole runs are never truncated (a shorter Duration would change
// the fault density); seeds 1, 2, ... run until b.N virtual seconds are
// covered, so the last run overshoots b.N. ns/op, B/op and allocs/op are
// therefore overridden with exact values per virtual second simulated. Wall time is
// read here, outside every bubble, with time.Now; it includes building each
// world and hosting its bubble (that is part of what a user waits for).
func BenchmarkTimeCompression(b *testing.B) {
	b.ReportAllocs()
	var virt, events, cmds int64
	var allocs, bytes uint64
	var wall time.Duration
	var m0, m1 runtime.MemStats
	for seed := uint64(1); virt < int64(b.N)*int64(time.Second); seed++ {
		cfg, err := scenarios.Build("default", "redlock", seed, scenarios.Params{})
		if err != nil {
			b.Fatal(err)
		}
		bubble := sim.BenchBubble(b)
		runtime.ReadMemStats(&m0)
		start := time.Now()
		res, err := sim.Run(bubble, cfg)
		wall += time.Since(start)
		runtime.ReadMemStats(&m1)
		if err != nil {
			b.Fatal(err)
		}
		allocs += m1.Mallocs - m0.Mallocs
		bytes += m1.TotalAlloc - m0.TotalAlloc
		virt += res.Stats.VirtualNS
		events += res.Stats.Events
		cmds += res.Stats.Commands
	}
	vs := float64(virt) / 1e9
	b.ReportMetric(float64(wall.Nanoseconds())/vs, "ns/op")
	b.ReportMetric(float64(bytes)/vs, "B/op")
	b.ReportMetric(float64(allocs)/vs, "allocs/op")
	b.ReportMetric(vs/wall.Seconds(), "virt-s/wall-s")
	b.ReportMetric(float64(cmds)/wall.Seconds(), "cmds/wall-s")
	b.ReportMetric(float64(events)/wall.Seconds(), "events/wall-s")
	b.ReportMetric(float64(allocs)/float64(cmds), "allocs/cmd")
}
