package realredis

import (
	"context"
	"time"

	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
)

// SweepRunner runs a sweep's jobs against real Redis (sweep.Runner): each
// job is Build with TTL, run and judged like 'run --backend real'. Ctx
// stops a running job (its processes and temp dir are removed).
type SweepRunner struct {
	Ctx context.Context
	TTL time.Duration
}

// Run runs one job. A job the real arm cannot run is an error naming why.
func (r SweepRunner) Run(req sweep.Request) (run.Outcome, error) {
	job, err := Build(req.Spec, r.TTL)
	if err != nil {
		return run.Outcome{}, err
	}
	ctx := r.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	jd, err := job.RunAndJudge(ctx, "")
	if err != nil {
		return run.Outcome{}, err
	}
	return jd.Outcome(), nil
}

// Close does nothing: every run cleans up after itself.
func (SweepRunner) Close() error { return nil }
