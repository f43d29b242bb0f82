package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/locksim/locksim/internal/outfile"
	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/run"
)

// realJob builds the flags' run for the real backend: everything is
// checked (input errors, the binaries) before a process starts.
func (f *runFlags) realJob(cmd *cobra.Command) (*realredis.Job, error) {
	if !f.seed.set {
		return nil, usageErrorf("--seed: required (0..18446744073709551615)")
	}
	if err := refuseEmpty(cmd); err != nil {
		return nil, err
	}
	// The outputs first, as the simulator checks them (runFlags.job): a
	// real run cannot be had again, so a path that cannot be written is
	// refused before it starts, not said after it.
	if f.trace != "" {
		if err := outfile.CheckWritable(f.trace); err != nil {
			return nil, usageErrorf("--trace: %v", err)
		}
	}
	for _, name := range []string{"faults", "shrink", "shrink-out", "replay"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return nil, usageErrorf("--%s: not supported with --backend real (a real run is not replayable)", name)
		}
	}
	if f.cexDir != "" {
		if err := outfile.CheckDir(f.cexDir, "slice.jsonl", "porcupine.html", "timeline.png"); err != nil {
			return nil, usageErrorf("--counterexample: %v", err)
		}
	}
	var drv *realredis.Driver
	if f.driver != "" {
		d, err := realredis.ResolveDriver(f.driver)
		if err != nil {
			return nil, usageErrorf("--driver: %v", err)
		}
		drv = d
		if f.lock == "" {
			f.lock = "set-nx-cad" // the world a driver runs in: one node, set-nx-cad's TTL
		}
	}
	job, err := realredis.Build(f.spec(), f.ttl.v)
	if err != nil {
		return nil, specError(err)
	}
	if drv != nil {
		if err := job.WithDriver(drv); err != nil {
			return nil, usageErrorf("--driver: %v", err)
		}
	}
	if err := checkRealEnv(); err != nil {
		return nil, err
	}
	return job, nil
}

// checkRealEnv checks, before anything starts, what every real run needs
// of the machine: a temp folder it can write in (each run keeps its
// servers' files in a folder there) and the servers' binaries. Either
// missing is an input error naming it.
func checkRealEnv() error {
	if err := checkTempDir(); err != nil {
		return usageErrorf("%v", err)
	}
	if err := realredis.CheckBinaries(); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// checkTempDir checks that the temp folder (TMPDIR, or /tmp when it is
// unset: os.TempDir) is a folder a run can make its own folder in, by
// making one and removing it (a TMPDIR that did not exist used to be
// an "internal error" once the run had started).
func checkTempDir() error {
	dir := os.TempDir()
	what := fmt.Sprintf("TMPDIR=%q", dir)
	if os.Getenv("TMPDIR") == "" {
		what = fmt.Sprintf("the temp folder %s (TMPDIR is not set)", dir)
	}
	why := "the real arm keeps each run's server files in a folder there: set TMPDIR to a folder it can write in"
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %v (%s)", what, outfile.UnwrapPathError(err), why)
	case !st.IsDir():
		return fmt.Errorf("%s is not a folder (%s)", what, why)
	}
	probe, err := os.MkdirTemp(dir, ".locksim-probe-*")
	if err != nil {
		return fmt.Errorf("%s: cannot make a folder in it: %v (%s)", what, outfile.UnwrapPathError(err), why)
	}
	if err := os.Remove(probe); err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	return nil
}

