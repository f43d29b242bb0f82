package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/reports/charts"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// Parallel runs. Several synctest bubbles may run at once in one process
// (each worker goroutine calls the host's Bubble; tests do this), and the
// results are the same as run one by one. But a world is a chain of
// goroutine hand-offs of a few microseconds each, and Go's scheduler keeps
// such chains from different bubbles on one P much of the time: measured
// on 2 cores, two in-process workers ran 1.0–1.6× as fast as one (redlock:
// 1.0×). So when the CLI runs sweep or report with more than one worker,
// each worker is a child process ("locksim worker", hidden) that hosts its
// own bubble through sim.HostMain and runs the jobs the parent sends it
// over a pipe, one JSON line per job each way; two children on 2 cores run
// 2.0× as fast as one. The parent keeps the ordering, the files and the
// progress bar. Tests (and -j 1) run in-process.

// subprocessWorkers is set by main: only the real CLI can start copies of
// itself (a test binary is not locksim).
var subprocessWorkers = false

// outcome is what sweeps and reports keep of one judged run.
type outcome struct {
	Verdict             checker.Verdict `json:"verdict"`
	Claim               string          `json:"claim,omitempty"`
	LeaseOverlaps       int             `json:"lease_overlaps"`
	ResourceViolations  int             `json:"resource_violations"`
	Porcupine           string          `json:"porcupine"`
	OwnershipViolations int             `json:"ownership_violations"`
	StaleSections       int             `json:"stale_sections"`
	StaleAccepted       int             `json:"stale_accepted"`
	FencedRejections    int             `json:"fenced_rejections"`
	Starved             int             `json:"starved"` // clients that made no progress after the heal (fairness)
	TraceSHA256         string          `json:"trace_sha256,omitempty"`
	// PauseShort is set when a targeted client pause of the schedule did
	// not run in full inside the safety phase: its client never reached
	// the pause point in time, or the heal (which ends every fault) cut it
	// short. Such a run did not test the pause it was asked to.
	PauseShort bool `json:"pause_short,omitempty"`
	// SimError is set when the simulator could not finish the run (an
	// event budget): the verdict is then unknown.
	SimError string `json:"sim_error,omitempty"`
}

// outcomeOf summarizes a judged run (nil: none).
func outcomeOf(j *run.Judged) outcome {
	if j == nil {
		return outcome{Verdict: checker.VerdictUnknown, Porcupine: "skipped"}
	}
	c := j.Check
	o := outcome{Verdict: c.Verdict, Claim: c.Claim, LeaseOverlaps: c.LeaseOverlaps, ResourceViolations: c.ResourceViolations,
		Porcupine: c.Porcupine, OwnershipViolations: c.OwnershipViolations,
		StaleSections: c.Stale.Sections, StaleAccepted: c.Stale.Accepted, FencedRejections: c.Stale.FencedRejections, Starved: len(c.Liveness.Starved),
		TraceSHA256: j.Result.TraceSHA256,
		PauseShort:  pauseShort(j.History)}
	if j.Err != nil {
		o.SimError = firstLine(j.Err.Error())
	}
	return o
}

// pauseShort reports whether some targeted client pause of the schedule
// did not both begin and end inside the safety phase (see
// outcome.PauseShort).
func pauseShort(h checker.History) bool {
	fired := map[int]int64{} // fault number → when its pause began
	for _, ev := range h.Events {
		if ev.Kind == "pause" && ev.Fault > 0 {
			if _, seen := fired[ev.Fault]; !seen {
				fired[ev.Fault] = ev.T
			}
		}
	}
	safetyEnd := h.Heal
	for i, f := range h.Faults {
		if f.Kind != faults.ClientPause || f.At == "" || int64(f.Start) >= safetyEnd {
			continue
		}
		t, ok := fired[i+1]
		if !ok || t+int64(f.Duration) > safetyEnd {
			return true
		}
	}
	return false
}

// runner runs jobs one at a time for one worker.
type runner interface {
	run(rs runSpec) (outcome, error)
	close() error
}

// inProcess runs jobs in bubbles of this process.
type inProcess struct{ b sim.Bubble }

func (r inProcess) run(rs runSpec) (outcome, error) {
	j, err := runJudged(r.b, rs.spec)
	if err != nil {
		return outcome{}, err
	}
	o := outcomeOf(j)
	if t := rs.timeline; t != nil && j != nil && j.Check.First != nil {
		title := t.Title
		if v := j.Check.First; v != nil {
			title += fmt.Sprintf(": %s at t=%.3fs (%s)", v.Kind, float64(v.T)/1e9, strings.Join(v.Clients, ", "))
		}
		fig, err := charts.Timeline(j.History, j.Check, charts.TimelineOptions{Title: title, Caption: t.Caption})
		if err != nil {
			return o, err
		}
		if err := charts.Save(fig, t.Path); err != nil {
			return o, err
		}
	}
	return o, nil
}

