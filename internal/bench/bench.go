// Package bench measures how fast locksim simulates and checks, each
// beside its floor: the engine's Redis commands per wall second beside
// miniredis's own dispatcher and go-redis over net.Pipe, time compression
// beside the dispatcher's ceiling, and checker throughput beside the
// linear checkers alone ('locksim bench').
package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"text/tabwriter"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// floorTarget is how long each floor is measured.
const floorTarget = 300 * time.Millisecond

// Result is one measurement ('locksim bench --json' prints it).
type Result struct {
	Scenario   string `json:"scenario"`
	Lock       string `json:"lock"`
	Runs       int    `json:"runs"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GOGC       int    `json:"gogc"` // -1: off
	Go         string `json:"go"`

	VirtualNS int64 `json:"virtual_ns"`
	SimWallNS int64 `json:"sim_wall_ns"`
	Commands  int64 `json:"commands"`
	Events    int64 `json:"scheduler_events"`

	CommandsPerSec         float64 `json:"commands_per_sec"`
	FloorDispatchPerSec    float64 `json:"floor_dispatch_commands_per_sec"`
	FloorPipePerSec        float64 `json:"floor_pipe_commands_per_sec"`
	EngineVsPipe           float64 `json:"engine_vs_pipe_ratio"` // commands_per_sec / floor_pipe_commands_per_sec
	Allocs                 uint64  `json:"allocs"`               // heap allocations of the runs (judging not included)
	AllocsPerCommand       float64 `json:"allocs_per_command"`
	Compression            float64 `json:"time_compression"`
	CompressionCeiling     float64 `json:"time_compression_ceiling"` // at the dispatch floor's cost per command
	CheckEvents            int64   `json:"check_events"`
	CheckWallNS            int64   `json:"check_wall_ns"`
	CheckEventsPerSec      float64 `json:"check_events_per_sec"`
	CheckFloorEventsPerSec float64 `json:"check_floor_events_per_sec"` // the linear checkers alone (porcupine skipped)

	Seeds     int           `json:"-"`
	CheckWall time.Duration `json:"-"`
}

// Measure runs base's world for seeds 1..seeds in bubble b, one at a
// time, and measures the engine and the checkers beside their floors.
func Measure(b sim.Bubble, base run.Spec, seeds int) (Result, error) {
	// Measure as the workers run; put the process back after (tests host
	// bench in their own process).
	oldProcs, oldGC := runtime.GOMAXPROCS(0), debug.SetGCPercent(100)
	debug.SetGCPercent(oldGC)
	defer func() { runtime.GOMAXPROCS(oldProcs); debug.SetGCPercent(oldGC) }()
	procs, gogc := sweep.WorkerRuntime()
	res := Result{Scenario: base.ScenarioID(), Lock: base.Lock, Runs: seeds, GOMAXPROCS: procs, GOGC: gogc, Go: runtime.Version()}
	fail := func(err error) (Result, error) { return Result{}, err }

	// The floors are measured in slices between the runs, so that a
	// machine whose load changes meanwhile weighs on both sides of a ratio.
	d, err := sim.NewDispatchFloor(sim.FloorSETNXSetup, sim.FloorSETNXArgs, sim.FloorSETNXReply)
	if err != nil {
		return fail(err)
	}
	defer d.Close()
	p, err := sim.NewPipeFloor(sim.FloorSetKey, sim.FloorSetNX)
	if err != nil {
		return fail(err)
	}
	defer p.Close()
	floors := []*meter{{run: d.Run}, {run: func(n int) error { return p.Run(context.Background(), n) }}}
	slice := floorTarget / time.Duration(seeds+1)
	measureFloors := func() error {
		for _, m := range floors {
			if err := m.measure(slice); err != nil {
				return err
			}
		}
		return nil
	}
	for _, m := range floors {
		if err := m.calibrate(); err != nil {
			return fail(err)
		}
	}

	// The engine, then the checker on each run's history.
	var events int64
	var checkWall, floorWall time.Duration
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		if err := measureFloors(); err != nil {
			return fail(err)
		}
		rs := base
		rs.Seed = seed
		job, err := rs.Build()
		if err != nil {
			return fail(err)
		}
		// Run and judged as sweeps do; the checker is then timed again on
		// its own (same history, same work) and its time taken out.
		var m0, m1, m2 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		j, err := job.Run(b)
		total := time.Since(start)
		runtime.ReadMemStats(&m1)
		if err != nil {
			return fail(err)
		}
		h := j.History
		start = time.Now()
		chk := checker.Check(h, checker.Options{})
		check := time.Since(start)
		runtime.ReadMemStats(&m2)
		res.Allocs += (m1.Mallocs - m0.Mallocs) - min(m2.Mallocs-m1.Mallocs, m1.Mallocs-m0.Mallocs)
		checkWall += check
		res.SimWallNS += int64(max(total-check, 0))
		res.VirtualNS += j.Result.Stats.VirtualNS
		res.Commands += j.Result.Stats.Commands
		res.Events += j.Result.Stats.Events
		events += int64(chk.Events)
		start = time.Now()
		checker.Check(h, checker.Options{SkipPorcupine: true})
		floorWall += time.Since(start)
	}
	if err := measureFloors(); err != nil {
		return fail(err)
	}
	res.FloorDispatchPerSec, res.FloorPipePerSec = floors[0].rate(), floors[1].rate()
	wall := time.Duration(res.SimWallNS)
	res.CommandsPerSec = float64(res.Commands) / max(wall, time.Nanosecond).Seconds()
	res.EngineVsPipe = res.CommandsPerSec / res.FloorPipePerSec
	if res.Commands > 0 {
		res.AllocsPerCommand = float64(res.Allocs) / float64(res.Commands)
	}
	res.Compression = float64(res.VirtualNS) / float64(max(res.SimWallNS, 1))
	if res.Commands > 0 {
		// Wall time per virtual second if each command cost only the
		// dispatcher floor.
		floorNSPerVirtualSec := float64(res.Commands) / (float64(res.VirtualNS) / 1e9) * (1e9 / res.FloorDispatchPerSec)
		res.CompressionCeiling = 1e9 / floorNSPerVirtualSec
	}
	res.CheckEvents, res.CheckWallNS = events, int64(checkWall)
	res.CheckEventsPerSec = float64(events) / max(checkWall, time.Nanosecond).Seconds()
	res.CheckFloorEventsPerSec = float64(events) / max(floorWall, time.Nanosecond).Seconds()

	res.Seeds, res.CheckWall = seeds, checkWall
	return res, nil
}

// WriteTable prints the measurement for people.
func (res Result) WriteTable(stdout io.Writer) {
	wall, seeds, checkWall := time.Duration(res.SimWallNS), res.Seeds, res.CheckWall
	fmt.Fprintf(stdout, "locksim bench: scenario %s, lock %s, seeds 1..%d: %v virtual in %v wall; GOMAXPROCS %d, GOGC %d (as sweep and report workers run), %s\n\n",
		res.Scenario, res.Lock, seeds, time.Duration(res.VirtualNS).Round(time.Second), wall.Round(time.Millisecond), res.GOMAXPROCS, res.GOGC, res.Go)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "what\tmeasured\tfloor\tratio\n")
	fmt.Fprintf(tw, "simulated Redis commands\t%s cmd/s\tminiredis Dispatch %s cmd/s\t%.3g× the floor's rate\n",
		human(res.CommandsPerSec), human(res.FloorDispatchPerSec), res.CommandsPerSec/res.FloorDispatchPerSec)
	fmt.Fprintf(tw, "\t\tgo-redis over net.Pipe %s cmd/s\t%.3g×\n", human(res.FloorPipePerSec), res.EngineVsPipe)
	fmt.Fprintf(tw, "time compression\t%s virtual s / wall s\tceiling at Dispatch cost %s\t%.3g× the ceiling\n",
		human(res.Compression), human(res.CompressionCeiling), res.Compression/res.CompressionCeiling)
	fmt.Fprintf(tw, "checker throughput\t%s events/s\tlinear checkers alone (no porcupine) %s events/s\t%.3g×\n",
		human(res.CheckEventsPerSec), human(res.CheckFloorEventsPerSec), res.CheckEventsPerSec/res.CheckFloorEventsPerSec)
	tw.Flush()
	fmt.Fprintf(stdout, "\n(%d Redis commands, %d scheduler events, %.1f heap allocations per command, %d history events checked in %v)\n",
		res.Commands, res.Events, res.AllocsPerCommand, res.CheckEvents, checkWall.Round(time.Millisecond))
}

// meter measures how many times per second run(n) does one thing, in
// slices of time taken between other work.
type meter struct {
	run  func(n int) error
	step int // calls per batch: about a millisecond's worth
	n    int64
	d    time.Duration
}

// calibrate warms up and sets the batch size: it grows n until a call
// takes a millisecond.
func (m *meter) calibrate() error {
	n := 16
	for {
		start := time.Now()
		if err := m.run(n); err != nil {
			return err
		}
		if time.Since(start) >= time.Millisecond || n >= 1<<30 {
			m.step = n
			return nil
		}
		n *= 2
	}
}

// measure runs batches for about d and adds them to the tally.
func (m *meter) measure(d time.Duration) error {
	start := time.Now()
	for time.Since(start) < d {
		if err := m.run(m.step); err != nil {
			return err
		}
		m.n += int64(m.step)
	}
	m.d += time.Since(start)
	return nil
}

func (m *meter) rate() float64 { return float64(m.n) / max(m.d, time.Nanosecond).Seconds() }

// human prints a rate with thousands separators (3 significant digits
// for small numbers).
func human(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.3g", v)
	}
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, byte(c))
	}
	return string(out)
}
