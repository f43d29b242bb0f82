package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/internal/bench"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

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
each world. The process runs as sweep and report workers do: one P
(GOMAXPROCS=1) and the workers' GOGC (400), unless the environment sets
GOMAXPROCS or GOGC; the floors run the same way. Numbers vary with the
machine and its load: compare them with the floors measured in the same
run, not across machines.`,
		Example: `  locksim bench
  locksim bench --lock set-nx-cad --seeds 20 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := scenarios.Get(f.scenario); err != nil {
				return usageErrorf("--scenario: unknown scenario %q (one of: %s)", f.scenario, strings.Join(scenarios.IDs(), ", "))
			}
			info, err := catalogue.Get(f.lock)
			if err != nil {
				return usageErrorf("--lock: unknown lock %q (one of: %s)", f.lock, strings.Join(catalogue.IDs(), ", "))
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
			*code = h(func(b sim.Bubble) int {
				res, err := bench.Measure(b, rs, seeds)
				if err != nil {
					fmt.Fprintf(stderr, "locksim: bench: %v\n", err)
					return exitInternal
				}
				if f.json {
					out, err := json.Marshal(res)
					if err != nil {
						fmt.Fprintf(stderr, "locksim: bench: %v\n", err)
						return exitInternal
					}
					fmt.Fprintf(stdout, "%s\n", out)
				} else {
					res.WriteTable(stdout)
				}
				return exitSafe
			})
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