// timelineRequest asks a runner to draw the run's first violation.
type timelineRequest struct {
	Path    string   `json:"path"`  // PNG or SVG, by extension
	Title   string   `json:"title"` // the violation's kind, time and clients are appended
	Caption []string `json:"caption,omitempty"`
}

func (inProcess) close() error { return nil }

// newRunners makes n runners: child processes when the CLI may start them
// and n > 1, else in-process ones on bubble b.
func newRunners(n int, b sim.Bubble, stderr io.Writer) ([]runner, error) {
	rs := make([]runner, n)
	if !subprocessWorkers || n < 2 || os.Getenv("LOCKSIM_INPROCESS") != "" {
		for i := range rs {
			rs[i] = inProcess{b}
		}
		return rs, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find the locksim binary to start workers: %v", err)
	}
	for i := range rs {
		c, err := startChild(exe, stderr)
		if err != nil {
			closeRunners(rs[:i])
			return nil, err
		}
		rs[i] = c
	}
	return rs, nil
}

func closeRunners(rs []runner) error {
	var first error
	for _, r := range rs {
		if r == nil {
			continue
		}
		if err := r.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// workRequest is one job sent to a child.
type workRequest struct {
	Spec     run.Spec         `json:"spec"`
	Timeline *timelineRequest `json:"timeline,omitempty"`
}

// workReply is a child's answer: the outcome, or Err (an internal error).
type workReply struct {
	Outcome outcome `json:"outcome"`
	Err     string  `json:"err,omitempty"`
}

// child is a "locksim worker" process.
type child struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	enc  *json.Encoder
	once sync.Once
	err  error
}

func startChild(exe string, stderr io.Writer) (*child, error) {
	cmd := exec.Command(exe, "worker")
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start a worker process: %v", err)
	}
	return &child{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), enc: json.NewEncoder(in)}, nil
}

func (c *child) run(rs runSpec) (outcome, error) {
	req := workRequest{Spec: rs.spec, Timeline: rs.timeline}
	if err := c.enc.Encode(req); err != nil {
		return outcome{}, fmt.Errorf("internal error: worker process %d: %v", c.cmd.Process.Pid, err)
	}
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		return outcome{}, fmt.Errorf("internal error: worker process %d died (%v); its stderr is above", c.cmd.Process.Pid, err)
	}
	var rep workReply
	if err := json.Unmarshal(line, &rep); err != nil {
		return outcome{}, fmt.Errorf("internal error: worker process %d: bad reply %q", c.cmd.Process.Pid, firstLine(string(line)))
	}
	if rep.Err != "" {
		return outcome{}, errors.New(rep.Err)
	}
	return rep.Outcome, nil
}

func (c *child) close() error {
	c.once.Do(func() {
		c.in.Close()
		c.err = c.cmd.Wait()
	})
	return c.err
}

// newWorkerCmd is the hidden command a parent starts: it reads one JSON
// request per line on stdin and answers one JSON line per request on
// stdout, until stdin closes. It ignores SIGINT and SIGTERM (a Ctrl-C
// reaches the whole process group): the parent finishes the running jobs
// and then closes the pipe.
func newWorkerCmd(stdin io.Reader, stdout io.Writer, h host, code *int) *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Short:  "Run jobs for a parent sweep or report (internal)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(*cobra.Command, []string) error {
			*code = h(func(b sim.Bubble) int { return serveWorker(stdin, stdout, b) })
			return nil
		},
	}
}

// workerGCPercent is a worker's GOGC (unless the environment sets one): a
// world allocates a lot and lives briefly, and a worker's heap is small,
// so collecting less often saves about a tenth of the CPU (measured: the
// report's runs took 11% less CPU at 400 than at 100).
const workerGCPercent = 400

// A worker runs one world at a time, a chain of goroutine hand-offs that
// never has two goroutines runnable at once: with more than one P, Go's
// scheduler wakes idle OS threads to steal work that is not there
// (measured: 150,000 context switches against 700 for the same jobs), so a
// worker keeps one P unless the environment sets GOMAXPROCS. Measured on
// the report's cells (2 seeds of each): 24% less CPU than with 2 Ps.
func serveWorker(stdin io.Reader, stdout io.Writer, b sim.Bubble) int {
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(workerGCPercent)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	in := bufio.NewReaderSize(stdin, 64<<10)
	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return exitSafe // the parent closed the pipe
		}
		var req workRequest
		var rep workReply
		if jerr := json.Unmarshal(line, &req); jerr != nil {
			rep.Err = fmt.Sprintf("internal error: worker: bad request: %v", jerr)
		} else {
			o, rerr := inProcess{b}.run(runSpec{spec: req.Spec, timeline: req.Timeline})
			rep.Outcome = o
			if rerr != nil {
				fmt.Fprintf(os.Stderr, "locksim worker: %v\n", rerr)
				rep.Err = firstLine(rerr.Error())
			}
		}
		if err := enc.Encode(rep); err != nil {
			return exitInternal
		}
		if err := out.Flush(); err != nil {
			return exitInternal
		}
	}
}
