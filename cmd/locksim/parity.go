package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/locksim/locksim/internal/outfile"
	"github.com/locksim/locksim/internal/realarm/parity"
	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

func newParityCmd(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	var (
		quick    bool
		strict   bool
		drivers  string
		world    string
		out      string
		cells    string
		simRuns  = intValue{min: 1, max: 100_000}
		realRuns = intValue{min: 1, max: 10_000}
		jobs     = intValue{min: 1, max: 16}
		ttl      = durationValue{min: realredis.MinTTL, max: realredis.MaxTTL}
	)
	cmd := &cobra.Command{
		Use:   "parity --out DIR [--quick]",
		Short: "Run a fixed set of cells in the simulator and against real Redis, and compare",
		Long: `Run a fixed set of cells (scenario × lock) in both backends, the simulator
and real redis-server processes on 127.0.0.1, on the same world: each
scenario played so that the lock's TTL is --ttl (every duration scaled
alike). A cell agrees when both give the same verdict and the 95% Wilson
intervals of their unsafe rates overlap. Cells the real arm cannot run yet
are listed as such, never guessed.

Writes DIR/parity.json ({"cells":[{scenario, lock, sim_runs, sim_unsafe,
real_runs, real_unsafe, sim_verdict, real_verdict, agree, ...}]}),
DIR/parity.txt (the table also printed on stdout) and DIR/parity.png.
Default: 200 sim seeds and 20 real runs a cell (3 at once); --quick: 40 and 4 (4 at once).
Needs redis-server: apt-get install -y redis-server redis-sentinel faketime.`,
		Example: `  locksim parity --quick --out p
  locksim parity --out p --cells pause-after-check/set-nx-cad,no-faults/redlock --real-runs 10`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErrorf("--out: required (the folder for parity.json, parity.txt, parity.png)")
			}
			if drivers != "" {
				return runDriversTable(cmd, stdout, stderr, h, code, out, drivers, world, cells, quick, simRuns, realRuns, jobs, ttl)
			}
			if err := outfile.CheckDir(out, parity.JSONFile, parity.TableFile, parity.ChartFile); err != nil {
				return usageErrorf("--out: %v", err)
			}
			opt := parity.Full
			if quick {
				opt = parity.Quick
			}
			if cmd.Flags().Changed("cells") {
				cs, err := parseCells(cells)
				if err != nil {
					return usageErrorf("--cells: %v", err)
				}
				opt.Cells = cs
			}
			if simRuns.set {
				opt.SimRuns = simRuns.v
			}
			if realRuns.set {
				opt.RealRuns = realRuns.v
				opt.ReplicatedRuns = 0 // the runs asked for, in every cell
			}
			if jobs.set {
				opt.RealJobs = jobs.v
			}
			opt.TTL = ttl.v
			if err := checkRealEnv(); err != nil {
				return err
			}
			opt.Progress = stderr
			redis.SetLogger(quietLogger{})
			*code = h(func(b sim.Bubble) int {
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				res, err := parity.Run(ctx, b, opt)
				if err != nil {
					if ctx.Err() != nil {
						fmt.Fprintf(stderr, "locksim: parity interrupted: nothing written; every redis-server it started was stopped\n")
						return 130
					}
					fmt.Fprintf(stderr, "locksim: parity: %v\n", err)
					return exitInternal
				}
				if err := res.Write(out); err != nil {
					fmt.Fprintf(stderr, "locksim: parity: %v\n", err)
					return exitInternal
				}
				res.WriteTable(stdout)
				fmt.Fprintf(stdout, "wrote %s/{%s,%s,%s}\n", out, parity.JSONFile, parity.TableFile, parity.ChartFile)
				if bad := res.Disagreements(); strict && len(bad) > 0 {
					fmt.Fprintf(stderr, "locksim: parity: %d cells with an agreed debate outcome disagree: %s\n", len(bad), strings.Join(bad, ", "))
					return exitUnsafe
				}
				return 0
			})
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&quick, "quick", false, "fewer runs a cell: 40 sim seeds, 4 real runs")
	fl.BoolVar(&strict, "fail-on-disagree", false, "exit 1 when a cell the real arm ran, whose debate outcome is agreed, disagrees (CI)")
	fl.StringVar(&out, "out", "", "the `DIR` to write parity.json, parity.txt and parity.png to; required")
	fl.StringVar(&cells, "cells", "", "only these cells: `SCENARIO/LOCK,...` (default: the fixed set); with --drivers, SCENARIO (every arm) or SCENARIO/ARM (one arm: go, or a driver's name)")
	fl.Var(&simRuns, "sim-runs", "sim seeds a cell (default 200, --quick 40)")
	fl.Var(&realRuns, "real-runs", "real runs a cell (default 20, --quick 4)")
	fl.VarP(&jobs, "jobs", "j", "real runs at once (default 3, --quick 4)")
	fl.StringVar(&drivers, "drivers", "", "run the drivers table instead (docs/DRIVERS.md): Go set-nx-cad, the Python control, redis-py, redlock and redis-semaphore from the `DIR` of drivers (e.g. drivers) in 9 scenarios; writes drivers.json and drivers.txt")
	fl.StringVar(&world, "world", "set-nx-cad", "with --drivers: the lock whose world the drivers run in: set-nx-cad (one node), redlock (five; node-redlock only) or fencing (a fenced storage; python-fencing only)")
	fl.Var(&ttl, "ttl", fmt.Sprintf("the lock's TTL in both arms, %v..%v (default %v)", realredis.MinTTL, realredis.MaxTTL, realredis.DefaultTTL))
	return cmd
}

