package sweep

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
	"time"

	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/internal/reap"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// Parallel runs. Several synctest bubbles may run at once in one process
// (each worker goroutine calls its Bubble; tests do this), and the results
// are the same as run one by one. But a world is a chain of goroutine
// hand-offs of a few microseconds each, and Go's scheduler keeps such
// chains from different bubbles on one P much of the time: measured on 2
// cores, two in-process workers ran 1.0–1.6× as fast as one (redlock:
// 1.0×). So the CLI runs sweeps and reports with more than one worker in
// child processes (Child; "locksim worker", which calls ServeWorker), each
// hosting its own bubble and running the jobs the parent sends it over a
// pipe, one JSON line per job each way; two children on 2 cores run 2.0×
// as fast as one. The parent keeps the ordering, the files and the
// progress.

// Request, TimelineRequest and Runner are run's (run/request.go), named
// here for the sweep's own code.
type (
	Request         = run.Request
	TimelineRequest = run.TimelineRequest
	Runner          = run.Runner
)

// InProcess runs jobs in bubbles of this process.
type InProcess struct {
	Bubble sim.Bubble
	// Reuse, if set, carries each run's history memory into the next
	// (run.Reuse): the runner serves one goroutine.
	Reuse *run.Reuse
}

// Judge builds, runs and judges one job in bubble b. A run the simulator
// could not finish (an event budget hit) is a judged run, not an error; a
// panic or an invalid spec is an error.
func Judge(b sim.Bubble, spec run.Spec) (*run.Judged, error) { return judge(b, spec, nil) }

// judge is Judge on the memory r lends (nil: none).
func judge(b sim.Bubble, spec run.Spec, r *run.Reuse) (j *run.Judged, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: panic in %s/%s seed %d: %v\n%s", spec.ScenarioID(), spec.Lock, spec.Seed, p, debug.Stack())
		}
	}()
	job, err := spec.Build()
	if err != nil {
		return nil, err
	}
	return job.RunReusing(b, r)
}

// Run runs and judges one job, and draws it if asked.
func (r InProcess) Run(req Request) (Outcome, error) {
	cpu0 := CPUTime()
	j, err := judge(r.Bubble, req.Spec, r.Reuse)
	cpu := CPUTime() - cpu0
	if err != nil {
		return Outcome{}, err
	}
	// The outcome holds no part of the histories (numbers and strings):
	// they go back to the runner's memory once the timeline is drawn.
	defer r.Reuse.Recycle(j)
	o := OutcomeOf(j)
	o.CPU = cpu
	if t := req.Timeline; t != nil && j != nil && j.Check.First != nil {
		o.Story = run.Explain(j)
		o.Minimal = run.Minimal(j)
		v := j.Check.First
		title := t.Title + fmt.Sprintf(": %s at t=%.3fs (%s)", v.Kind, float64(v.T)/1e9, strings.Join(v.Clients, ", "))
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

// Close does nothing.
func (InProcess) Close() error { return nil }

// NewRunners makes n runners: child processes running the command argv
// (the program and its arguments; it must serve ServeWorker's protocol)
// when argv is not empty and n > 1, else in-process ones on bubble b. A
// child's stderr goes to stderr.
func NewRunners(n int, b sim.Bubble, argv []string, stderr io.Writer) ([]Runner, error) {
	rs := make([]Runner, n)
	if len(argv) == 0 || n < 2 {
		for i := range rs {
			rs[i] = InProcess{Bubble: b, Reuse: new(run.Reuse)}
		}
		return rs, nil
	}
	for i := range rs {
		c, err := StartChild(argv, stderr)
		if err != nil {
			CloseRunners(rs[:i])
			return nil, err
		}
		rs[i] = c
	}
	return rs, nil
}

// CloseRunners closes every runner and returns the first error.
func CloseRunners(rs []Runner) error {
	var first error
	for _, r := range rs {
		if r == nil {
			continue
		}
		if err := r.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// reply is a child's answer: the outcome, or Err (an internal error).
type reply struct {
	Outcome Outcome `json:"outcome"`
	Err     string  `json:"err,omitempty"`
	// CPUNS is Outcome.CPU, which the outcome's own JSON leaves out.
	CPUNS int64 `json:"cpu_ns,omitempty"`
}

// Child is a worker process.
type Child struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	enc  *json.Encoder
	once sync.Once
	err  error
}

// StartChild starts argv as a worker process.
func StartChild(argv []string, stderr io.Writer) (*Child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if _, err := reap.Start(cmd); err != nil { // killed with this process, whatever kills it
		return nil, fmt.Errorf("cannot start a worker process: %v", err)
	}
	return &Child{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), enc: json.NewEncoder(in)}, nil
}

// Run sends the job to the child and waits for its outcome.
func (c *Child) Run(req Request) (Outcome, error) {
	if err := c.enc.Encode(req); err != nil {
		return Outcome{}, fmt.Errorf("internal error: worker process %d: %v", c.cmd.Process.Pid, err)
	}
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		return Outcome{}, fmt.Errorf("internal error: worker process %d died (%v); its stderr is above", c.cmd.Process.Pid, err)
	}
	var rep reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return Outcome{}, fmt.Errorf("internal error: worker process %d: bad reply %q", c.cmd.Process.Pid, run.FirstLine(string(line)))
	}
	if rep.Err != "" {
		return Outcome{}, errors.New(rep.Err)
	}
	rep.Outcome.CPU = time.Duration(rep.CPUNS)
	return rep.Outcome, nil
}

