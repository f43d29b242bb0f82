package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/internal/inputfile"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

type replayFlags struct {
	run    runFlags
	json   bool
	cexDir string
}

func newReplayCmd(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	f := &replayFlags{run: newRunFlags()}
	cmd := &cobra.Command{
		Use:   "replay TRACE | replay --lock ID --seed N [flags]",
		Short: "Run a recorded trace's world again and check it replays event for event",
		Long: `Replay a run and prove it deterministic.

With a trace file written by 'locksim run --trace', replay reads the run its
first line records (scenario, lock, seed, sizes, the fault schedule that
ran), runs that world again, and compares the new trace with the file line
by line. It prints the run's summary and "replay: identical ..." and exits
with the verdict's code; if any event differs it names the first differing
line, both versions, and exits 70 (a determinism bug: please report it).
A damaged file is an input error (exit 64), not a divergence: the file's
last line records the count and SHA-256 of its header and event lines, and
a file edited or damaged since it was written is named as such before
anything runs; a recording that ends before the run did is "truncated at
line N", and one this locksim wrote that has lost its footer line (cut
short) and differs from the run is "damaged" at its first differing
line; a scenario file edited since the recording (its hash is in the
header) or no longer there is named. A real-arm run's trace ('run
--backend real --trace') is a history, not a replayable run: replay says
so.

With --lock and --seed (and run's other flags) instead of a file, replay
runs the seed twice and compares the two traces the same way.`,
		Example: `  locksim run --lock redsync --seed 7 --trace redsync-7.jsonl
  locksim replay redsync-7.jsonl
  locksim replay --lock redlock --seed 3 --scenario clock-jump`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			var path string
			if len(args) == 1 {
				for _, name := range []string{"lock", "seed", "scenario", "clients", "nodes", "duration", "liveness", "faults"} {
					if fl.Changed(name) {
						return usageErrorf("--%s: not with a trace file (the file says which run it is)", name)
					}
				}
				path = args[0]
			} else {
				if !fl.Changed("lock") && !fl.Changed("seed") {
					return usageErrorf("replay: needs a trace file, or --lock and --seed")
				}
				// Record the first run into a temporary trace file, then
				// replay it like any other.
				j, err := f.run.job(cmd)
				if err != nil {
					return err
				}
				dir, err := os.MkdirTemp("", "locksim-replay-")
				if err != nil {
					return fmt.Errorf("replay: %v", err)
				}
				defer os.RemoveAll(dir)
				path = filepath.Join(dir, "first.jsonl")
				if err := j.openTrace(path); err != nil {
					return err
				}
				j.json = true
				*code = h(func(b sim.Bubble) int {
					if first := j.run(b, io.Discard, stderr); first == exitInternal || first == exitUsage {
						return first
					} else if j.traceErr != "" {
						return exitInternal // no recording to replay (said on stderr)
					}
					return replayFile(b, path, f, stdout, stderr, j.repro)
				})
				return nil
			}
			file, err := inputfile.Open(path)
			if err != nil {
				return usageErrorf("replay: cannot read %q: %v", path, err)
			}
			file.Close()
			*code = h(func(b sim.Bubble) int { return replayFile(b, path, f, stdout, stderr, "") })
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.run.lock, "lock", "", "without a trace file: the lock design id")
	fl.Var(&f.run.seed, "seed", "without a trace file: the seed `N`")
	fl.StringVar(&f.run.scenario, "scenario", "default", "without a trace file: built-in scenario id or scenario `FILE`")
	fl.Var(&f.run.clients, "clients", "without a trace file: client processes")
	fl.Var(&f.run.nodes, "nodes", "without a trace file: Redis nodes")
	fl.Var(&f.run.duration, "duration", "without a trace file: virtual time of the safety phase")
	fl.Var(&f.run.liveness, "liveness", "without a trace file: virtual time of the liveness phase")
	fl.StringVar(&f.run.shrink.faultsFile, "faults", "", "without a trace file: run this fault schedule (`FILE`, a JSON list) instead of the seed's")
	fl.BoolVar(&f.json, "json", false, "print one JSON object (run's, with a \"replay\" member) instead of the summary")
	fl.StringVar(&f.cexDir, "counterexample", "", "when unsafe, write the counterexample to `DIR` (as run does)")
	return cmd
}