// parseCells reads --cells SCENARIO/LOCK,...: every cell names a built-in
// scenario and a lock of the catalogue, once (parseCellList).
func parseCells(s string) ([]parity.Cell, error) {
	refs, err := parseCellList(s, "SCENARIO/LOCK", true, func(lock string) error {
		if _, err := catalogue.Get(lock); err != nil {
			return fmt.Errorf("unknown lock %q (%ssee locksim list locks)", lock, scenarios.DidYouMean(lock, append(catalogue.IDs(), catalogue.RealOnlyIDs()...)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]parity.Cell, len(refs))
	for i, r := range refs {
		out[i] = parity.Cell{Scenario: r.scenario, Lock: r.second}
	}
	return out, nil
}

// cellRef is one cell of a --cells list: a scenario and what follows its
// "/" (a lock, or with --drivers an arm; "" when there is none).
type cellRef struct{ scenario, second string }

// parseCellList reads a --cells list, for parity and parity --drivers
// alike: comma-separated cells, each SCENARIO/SECOND (form names it in
// errors; needSecond: the "/SECOND" is required), every scenario a
// built-in one, every SECOND accepted by check, no cell twice. An empty
// list, an empty cell, a second "/" or an unknown name is an error naming
// the cell and, where one is close, the name it likely misspells.
func parseCellList(s, form string, needSecond bool, check func(second string) error) ([]cellRef, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty: name cells as %s,... or leave the flag out for the default set", form)
	}
	var out []cellRef
	for _, part := range strings.Split(s, ",") {
		c := strings.TrimSpace(part)
		if c == "" {
			return nil, fmt.Errorf("%q: an empty cell (want %s,...)", s, form)
		}
		sc, second, hasSecond := strings.Cut(c, "/")
		why := ""
		switch {
		case strings.Contains(second, "/"):
			why = `more than one "/"`
		case sc == "":
			why = `nothing before the "/"`
		case hasSecond && second == "":
			why = `nothing after the "/"`
		case needSecond && !hasSecond:
			why = `no "/"`
		}
		if why != "" {
			return nil, fmt.Errorf("%q is not %s: %s", c, form, why)
		}
		if _, err := scenarios.Get(sc); err != nil {
			return nil, fmt.Errorf("%q: unknown scenario %q (%ssee locksim list scenarios)", c, sc, scenarios.DidYouMean(sc, scenarios.IDs()))
		}
		if hasSecond {
			if err := check(second); err != nil {
				return nil, fmt.Errorf("%q: %v", c, err)
			}
		}
		r := cellRef{scenario: sc, second: second}
		if slices.Contains(out, r) {
			return nil, fmt.Errorf("%q appears twice", c)
		}
		out = append(out, r)
	}
	return out, nil
}
