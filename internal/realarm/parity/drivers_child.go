package parity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/internal/reap"
)

// childRun is what the drivers table keeps of one real run.
type childRun struct {
	Verdict checker.Verdict
	Reason  string
	Repro   string
	Err     string // why the run did not complete ("": it did)
	// The harness's largest stall, and the machine label (stall.go).
	StallMS float64
	Machine string
	Fenced  int // operations the storage refused (its fencing check)
	// Its faults injected and bit, and the clients whose clock was set
	// wrong that the lock never read (run.Outcome's): a cell's
	// untested mark (DriverCell.Untested).
	Injected, Bit, ClockUnreached int
}

// runChild runs job as its own 'exe run --backend real --json' process
// and reads its verdict. A cancelled ctx sends the child SIGTERM (it
// stops its servers and drivers and removes its temp dir), then SIGKILL
// after 30 s.
func runChild(ctx context.Context, exe string, job *realredis.Job, trace string) (*childRun, error) {
	args := []string{"run", "--backend", "real", "--json", "--scenario", job.Spec.Scenario, "--lock", job.Spec.Lock,
		"--seed", fmt.Sprint(job.Spec.Seed), "--ttl", job.TTL.String()}
	if job.Driver != nil {
		args = append(args, "--driver", job.Driver.Path)
	}
	if trace != "" {
		args = append(args, "--trace", trace, "--trace-max-mb", fmt.Sprint(TraceMaxBytes>>20))
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Started through reap: killed with this process, whatever kills it.
	_, runErr := reap.Start(cmd)
	if runErr == nil {
		runErr = cmd.Wait() // a verdict's exit code is not an error here
	}
	var r struct {
		Verdict checker.Verdict `json:"verdict"`
		Reason  string          `json:"verdict_reason"`
		Fenced  int             `json:"fenced_rejections"`
		Faults  struct {
			Injected int `json:"injected"`
			Bit      int `json:"bit"`
		} `json:"faults"`
		ClockUnreached int `json:"clock_unreached"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.Verdict == "" {
		return nil, fmt.Errorf("%s %s: no verdict (%v): %s", exe, strings.Join(args, " "), runErr, tail(stderr.String(), 600))
	}
	c := &childRun{Verdict: r.Verdict, Reason: r.Reason, Repro: job.Repro(), Fenced: r.Fenced,
		Injected: r.Faults.Injected, Bit: r.Faults.Bit, ClockUnreached: r.ClockUnreached}
	c.StallMS, c.Machine = stallOf(stdout.Bytes())
	if i := strings.Index(stderr.String(), "run incomplete"); i >= 0 {
		c.Err = tail(stderr.String()[i:], 600)
	}
	return c, nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
