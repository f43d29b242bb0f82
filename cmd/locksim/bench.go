package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// floorTarget is how long each floor is measured.
const floorTarget = 300 * time.Millisecond

type benchFlags struct {
	scenario string
	lock     string
	seeds    intValue
	duration durationValue
	json     bool
}

func newBenchCmd(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	f := &benchFlags{seeds: intValue{min: 1, max: 10_000}, duration: durationValue{min: sim.MinDuration, max: sim.MaxDuration}}
	cmd := &cobra.Command{
		Use:   "bench [--scenario S] [--lock ID] [--seeds N]",
		Short: "Measure the simulator's speed beside its floors",
		Long: `Measure, in one process and one run, how fast locksim simulates and checks,
each beside its floor:

  simulated Redis commands per wall second, beside what the same command
      costs without the engine: miniredis's own dispatcher (no client, no
      network) and a real go-redis client on miniredis over net.Pipe;
  time compression (virtual seconds per wall second), beside the ceiling
      the dispatcher floor would allow for the run's command rate;
  checker throughput (history events per wall second, every checker,
      porcupine included), beside the linear checkers alone (lease
      overlap, storage truth, ownership, liveness: one pass each) on the
      same histories.

Runs are sequential (one bubble at a time); wall time includes building
each world. Numbers vary with the machine and its load: compare them with
the floors measured in the same run, not across machines.`,
		Example: `  locksim bench
  locksim bench --lock set-nx-cad --seeds 20 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := scenarios.Get(f.scenario); err != nil {
				return usageErrorf("--scenario: unknown scenario %q (one of: %s)", f.scenario, strings.Join(scenarios.IDs(), ", "))
			}
			info, err := locks.Get(f.lock)
			if err != nil {
				return usageErrorf("--lock: unknown lock %q (one of: %s)", f.lock, strings.Join(locks.IDs(), ", "))
			}
			if info.Unavailable != "" {
				return usageErrorf("--lock: %s is %s", f.lock, info.Unavailable)
			}
			seeds := 5
			if f.seeds.set {
				seeds = f.seeds.v
			}
			rs := run.Spec{Scenario: f.scenario, Lock: info.ID, Seed: 1, Params: scenarios.Params{Duration: f.duration.v}}
			if _, err := rs.Build(); err != nil {
				return specError(err)
			}
			*code = h(func(b sim.Bubble) int { return runBench(b, rs, seeds, f.json, stdout, stderr) })
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.scenario, "scenario", "default", "scenario id")
	fl.StringVar(&f.lock, "lock", "redlock", "lock id")
	fl.Var(&f.seeds, "seeds", "runs, seeds 1..N (default 5)")
	fl.Var(&f.duration, "duration", "safety phase of each run (default: the scenario's)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object")
	return cmd
}

// benchResult is bench's measurement (the --json object).
type benchResult struct {
	Scenario   string `json:"scenario"`
	Lock       string `json:"lock"`
	Runs       int    `json:"runs"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`

	VirtualNS int64 `json:"virtual_ns"`
	SimWallNS int64 `json:"sim_wall_ns"`
	Commands  int64 `json:"commands"`
	Events    int64 `json:"scheduler_events"`

	CommandsPerSec         float64 `json:"commands_per_sec"`
	FloorDispatchPerSec    float64 `json:"floor_dispatch_commands_per_sec"`
	FloorPipePerSec        float64 `json:"floor_pipe_commands_per_sec"`
	Compression            float64 `json:"time_compression"`
	CompressionCeiling     float64 `json:"time_compression_ceiling"` // at the dispatch floor's cost per command
	CheckEvents            int64   `json:"check_events"`
	CheckWallNS            int64   `json:"check_wall_ns"`
	CheckEventsPerSec      float64 `json:"check_events_per_sec"`
	CheckFloorEventsPerSec float64 `json:"check_floor_events_per_sec"` // the linear checkers alone (porcupine skipped)
}

func runBench(b sim.Bubble, base run.Spec, seeds int, asJSON bool, stdout, stderr io.Writer) int {
	res := benchResult{Scenario: base.ScenarioID(), Lock: base.Lock, Runs: seeds, GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version()}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "locksim: bench: %v\n", err)
		return exitInternal
	}

	// Floors first, on a quiet heap.
	d, err := sim.NewDispatchFloor(sim.FloorSETNXSetup, sim.FloorSETNXArgs, sim.FloorSETNXReply)
	if err != nil {
		return fail(err)
	}
	res.FloorDispatchPerSec, err = rate(func(n int) error { return d.Run(n) })
	d.Close()
	if err != nil {
		return fail(err)
	}
	p, err := sim.NewPipeFloor(sim.FloorSetKey, sim.FloorSetNX)
	if err != nil {
		return fail(err)
	}
	res.FloorPipePerSec, err = rate(func(n int) error { return p.Run(context.Background(), n) })
	p.Close()
	if err != nil {
		return fail(err)
	}

	// The engine, then the checker on each run's history.
	var events int64
	var checkWall, floorWall time.Duration
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rs := base
		rs.Seed = seed
		job, err := rs.Build()
		if err != nil {
			return fail(err)
		}
		// Run and judged as sweeps do; the checker is then timed again on
		// its own (same history, same work) and its time taken out.
		start := time.Now()
		j, err := job.Run(b)
		total := time.Since(start)
		if err != nil {
			return fail(err)
		}
		h := j.History
		start = time.Now()
		chk := checker.Check(h, checker.Options{})
		check := time.Since(start)
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
	wall := time.Duration(res.SimWallNS)
	res.CommandsPerSec = float64(res.Commands) / wall.Seconds()
	res.Compression = float64(res.VirtualNS) / float64(res.SimWallNS)
	if res.Commands > 0 {
		// Wall time per virtual second if each command cost only the
		// dispatcher floor.
		floorNSPerVirtualSec := float64(res.Commands) / (float64(res.VirtualNS) / 1e9) * (1e9 / res.FloorDispatchPerSec)
		res.CompressionCeiling = 1e9 / floorNSPerVirtualSec
	}
	res.CheckEvents, res.CheckWallNS = events, int64(checkWall)
	res.CheckEventsPerSec = float64(events) / checkWall.Seconds()
	res.CheckFloorEventsPerSec = float64(events) / max(floorWall, time.Nanosecond).Seconds()

	if asJSON {
		out, _ := json.Marshal(res)
		fmt.Fprintf(stdout, "%s\n", out)
		return exitSafe
	}
	fmt.Fprintf(stdout, "locksim bench: scenario %s, lock %s, seeds 1..%d: %v virtual in %v wall; GOMAXPROCS %d, %s\n\n",
		res.Scenario, res.Lock, seeds, time.Duration(res.VirtualNS).Round(time.Second), wall.Round(time.Millisecond), res.GOMAXPROCS, res.Go)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "what\tmeasured\tfloor\tratio\n")
	fmt.Fprintf(tw, "simulated Redis commands\t%s cmd/s\tminiredis Dispatch %s cmd/s\t%.3g× the floor's rate\n",
		human(res.CommandsPerSec), human(res.FloorDispatchPerSec), res.CommandsPerSec/res.FloorDispatchPerSec)
	fmt.Fprintf(tw, "\t\tgo-redis over net.Pipe %s cmd/s\t%.3g×\n", human(res.FloorPipePerSec), res.CommandsPerSec/res.FloorPipePerSec)
	fmt.Fprintf(tw, "time compression\t%s virtual s / wall s\tceiling at Dispatch cost %s\t%.3g× the ceiling\n",
		human(res.Compression), human(res.CompressionCeiling), res.Compression/res.CompressionCeiling)
	fmt.Fprintf(tw, "checker throughput\t%s events/s\tlinear checkers alone (no porcupine) %s events/s\t%.3g×\n",
		human(res.CheckEventsPerSec), human(res.CheckFloorEventsPerSec), res.CheckEventsPerSec/res.CheckFloorEventsPerSec)
	tw.Flush()
	fmt.Fprintf(stdout, "\n(%d Redis commands, %d scheduler events, %d history events checked in %v)\n",
		res.Commands, res.Events, res.CheckEvents, checkWall.Round(time.Millisecond))
	return exitSafe
}

// rate measures how many times per second run(n) does one thing: it grows
// n until a call takes floorTarget/4, then times floorTarget's worth.
func rate(run func(n int) error) (float64, error) {
	n := 100
	for {
		start := time.Now()
		if err := run(n); err != nil {
			return 0, err
		}
		d := time.Since(start)
		if d >= floorTarget/4 || n >= 1<<30 {
			n = int(float64(n) * float64(floorTarget) / float64(max(d, time.Microsecond)))
			break
		}
		n *= 4
	}
	start := time.Now()
	if err := run(n); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

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
