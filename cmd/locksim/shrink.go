package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksim/locksim/internal/outfile"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// run's --faults, --shrink, --shrink-out and --shrink-runs.

// shrinkFlags are the flags; see register.
type shrinkFlags struct {
	faultsFile string
	shrink     bool
	out        string
	runs       intValue
}

func (s *shrinkFlags) register(fl *pflag.FlagSet) {
	s.runs = intValue{min: 1, max: 100_000}
	fl.StringVar(&s.faultsFile, "faults", "", "replace the scenario's fault schedule with the JSON list of faults in `FILE` (as --shrink writes it)")
	fl.BoolVar(&s.shrink, "shrink", false, "when unsafe, shrink the fault schedule and the client count to a minimal run with the same kind of violation, print it and write it to a --faults file")
	fl.StringVar(&s.out, "shrink-out", "", "write the shrunk schedule to `FILE` (default shrunk-<lock>-<seed>.faults.json in the --counterexample DIR, or else in the current directory)")
	fl.Var(&s.runs, "shrink-runs", fmt.Sprintf("at most `N` runs for --shrink, 1..100000 (default %d; at the bound the smallest failing run so far is reported)", run.DefaultShrinkRuns))
}

// check validates --shrink's flags before any bubble is hosted and
// returns the shrink step (nil without --shrink). Errors are input errors
// (exit 64).
func (s *shrinkFlags) check(cmd *cobra.Command, f *runFlags) (*shrinkJob, error) {
	fl := cmd.Flags()
	for _, name := range []string{"shrink-out", "shrink-runs"} {
		if fl.Changed(name) && !s.shrink {
			return nil, usageErrorf("--%s: needs --shrink", name)
		}
	}
	if !s.shrink {
		return nil, nil
	}
	out := s.out
	if out == "" {
		// Beside the counterexample, else in the temporary directory
		// (not the current one: a run leaves nothing behind it was not
		// asked to write).
		name := fmt.Sprintf("shrunk-%s-%d.faults.json", f.lock, f.seed.v)
		out = filepath.Join(os.TempDir(), "locksim-"+name)
		if f.cexDir != "" {
			out = filepath.Join(f.cexDir, name)
		}
	} else if err := outfile.CheckWritable(out); err != nil {
		return nil, usageErrorf("--shrink-out: %v", err)
	}
	return &shrinkJob{out: out, maxRuns: s.runs.v}, nil
}

// shrinkJob is a validated --shrink.
type shrinkJob struct {
	out     string // the --faults file to write
	maxRuns int    // 0: the default
}

// run shrinks j's unsafe run (r), writes the schedule file, and rewrites
// r's counterexample to the shrunk run: faults and clients are the shrunk
// numbers, repro reproduces the shrunk run. It returns an exit code, 0 on
// success.
func (s *shrinkJob) run(b sim.Bubble, j *runJob, r *run.Report, stderr io.Writer) int {
	kind := r.ShrinkKind()
	if kind == "" {
		fmt.Fprintf(stderr, "locksim: --shrink: the verdict names no violation to keep\n")
		return exitInternal
	}
	res, err := run.Shrink(b, j.job, kind, run.ShrinkOptions{MaxRuns: s.maxRuns})
	if err != nil {
		fmt.Fprintf(stderr, "locksim: --shrink: %v\n", err)
		return exitInternal
	}
	if err := run.WriteFaults(s.out, res.Faults); err != nil {
		fmt.Fprintf(stderr, "locksim: --shrink-out: %v\n", err)
		return exitInternal
	}
	r.Shrunk(res, s.out)
	return 0
}
