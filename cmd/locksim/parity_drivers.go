package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/locksim/locksim/internal/outfile"
	"github.com/locksim/locksim/internal/realarm/parity"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// runDriversTable is 'locksim parity --drivers DIR': the drivers table
// (docs/DRIVERS.md) into out/drivers.json and out/drivers.txt.
func runDriversTable(cmd *cobra.Command, stdout, stderr io.Writer, h host, code *int, out, dir, world, cells string, quick bool, simRuns, realRuns, jobs intValue, ttl durationValue) error {
	if !slices.Contains(parity.Worlds, world) {
		return usageErrorf("--world %q: want one of %s", world, strings.Join(parity.Worlds, ", "))
	}
	jf, tf := parity.DriversFiles(world)
	if err := outfile.CheckDir(out, jf, tf); err != nil {
		return usageErrorf("--out: %v", err)
	}
	if st, err := os.Stat(filepath.Join(out, parity.TracesFolder)); err == nil && !st.IsDir() {
		return usageErrorf("--out: %s exists and is not a folder (the kept traces go there)", filepath.Join(out, parity.TracesFolder))
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageErrorf("--drivers: %q is not a folder of drivers (e.g. drivers, holding python-redis-py/ and node-redlock/)", dir)
	}
	// Every driver folder in dir, with its expectations file (a bad one
	// is bad input, named by file and line).
	all, err := parity.DirArms(dir, world)
	if err != nil {
		return usageErrorf("--drivers: %v", err)
	}
	opt := parity.DriversOptions{Dir: dir, World: world, Arms: all, SimRuns: parity.Full.SimRuns, RealRuns: parity.Full.RealRuns, RealJobs: parity.Full.RealJobs, TTL: ttl.v, Progress: stderr, TracesIn: out}
	if cmd.Flags().Changed("cells") {
		// SCENARIO (every arm runs in it) or SCENARIO/ARM (only the
		// named arms: the table is every named scenario × named arm).
		refs, err := parseCellList(cells, "SCENARIO or SCENARIO/ARM", false, func(arm string) error {
			for _, a := range all {
				if a.Name == arm || (a.Driver == "" && arm == "go") {
					return nil
				}
			}
			names := armNames(all)
			return fmt.Errorf("no arm %q in %s's table from %s (%swant go or a driver: %s)", arm, world, dir, scenarios.DidYouMean(arm, append([]string{"go"}, names...)), strings.Join(names, ", "))
		})
		if err != nil {
			return usageErrorf("--cells with --drivers: %v", err)
		}
		var arms []string
		for _, r := range refs {
			if r.second != "" && !slices.Contains(arms, r.second) {
				arms = append(arms, r.second)
			}
			if !slices.Contains(opt.Scenarios, r.scenario) {
				opt.Scenarios = append(opt.Scenarios, r.scenario)
			}
		}
		if len(arms) > 0 {
			opt.Arms = nil
			for _, a := range all {
				if slices.Contains(arms, a.Name) || (a.Driver == "" && slices.Contains(arms, "go")) {
					opt.Arms = append(opt.Arms, a)
				}
			}
		}
	}
	if quick {
		opt.SimRuns, opt.RealRuns, opt.RealJobs = parity.Quick.SimRuns, parity.Quick.RealRuns, parity.Quick.RealJobs
	}
	if simRuns.set {
		opt.SimRuns = simRuns.v
	}
	if realRuns.set {
		opt.RealRuns = realRuns.v
	}
	if jobs.set {
		opt.RealJobs = jobs.v
	}
	if exe, err := os.Executable(); err == nil {
		opt.Exe = exe // each real run its own process (parity.DriversOptions.Exe)
	}
	if err := checkRealEnv(); err != nil {
		return err
	}
	redis.SetLogger(quietLogger{})
	*code = h(func(b sim.Bubble) int {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		res, err := parity.RunDrivers(ctx, b, opt)
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintf(stderr, "locksim: parity --drivers interrupted: nothing written; every process it started was stopped\n")
				return 130
			}
			fmt.Fprintf(stderr, "locksim: parity --drivers: %v\n", err)
			return exitInternal
		}
		if err := res.Write(out); err != nil {
			fmt.Fprintf(stderr, "locksim: parity --drivers: %v\n", err)
			return exitInternal
		}
		res.WriteTable(stdout)
		fmt.Fprintf(stdout, "wrote %s/{%s,%s}\n", out, jf, tf)
		return 0
	})
	return nil
}

// armNames lists the drivers among arms, for messages.
func armNames(arms []parity.Arm) []string {
	var names []string
	for _, a := range arms {
		if a.Driver != "" {
			names = append(names, a.Name)
		}
	}
	return names
}
