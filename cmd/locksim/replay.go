package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// A trace file written by 'run --trace' starts with one header line that
// says which run it is (runHeader); the event lines follow. The trace's
// SHA-256 is that of the event lines alone, so the hash a sweep or report
// records for the same seed is the same.

// runHeader is the first line of a trace file: everything needed to run
// the same world again.
type runHeader struct {
	Locksim    string         `json:"locksim"`  // the version that wrote it
	Scenario   string         `json:"scenario"` // a built-in id, or a scenario file's absolute path
	Lock       string         `json:"lock"`
	Seed       uint64         `json:"seed"`
	Clients    int            `json:"clients"`
	Nodes      int            `json:"nodes"`
	DurationNS int64          `json:"duration_ns"`
	LivenessNS int64          `json:"liveness_ns"`
	Faults     []faults.Fault `json:"faults"` // the schedule that ran (the seed's, or --faults)
	// ScenarioSHA256 is the scenario file's hash when Scenario is a file:
	// replay refuses a file edited since the recording.
	ScenarioSHA256 string `json:"scenario_sha256,omitempty"`
}

type headerLine struct {
	Run *runHeader `json:"locksim_run"`
}

// header describes j's run; scenario is what --scenario named.
func (j *runJob) header(scenario string) runHeader {
	if _, err := scenarios.Get(scenario); err != nil {
		if abs, err := filepath.Abs(scenario); err == nil {
			scenario = abs
		}
	}
	fs := j.cfg.Faults
	if fs == nil {
		fs = []faults.Fault{}
	}
	return runHeader{Locksim: versionLine(), Scenario: scenario, Lock: j.info.ID, Seed: j.cfg.Seed, Clients: j.cfg.Clients, Nodes: len(j.cfg.Nodes),
		DurationNS: int64(j.cfg.Duration), LivenessNS: int64(j.cfg.Liveness), Faults: fs, ScenarioSHA256: scenarioHash(scenario)}
}

// scenarioHash is the SHA-256 of a scenario file ("" for a built-in id or
// an unreadable path).
func scenarioHash(scenario string) string {
	if _, err := scenarios.Get(scenario); err == nil {
		return ""
	}
	data, err := os.ReadFile(scenario)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func writeHeader(w io.Writer, h runHeader) error {
	b, err := json.Marshal(headerLine{Run: &h})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readHeader reads a trace file's header line; r is left at the first event.
func readHeader(path string, r *bufio.Reader) (runHeader, error) {
	line, err := r.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		if err == io.EOF {
			return runHeader{}, fmt.Errorf("%s: empty file (not a trace written by 'locksim run --trace')", path)
		}
		return runHeader{}, fmt.Errorf("%s: %v", path, unwrapPathError(err))
	}
	var hl headerLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hl); err != nil || hl.Run == nil {
		return runHeader{}, fmt.Errorf("%s: line 1 is not a locksim run header (is this a trace written by 'locksim run --trace'?)", path)
	}
	return *hl.Run, nil
}

// jobFromHeader builds the run a header describes.
func jobFromHeader(path string, h runHeader) (*runJob, error) {
	info, err := locks.Get(h.Lock)
	if err != nil {
		return nil, fmt.Errorf("%s: the header's lock %q is not in this locksim's catalogue", path, h.Lock)
	}
	if info.Unavailable != "" {
		return nil, fmt.Errorf("%s: the header's lock %s is %s", path, h.Lock, info.Unavailable)
	}
	sc, err := scenarios.Resolve(h.Scenario)
	if err != nil {
		return nil, fmt.Errorf("%s: the header's scenario %q: %v", path, h.Scenario, err)
	}
	if h.ScenarioSHA256 != "" {
		if now := scenarioHash(h.Scenario); now != h.ScenarioSHA256 {
			return nil, fmt.Errorf("%s: the scenario file %s changed since the recording (sha256 %.12s… then, %.12s… now): replay needs the file as it was", path, h.Scenario, h.ScenarioSHA256, now)
		}
	}
	p := scenarios.Params{Clients: h.Clients, Nodes: h.Nodes, Duration: time.Duration(h.DurationNS), Liveness: time.Duration(h.LivenessNS)}
	cfg, err := sc.Build(info, h.Seed, p)
	if err == nil {
		cfg.Faults = h.Faults
		err = cfg.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the header describes no valid run: %s", path, configError(err))
	}
	repro := fmt.Sprintf("locksim replay %s", shellQuote(path))
	return &runJob{scenario: sc.ID, info: info, cfg: cfg, judging: sc.Judging(info), repro: repro}, nil
}

