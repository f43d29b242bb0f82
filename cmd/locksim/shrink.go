package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
	} else if err := checkWritable(out); err != nil {
		return nil, usageErrorf("--shrink-out: %v", err)
	}
	return &shrinkJob{out: out, maxRuns: s.runs.v}, nil
}

// checkWritable reports whether a file can be created at path (its
// directory exists and path is not a directory).
func checkWritable(path string) error {
	if st, err := os.Lstat(path); err == nil {
		switch m := st.Mode(); {
		case m.IsDir():
			return fmt.Errorf("%q is a directory", path)
		case m&os.ModeSymlink != 0:
			return fmt.Errorf("%q is a symbolic link: locksim replaces the files it writes, so it writes only to a regular file or a new path", path)
		case m&os.ModeNamedPipe != 0:
			return fmt.Errorf("%q is a FIFO: locksim writes only to a regular file or a new path", path)
		case m&(os.ModeDevice|os.ModeCharDevice) != 0:
			return fmt.Errorf("%q is a device: locksim writes only to a regular file or a new path", path)
		case !m.IsRegular():
			return fmt.Errorf("%q is not a regular file (%v)", path, m.Type())
		case m.Perm()&0o200 == 0:
			return fmt.Errorf("%q is read-only", path)
		}
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot write %q: %v", path, run.UnwrapPathError(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("cannot write %q: %s is not a directory", path, dir)
	}
	return nil
}

// checkOutDir checks a folder locksim will write named files into, before
// the run: it is a directory we can write in, or a new path whose nearest
// existing ancestor is one; the files it will write are writable.
func checkOutDir(dir string, files ...string) error {
	st, err := os.Lstat(dir)
	if err == nil && st.Mode()&os.ModeSymlink != 0 {
		// A link to a directory is a directory to write into.
		target, terr := os.Stat(dir)
		if terr != nil {
			return fmt.Errorf("%q is a symbolic link to nothing (%v)", dir, run.UnwrapPathError(terr))
		}
		if !target.IsDir() {
			return fmt.Errorf("%q is a symbolic link to a file, not a directory", dir)
		}
		st = target
	}
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("%q exists and is not a directory", dir)
	case err == nil:
		for _, f := range files {
			if err := checkWritable(filepath.Join(dir, f)); err != nil {
				return err
			}
		}
		if st.Mode().Perm()&0o200 == 0 {
			return fmt.Errorf("%q is read-only", dir)
		}
		if err := probeDir(dir); err != nil {
			return fmt.Errorf("cannot write in %q: %v", dir, err)
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("cannot write in %q: %v", dir, run.UnwrapPathError(err))
	}
	// A new folder: created by the first write, in its nearest existing
	// ancestor.
	for a := filepath.Dir(filepath.Clean(dir)); ; a = filepath.Dir(a) {
		st, err := os.Stat(a)
		if errors.Is(err, os.ErrNotExist) && a != filepath.Dir(a) {
			continue
		}
		switch {
		case err != nil:
			return fmt.Errorf("cannot create %q: %v", dir, run.UnwrapPathError(err))
		case !st.IsDir():
			return fmt.Errorf("cannot create %q: %s is not a directory", dir, a)
		case st.Mode().Perm()&0o200 == 0:
			return fmt.Errorf("cannot create %q: %s is read-only", dir, a)
		}
		if err := probeDir(a); err != nil {
			return fmt.Errorf("cannot create %q: %v", dir, err)
		}
		return nil
	}
}

// probeDir checks that a file can be created in dir by creating one and
// removing it (what the mode bits do not say: a read-only mount, a
// pseudo file system, a missing permission).
func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".locksim-probe-*")
	if err != nil {
		return run.UnwrapPathError(err)
	}
	f.Close()
	return os.Remove(f.Name())
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
