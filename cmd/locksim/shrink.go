package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// run's --faults, --shrink, --shrink-out and --shrink-runs.

// maxFaultsFile bounds the size of a --faults file.
const maxFaultsFile = 16 << 20

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
	fl.Var(&s.runs, "shrink-runs", fmt.Sprintf("at most `N` runs for --shrink, 1..100000 (default %d; at the bound the smallest failing run so far is reported)", scenarios.DefaultShrinkRuns))
}

// apply validates the flags and applies --faults to cfg, before any bubble
// is hosted; it returns the shrink step (nil without --shrink) and what the
// repro line needs after its --clients. Errors are input errors (exit 64).
func (s *shrinkFlags) apply(cmd *cobra.Command, f *runFlags, cfg *sim.Config) (*shrinkJob, string, error) {
	fl := cmd.Flags()
	for _, name := range []string{"shrink-out", "shrink-runs"} {
		if fl.Changed(name) && !s.shrink {
			return nil, "", usageErrorf("--%s: needs --shrink", name)
		}
	}
	suffix := ""
	if s.faultsFile != "" {
		fs, err := readFaults(s.faultsFile)
		if err != nil {
			return nil, "", usageErrorf("--faults: %v", err)
		}
		cfg.Faults = fs
		if err := cfg.Validate(); err != nil {
			return nil, "", usageErrorf("--faults: %s: %v", s.faultsFile, err)
		}
		suffix = " --faults " + shellQuote(s.faultsFile)
	}
	if !s.shrink {
		return nil, suffix, nil
	}
	out := s.out
	if out == "" {
		out = fmt.Sprintf("shrunk-%s-%d.faults.json", f.lock, f.seed.v)
		if f.cexDir != "" {
			out = filepath.Join(f.cexDir, out)
		}
	} else if err := checkWritable(out); err != nil {
		return nil, "", usageErrorf("--shrink-out: %v", err)
	}
	base := fmt.Sprintf("locksim run --scenario %s --lock %s --seed %d", shellQuote(f.scenario), f.lock, f.seed.v)
	for _, name := range []string{"nodes", "duration", "liveness"} {
		if flag := fl.Lookup(name); flag.Changed {
			base += fmt.Sprintf(" --%s %s", name, flag.Value)
		}
	}
	return &shrinkJob{out: out, maxRuns: s.runs.v, baseRepro: base}, suffix, nil
}

// readFaults reads a JSON list of faults (unknown fields are errors).
func readFaults(path string) ([]faults.Fault, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %q: %v", path, unwrapPathError(err))
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%q is a directory", path)
	}
	if st.Size() > maxFaultsFile {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", path, st.Size(), maxFaultsFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %q: %v", path, unwrapPathError(err))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var fs []faults.Fault
	if err := dec.Decode(&fs); err != nil {
		return nil, fmt.Errorf("%s: not a JSON list of faults: %v", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the list of faults", path)
	}
	if len(fs) > 1000 {
		return nil, fmt.Errorf("%s: %d faults, at most 1000", path, len(fs))
	}
	return fs, nil
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
		return fmt.Errorf("cannot write %q: %v", path, unwrapPathError(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("cannot write %q: %s is not a directory", path, dir)
	}
	return nil
}

// checkOutDir checks a folder locksim will write named files into: it is
// a directory or a new path, and the files it will write are writable.
func checkOutDir(dir string, files ...string) error {
	if st, err := os.Lstat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%q exists and is not a directory", dir)
		}
		for _, f := range files {
			if err := checkWritable(filepath.Join(dir, f)); err != nil {
				return err
			}
		}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=+,@%-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shrinkJob is a validated --shrink.
type shrinkJob struct {
	out       string // the --faults file to write
	maxRuns   int    // 0: the default
	baseRepro string // the repro without --clients and --faults
}

// shrinkReport is counterexample.shrink in --json.
type shrinkReport struct {
	Runs        int            `json:"runs"`
	Exhausted   bool           `json:"exhausted"` // the run bound was reached: the best so far, maybe not minimal
	Kind        string         `json:"kind"`      // the violation kind kept
	FromFaults  int            `json:"from_faults"`
	FromClients int            `json:"from_clients"`
	FaultsFile  string         `json:"faults_file"`
	Schedule    []faults.Fault `json:"schedule"`
	Reason      string         `json:"reason"` // the shrunk run's first verdict reason
}

// run shrinks j's unsafe run (r), writes the schedule file, and rewrites
// r's counterexample to the shrunk run: faults and clients are the shrunk
// numbers, repro reproduces the shrunk run. It returns an exit code, 0 on
// success.
func (s *shrinkJob) run(b sim.Bubble, j *runJob, r *runReport, stderr io.Writer) int {
	ce := r.Counterexample
	kind := ""
	switch {
	case ce.Violation != nil:
		kind = ce.Violation.Kind
	case r.check != nil && r.check.Porcupine == checker.LinIllegal:
		kind = "linearizability"
	default:
		fmt.Fprintf(stderr, "locksim: --shrink: the verdict names no violation to keep\n")
		return exitInternal
	}
	res, err := scenarios.Shrink(b, j.cfg, j.scenario, j.info, kind, scenarios.ShrinkOptions{
		MaxRuns: s.maxRuns, Check: checker.Options{SkipPorcupine: j.skipPorcupine}, Judging: &j.judging})
	if err != nil {
		fmt.Fprintf(stderr, "locksim: --shrink: %v\n", err)
		return exitInternal
	}
	if err := writeFaults(s.out, res.Faults); err != nil {
		fmt.Fprintf(stderr, "locksim: --shrink-out: %v\n", err)
		return exitInternal
	}
	schedule := res.Faults
	if schedule == nil {
		schedule = []faults.Fault{}
	}
	reason := ""
	if len(res.Check.Reasons) > 0 {
		reason = res.Check.Reasons[0]
	}
	ce.Faults, ce.Clients = len(res.Faults), res.Clients
	ce.Repro = fmt.Sprintf("%s --clients %d --faults %s", s.baseRepro, res.Clients, shellQuote(s.out))
	ce.Shrink = &shrinkReport{Runs: res.Runs, Exhausted: res.Exhausted, Kind: kind, FromFaults: res.FromFaults,
		FromClients: res.FromClients, FaultsFile: s.out, Schedule: schedule, Reason: reason}
	return 0
}

// writeFaults writes a --faults file: a JSON list, one fault per line.
func writeFaults(path string, fs []faults.Fault) error {
	var b bytes.Buffer
	b.WriteString("[")
	for i, f := range fs {
		line, err := json.Marshal(f)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	b.WriteString("\n]\n")
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return writeFileAtomic(path, b.Bytes())
}

// printShrink writes the shrink's lines of the human summary.
func printShrink(w io.Writer, ce *counterexample) {
	s := ce.Shrink
	if s == nil {
		return
	}
	bound := ""
	if s.Exhausted {
		bound = ", the bound: smallest so far"
	}
	fmt.Fprintf(w, "%-16s%d faults, %d clients, still %s (from %d faults, %d clients; %d runs%s)\n", "shrunk:",
		ce.Faults, ce.Clients, s.Kind, s.FromFaults, s.FromClients, s.Runs, bound)
	for _, f := range s.Schedule {
		fmt.Fprintf(w, "%-16s%s\n", "", f)
	}
	fmt.Fprintf(w, "%-16s%s\n", "shrunk faults:", s.FaultsFile)
}