// Close ends the child (closing its input) and waits for it.
func (c *Child) Close() error {
	c.once.Do(func() {
		c.in.Close()
		c.err = c.cmd.Wait()
	})
	return c.err
}

// workerGCPercent is a worker's GOGC (unless the environment sets one): a
// world allocates a lot and lives briefly, and a worker's heap is small,
// so collecting less often saves about a tenth of the CPU (measured: the
// report's runs took 11% less CPU at 400 than at 100).
const workerGCPercent = 400

// WorkerRuntime sets this process's Go runtime as a worker's (see
// ServeWorker): one P and GOGC workerGCPercent, unless the environment
// sets GOMAXPROCS or GOGC. It returns the GOMAXPROCS and GOGC in effect
// (GOGC -1: off).
func WorkerRuntime() (procs, gcPercent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(workerGCPercent)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	gcPercent = debug.SetGCPercent(100)
	debug.SetGCPercent(gcPercent)
	return runtime.GOMAXPROCS(0), gcPercent
}

// ServeWorker is a worker process's loop: it reads one JSON Request per
// line on stdin, runs it in bubble b, and answers one JSON line per
// request on stdout, until stdin closes (then it returns nil). It ignores
// SIGINT and SIGTERM (a Ctrl-C reaches the whole process group): the
// parent finishes the running jobs and then closes the pipe.
//
// A worker runs one world at a time, a chain of goroutine hand-offs that
// never has two goroutines runnable at once: with more than one P, Go's
// scheduler wakes idle OS threads to steal work that is not there
// (measured: 150,000 context switches against 700 for the same jobs), so a
// worker keeps one P unless the environment sets GOMAXPROCS. Measured on
// the report's cells (2 seeds of each): 24% less CPU than with 2 Ps.
func ServeWorker(stdin io.Reader, stdout io.Writer, b sim.Bubble) error {
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	WorkerRuntime()
	r := InProcess{Bubble: b, Reuse: new(run.Reuse)}
	in := bufio.NewReaderSize(stdin, 64<<10)
	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return nil // the parent closed the pipe
		}
		var req Request
		var rep reply
		if jerr := json.Unmarshal(line, &req); jerr != nil {
			rep.Err = fmt.Sprintf("internal error: worker: bad request: %v", jerr)
		} else {
			o, rerr := r.Run(req)
			rep.Outcome, rep.CPUNS = o, int64(o.CPU)
			if rerr != nil {
				fmt.Fprintf(os.Stderr, "locksim worker: %v\n", rerr)
				rep.Err = run.FirstLine(rerr.Error())
			}
		}
		if err := enc.Encode(rep); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
}