// replayFile replays the trace file at path in bubble b. firstRepro is set
// when the file is replay's own first run (--lock/--seed): that run's
// command line.
func replayFile(b sim.Bubble, path string, f *replayFlags, stdout, stderr io.Writer, firstRepro string) int {
	// The file's own footer first: an edited or damaged file is an input
	// error, and a divergence from an intact one a determinism bug.
	footer, err := run.CheckTrace(path)
	if err != nil {
		fmt.Fprintf(stderr, "locksim: replay: %v\n", err)
		return exitUsage
	}
	file, err := inputfile.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "locksim: replay: cannot read %q: %v\n", path, err)
		return exitUsage
	}
	defer file.Close()
	rec := bufio.NewReaderSize(file, 1<<20)
	hdr, err := run.ReadHeader(path, rec)
	if err == nil {
		var job *run.Job
		if job, err = hdr.Job(path); err == nil {
			j := &runJob{job: job, repro: "locksim replay " + run.ShellQuote(path), recordedBy: hdr.Locksim, replayChecked: footer != nil}
			return replayJob(b, j, path, rec, f, stdout, stderr, firstRepro)
		}
	}
	fmt.Fprintf(stderr, "locksim: replay: %v\n", err)
	return exitUsage
}

func replayJob(b sim.Bubble, j *runJob, path string, rec *bufio.Reader, f *replayFlags, stdout, stderr io.Writer, firstRepro string) int {
	cmp := &run.Comparer{Recorded: rec}
	j.replayFile = path
	if firstRepro != "" {
		j.replayFile = ""
		j.repro = firstRepro
	}
	j.job.Config.Trace, j.replay = cmp, cmp
	j.json, j.cexDir = f.json, f.cexDir
	code := j.run(b, stdout, stderr)
	if code == exitInternal {
		return code
	}
	diff, _ := cmp.Finish()
	if d := diff; d != nil && d.Truncated && firstRepro == "" && !j.replayChecked {
		fmt.Fprintf(stderr, "locksim: replay: %s is truncated at line %d: it ends before the run did (a complete trace ends with the world's stop event); the lines before it matched\n", path, d.Line)
		return exitUsage
	}
	if d := diff; d != nil && firstRepro == "" && !j.replayChecked && j.recordedBy == versionLine() {
		// This locksim ends every trace with a footer: one of its own
		// traces without it was cut short, and may have been edited too,
		// so a difference is no proof of a divergence.
		fmt.Fprintf(stderr, "locksim: replay: %s is damaged: it has no footer line (every trace this locksim writes ends with one: the file was cut short), and its line %d differs from the replay; replay needs the file as 'locksim run --trace' wrote it\n  recorded: %s\n  replayed: %s\n",
			path, d.Line, clip(d.Recorded, 400), clip(d.Replayed, 400))
		return exitUsage
	}
	if d := diff; d != nil {
		src := "the file"
		if firstRepro != "" {
			src = "the first run"
		}
		why := "a determinism bug; please report it with the file"
		if now := versionLine(); j.recordedBy != now {
			why = fmt.Sprintf("the file was written by %s and this is %s: a change to locksim can change traces", j.recordedBy, now)
		}
		fmt.Fprintf(stderr, "locksim: replay: the run diverged from %s at line %d (%s)\n  recorded: %s\n  replayed: %s\n",
			src, d.Line, why, clip(d.Recorded, 400), clip(d.Replayed, 400))
		return exitInternal
	}
	return code
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
