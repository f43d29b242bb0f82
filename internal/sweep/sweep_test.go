package sweep_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksim/locksim/internal/sweep"
)

func TestParseParam(t *testing.T) {
	cases := []struct {
		in   string
		name string
		vals []float64
	}{
		{"pause=0:2:5", "pause", []float64{0, 0.5, 1, 1.5, 2}},
		{"pause=0:1:11", "pause", []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}},
		{"duration=500ms:2s:4", "duration", []float64{0.5, 1, 1.5, 2}},
		{"duration=10:30:3", "duration", []float64{10, 20, 30}},
		{"clients=2,5,10", "clients", []float64{2, 5, 10}},
		{"repl-lag=0.05", "repl-lag", []float64{0.05}},
		{"nodes=3:3:1", "nodes", []float64{3}},
	}
	for _, c := range cases {
		name, vals, err := sweep.ParseParam(c.in)
		if err != nil || name != c.name || fmt.Sprint(vals) != fmt.Sprint(c.vals) {
			t.Errorf("sweep.ParseParam(%q) = %q, %v, %v; want %q, %v", c.in, name, vals, err, c.name, c.vals)
		}
	}
	// A list is bounded like a range: more values than MaxParamSteps are
	// refused (1,500 were accepted).
	var list []string
	for i := 0; i <= sweep.MaxParamSteps; i++ {
		list = append(list, fmt.Sprint(i+1))
	}
	if _, _, err := sweep.ParseParam("clients=" + strings.Join(list, ",")); err == nil || !strings.Contains(err.Error(), "at most 1000") {
		t.Errorf("a list of %d values: %v, want refused", len(list), err)
	}
}

// TestRunOrdered: results come out in index order whatever the finishing
// order; a cancelled pool emits a prefix of whole results; an error stops
// it.
func TestRunOrdered(t *testing.T) {
	var got []int
	n, err := sweep.RunOrdered(context.Background(), 4, 4, 50, func(w, i int) (int, error) {
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		return i * i, nil
	}, func(i, r int) error {
		if r != i*i {
			t.Errorf("result %d for %d", r, i)
		}
		got = append(got, i)
		return nil
	})
	if err != nil || n != 50 {
		t.Fatalf("n %d, err %v", n, err)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("emitted out of order: %v", got)
		}
	}
	// Job 9 cancels; later jobs wait for it, so at most the 3 workers'
	// jobs and the one the feeder was offering run after it.
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int32
	n, err = sweep.RunOrdered(ctx, 3, 3, 100, func(w, i int) (int, error) {
		started.Add(1)
		switch {
		case i == 9:
			cancel()
		case i > 9:
			<-ctx.Done()
		}
		return i, nil
	}, func(i, r int) error { return nil })
	if err != nil || n < 10 || n > 13 || int(started.Load()) != n {
		t.Errorf("cancelled: emitted %d, started %d, err %v", n, started.Load(), err)
	}
	boom := errors.New("boom")
	n, err = sweep.RunOrdered(context.Background(), 2, 2, 100, func(w, i int) (int, error) {
		if i == 20 {
			return 0, boom
		}
		return i, nil
	}, func(i, r int) error { return nil })
	if !errors.Is(err, boom) || n != 20 {
		t.Errorf("error: emitted %d, err %v", n, err)
	}
}

// TestRunOrderedBoundsItsBuffer: while job 0 is slow, the others finish
// and wait for it; at most window jobs are ever started and not emitted,
// so the reorder buffer stays bounded however many jobs there are.
func TestRunOrderedBoundsItsBuffer(t *testing.T) {
	const k, window, n = 3, 6, 200
	var mu sync.Mutex
	started, emitted, worst := 0, 0, 0
	// Job 0 waits until the pool has started a full window of jobs (the
	// others run ahead of it meanwhile); an unbounded pool would start
	// more before job 0 is emitted.
	release := make(chan struct{})
	done, err := sweep.RunOrdered(context.Background(), k, window, n, func(w, i int) (int, error) {
		mu.Lock()
		started++
		if d := started - emitted; d > worst {
			worst = d
		}
		if started == window {
			close(release)
		}
		mu.Unlock()
		if i == 0 {
			<-release
		}
		return i, nil
	}, func(i, r int) error {
		mu.Lock()
		emitted++
		mu.Unlock()
		return nil
	})
	if err != nil || done != n {
		t.Fatalf("done %d, err %v", done, err)
	}
	if worst > window {
		t.Errorf("%d jobs started and not emitted at once; the window is %d", worst, window)
	}
	if worst < window {
		t.Errorf("at most %d jobs in flight while job 0 was held: the pool did not run ahead up to its window (%d)", worst, window)
	}
}