// runReal runs a real job, prints its summary (or JSON) and returns the
// exit code. Ctrl-C or SIGTERM stops the run; every process it started and
// its temp dir are removed before it returns.
func runReal(job *realredis.Job, f *runFlags, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	redis.SetLogger(quietLogger{})
	jd, err := job.RunAndJudge(ctx, "")
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "locksim: interrupted: every redis-server this run started was stopped and its temp dir removed\n")
			return 130
		}
		fmt.Fprintf(stderr, "locksim: real backend: %v\n", err)
		return exitInternal
	}
	r := jd.Report(job.Repro())
	// As in a simulated run: an output that cannot be written does not
	// cost the verdict (said on stderr after the summary).
	var failed []string
	stderrFile := "" // the drivers' stderr, beside the trace
	if f.trace != "" {
		if err := jd.WriteHistoryMax(f.trace, int64(f.traceMax.v)<<20); err != nil {
			r.TraceError = err.Error()
			failed = append(failed, "--trace: not written: "+r.TraceError)
		} else {
			r.TraceFile = f.trace
			if job.Driver != nil {
				stderrFile = realredis.DriverStderrPath(f.trace)
			}
		}
	}
	if jd.Err != nil {
		fmt.Fprintf(stderr, "locksim: run incomplete, verdict %s: %v\n", r.Verdict, jd.Err)
	}
	if r.Counterexample != nil && f.cexDir == "" && !f.json {
		fmt.Fprintf(stderr, "locksim: a real run is not replayable: add --counterexample DIR to keep this one's slice, porcupine.html and timeline.png (and --trace FILE for its history)\n")
	}
	if r.Counterexample != nil && f.cexDir != "" {
		if png, err := jd.WriteCounterexample(r, f.cexDir); err != nil {
			failed = append(failed, fmt.Sprintf("--counterexample: not written to %q: %v", f.cexDir, run.UnwrapPathError(err)))
		} else {
			fmt.Fprintf(stderr, "locksim: counterexample timeline: %s\n", png)
		}
	}
	if f.json {
		b, err := json.Marshal(r)
		if err == nil {
			var m map[string]any
			if err = json.Unmarshal(b, &m); err == nil {
				m["backend"] = "real"
				m["ttl_ns"] = int64(job.TTL)
				m["time_scale"] = job.Scale
				m["replayable"] = false
				m["wall_ns"] = int64(jd.Info.Wall)
				m["storage_read_rtt"] = jd.Info.ReadRTT
				for k, v := range jd.JSONFields() {
					m[k] = v
				}
				if len(jd.Info.NotInjected) > 0 {
					m["not_injected"] = jd.Info.NotInjected
				}
				if stderrFile != "" {
					m["driver_stderr_file"] = stderrFile
				}
				if jd.Info.NodeClocks != "" {
					m["node_clocks"] = jd.Info.NodeClocks
				}
				b, err = json.Marshal(m)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "locksim: internal error: %v\n", err)
			return exitInternal
		}
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		jd.WriteSummary(stdout, r)
		if stderrFile != "" {
			fmt.Fprintf(stderr, "locksim: the drivers' stderr (bounded): %s\n", stderrFile)
		}
	}
	for _, msg := range failed {
		fmt.Fprintf(stderr, "locksim: %s (the verdict, %s, stands)\n", msg, r.Verdict)
	}
	return verdictExit[r.Verdict]
}

// errBackend names the backends.
var errBackend = errors.New(`want "sim" (the simulator, the default) or "real" (real redis-server processes on loopback)`)

// checkBackend validates --backend.
func checkBackend(b string) error {
	switch b {
	case "sim", "real":
		return nil
	}
	return fmt.Errorf("--backend %q: %w", b, errBackend)
}

// realTTLHelp is --ttl's help.
var realTTLHelp = fmt.Sprintf("with --backend real: the lock's TTL, %v..%v (default %v); the scenario, written in TTL multiples, is played faster by the same factor", realredis.MinTTL, realredis.MaxTTL, realredis.DefaultTTL)

// driverHelp is --driver's help.
const driverHelp = "with --backend real: every client runs this lock driver (a folder holding one executable driver*, or a program; docs/DRIVERS.md) instead of the lock's Go code, in the world of --lock (default set-nx-cad: one node)"

// quietLogger drops go-redis's own log lines ("failed to dial after 5
// attempts"): in a real run a node that is down refuses connections by
// design, and the history records what the clients saw.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