// traceComparer is the trace writer of a replay: it compares every event
// line the replayed run writes with the recorded file's, and keeps the
// first difference.
type traceComparer struct {
	file  string // the recording's path ("" : replay's own first run)
	rec   *bufio.Reader
	cur   []byte
	lines int
	diff  *traceDiff
}

type traceDiff struct {
	Line     int    `json:"line"` // in the file (the header is line 1)
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	// Truncated: the recording ends (or is cut mid-line) here while the
	// run went on: a damaged file, not a divergence.
	Truncated bool `json:"truncated,omitempty"`
}

func (c *traceComparer) Write(p []byte) (int, error) {
	c.cur = append(c.cur, p...)
	for {
		i := bytes.IndexByte(c.cur, '\n')
		if i < 0 {
			break
		}
		line := c.cur[:i+1]
		c.lines++
		if c.diff == nil {
			rec, err := c.rec.ReadBytes('\n')
			if !bytes.Equal(rec, line) {
				c.diff = &traceDiff{Line: c.lines + 1, Recorded: strings.TrimSuffix(string(rec), "\n"), Replayed: strings.TrimSuffix(string(line), "\n")}
				if err != nil && len(rec) == 0 {
					c.diff.Recorded = "(end of file)"
					c.diff.Truncated = true
				} else if err != nil && !bytes.HasSuffix(rec, []byte("\n")) && bytes.HasPrefix(line, rec) {
					c.diff.Recorded += " (cut mid-line)"
					c.diff.Truncated = true
				}
			}
		}
		c.cur = c.cur[i+1:]
	}
	return len(p), nil
}

// finish reports a recorded file longer than the replay.
func (c *traceComparer) finish() {
	if c.diff != nil {
		return
	}
	if rec, _ := c.rec.ReadBytes('\n'); len(rec) > 0 {
		c.diff = &traceDiff{Line: c.lines + 2, Recorded: strings.TrimSuffix(string(rec), "\n"), Replayed: "(end of the replayed trace)"}
	}
}

// replayReport is the --json object's "replay" member.
type replayReport struct {
	File      string     `json:"file,omitempty"` // empty: compared with a first run of the same seed
	Identical bool       `json:"identical"`
	Events    int        `json:"events"` // event lines compared
	Diff      *traceDiff `json:"first_difference,omitempty"`
}

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
A damaged file is an input error (exit 64), not a divergence: a recording
that ends before the run did is "truncated at line N", and a scenario file
edited since the recording (its hash is in the header) is named.

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
					}
					return replayFile(b, path, f, stdout, stderr, j.repro)
				})
				return nil
			}
			file, err := os.Open(path)
			if err != nil {
				return usageErrorf("replay: cannot read %q: %v", path, unwrapPathError(err))
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
	file, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "locksim: replay: cannot read %q: %v\n", path, unwrapPathError(err))
		return exitUsage
	}
	defer file.Close()
	rec := bufio.NewReaderSize(file, 1<<20)
	hdr, err := readHeader(path, rec)
	if err == nil {
		var j *runJob
		if j, err = jobFromHeader(path, hdr); err == nil {
			j.recordedBy = hdr.Locksim
			return replayJob(b, j, path, rec, f, stdout, stderr, firstRepro)
		}
	}
	fmt.Fprintf(stderr, "locksim: replay: %v\n", err)
	return exitUsage
}

func replayJob(b sim.Bubble, j *runJob, path string, rec *bufio.Reader, f *replayFlags, stdout, stderr io.Writer, firstRepro string) int {
	cmp := &traceComparer{rec: rec, file: path}
	if firstRepro != "" {
		cmp.file = ""
		j.repro = firstRepro
	}
	j.cfg.Trace, j.replay = cmp, cmp
	j.json, j.cexDir = f.json, f.cexDir
	code := j.run(b, stdout, stderr)
	if code == exitInternal {
		return code
	}
	if d := cmp.diff; d != nil && d.Truncated && firstRepro == "" {
		fmt.Fprintf(stderr, "locksim: replay: %s is truncated at line %d: it ends before the run did (a complete trace ends with the world's stop event); the lines before it matched\n", path, d.Line)
		return exitUsage
	}
	if d := cmp.diff; d != nil {
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
