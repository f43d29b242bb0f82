package reports

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locksim/locksim/sim"
)

// BenchmarkWarmReport is a report's own time when the result store holds
// every run and chart (the warm report's part that is not runs): the
// plan, the store's answers, the timelines' pictures, the charts and the
// pages, per report of a few cells. -benchtime 3x; it reports
// store-ms/op (planning and answering the runs) and write-ms/op (the
// charts and pages).
//
//	go test -run '^$' -bench WarmReport -benchtime 3x ./reports
func BenchmarkWarmReport(b *testing.B) {
	opt := Options{Scenarios: []string{"clock-jump", "pause-after-check", "failover"}, Locks: []string{"set-nx-cad", "redlock", "fencing"}, Seeds: 2, Fixed: true}
	st, err := OpenStore(b.TempDir(), 0, false)
	if err != nil {
		b.Fatal(err)
	}
	ok := sim.InTest(func(t *testing.T) {
		bubble := sim.TestBubble(t)
		report := func() (run, write float64) {
			p, err := NewPlan(opt)
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			os.Mkdir(filepath.Join(dir, "timelines"), 0o755)
			t0 := time.Now()
			if err := p.Run(context.Background(), bubble, dir, Exec{Workers: 1, Store: st}); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := p.Write(dir); err != nil {
				b.Fatal(err)
			}
			return float64(t1.Sub(t0).Microseconds()) / 1e3, float64(time.Since(t1).Microseconds()) / 1e3
		}
		report() // cold: runs and draws everything into the store
		st.Hits.Store(0)
		st.Misses.Store(0)
		var runMS, writeMS float64
		b.ResetTimer()
		for range b.N {
			r, w := report()
			runMS += r
			writeMS += w
		}
		b.StopTimer()
		if st.Misses.Load() != 0 {
			b.Fatalf("%d runs ran in a warm report", st.Misses.Load())
		}
		b.ReportMetric(runMS/float64(b.N), "store-ms/op")
		b.ReportMetric(writeMS/float64(b.N), "write-ms/op")
	})
	if !ok {
		b.Fatal("the bubble's test failed")
	}
}
