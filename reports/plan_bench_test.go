package reports

import (
	"sort"
	"testing"
	"time"

	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// BenchmarkReportRow runs one seed of every cell of the default report
// (and of every pause-sweep point) per iteration, in one process on one
// bubble at a time, the way a worker does (sweep.InProcess with a
// run.Reuse), and reports where the time goes: the whole row and the
// five most expensive scenarios and locks (over the cells, the sweep
// points left out), in ms per row. The default report is 200
// such rows (the sweep points 50) on two worker processes:
//
//	GOMAXPROCS=1 GOGC=400 go test -run '^$' -bench ReportRow -benchtime 3x ./reports
func BenchmarkReportRow(b *testing.B) {
	p, err := NewPlan(Options{})
	if err != nil {
		b.Fatal(err)
	}
	var row []job
	for _, r := range p.jobs {
		if r.req.Spec.Seed == 1 {
			row = append(row, r)
		}
	}
	per := map[string]time.Duration{}
	perLock := map[string]time.Duration{}
	var points time.Duration
	ok := sim.InTest(func(t *testing.T) {
		// As a worker runs them: one runner, each run's history memory
		// reused by the next (run.Reuse).
		runner := sweep.InProcess{Bubble: sim.TestBubble(t), Reuse: new(run.Reuse)}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for _, r := range row {
				r.req.Spec.Seed = uint64(i + 1)
				t0 := time.Now()
				if _, err := runner.Run(sweep.Request{Spec: r.req.Spec}); err != nil {
					t.Fatal(err)
				}
				if r.point != nil {
					points += time.Since(t0)
				} else {
					per[r.req.Spec.ScenarioID()] += time.Since(t0)
					perLock[r.req.Spec.Lock] += time.Since(t0)
				}
			}
		}
		b.StopTimer()
	})
	if !ok {
		b.Fatal("the runs failed")
	}
	type kv struct {
		k string
		v time.Duration
	}
	top := func(m map[string]time.Duration, prefix string) {
		var l []kv
		for k, v := range m {
			l = append(l, kv{k, v})
		}
		sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
		for _, x := range l[:min(5, len(l))] {
			b.ReportMetric(float64(x.v.Milliseconds())/float64(b.N), prefix+x.k)
		}
	}
	top(per, "ms/row-")
	top(perLock, "ms/lock-")
	b.ReportMetric(float64(points.Milliseconds())/float64(b.N), "ms/row-pause-sweep")
	b.ReportMetric(float64(len(row)), "runs/row")
}
