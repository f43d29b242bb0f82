package realredis

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/realarm/driver"
)

// hostileRun runs testdata/hostile_driver.py in mode in lock's world on
// scenario (TTL 200 ms), the driver's bound cut to bound (0: the default).
func hostileRun(t *testing.T, mode, scenario, lock string, bound time.Duration) *Judged {
	t.Helper()
	requireRedis(t)
	src, err := filepath.Abs(filepath.Join("testdata", "hostile_driver.py"))
	if err != nil {
		t.Fatal(err)
	}
	exe := script(t, t.TempDir(), "driver-"+mode, "exec /usr/bin/python3 "+src+" "+mode+"\n")
	d, err := ResolveDriver(exe)
	if err != nil {
		t.Fatal(err)
	}
	d.Bound = bound
	j := short(t, scenario, lock, 1)
	if err := j.WithDriver(d); err != nil {
		t.Fatal(err)
	}
	jd, err := j.RunAndJudge(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: verdict %s, %d lease overlaps, err %v", mode, jd.Verdict(), jd.Check.LeaseOverlaps, jd.Err)
	return jd
}

// wantNamed checks that jd is unknown with an error saying each of want.
func wantNamed(t *testing.T, jd *Judged, want ...string) {
	t.Helper()
	if jd.Verdict() != checker.VerdictUnknown || jd.Err == nil {
		t.Fatalf("verdict %s, err %v: want unknown with an error", jd.Verdict(), jd.Err)
	}
	for _, w := range want {
		if !strings.Contains(jd.Err.Error(), w) {
			t.Errorf("error does not say %q: %v", w, jd.Err)
		}
	}
}

// TestDriverFarValidity: a driver that grants every acquire (it locks
// nothing) with valid_until_ms 1e14, the largest the protocol accepts,
// shows its overlaps: the validity is clamped to the run's end, where it
// used to overflow into a belief that ended before it began (0 overlaps,
// safe). Its renewals go through the same conversion.
func TestDriverFarValidity(t *testing.T) {
	for _, lock := range []string{"set-nx-cad", "watchdog"} {
		t.Run(lock, func(t *testing.T) {
			jd := hostileRun(t, "far-validity", "no-faults", lock, 0)
			if jd.Err != nil || jd.Check.LeaseOverlaps == 0 || jd.Verdict() != checker.VerdictUnsafe {
				t.Errorf("verdict %s with %d lease overlaps, err %v: want the overlaps of a driver that locks nothing", jd.Verdict(), jd.Check.LeaseOverlaps, jd.Err)
			}
		})
	}
}

// TestDriverValidityInSeconds: a valid_until_ms given in seconds (a belief
// that ended in 1970) is refused, naming the driver, client, request and
// line: the run is unknown, not safe.
func TestDriverValidityInSeconds(t *testing.T) {
	jd := hostileRun(t, "seconds", "no-faults", "set-nx-cad", 0)
	wantNamed(t, jd, "driver driver-seconds (client c", "request acquire", "before the run began", "valid_until_ms 17")
}

// TestDriverHangs: a driver that stops answering within the run (a renew
// never answered, a third acquire never answered) or that floods pause
// points without reading its stdin is named with its client and request,
// within the run's request bound (requestBound: here 1 s, half the 2 s
// liveness phase at a TTL of 200 ms), and the run is unknown: it used to
// be safe or liveness (the 10 s bound outlasted the run, and a write to a
// driver that reads nothing blocked until the stop's own bound).
func TestDriverHangs(t *testing.T) {
	longSections := filepath.Join("testdata", "long-sections.yaml")
	for _, tc := range []struct {
		mode, scenario, lock string
		want                 []string
	}{
		{"renew-hangs", longSections, "watchdog", []string{"request renew", "no reply within 1s"}},
		{"third-sleeps", "no-faults", "set-nx-cad", []string{"request acquire", "no reply within 1s"}},
		// Named by whichever bound ends it first: the write's (the pipe
		// filled with continues) or the request's (a slow harness).
		{"flood", "no-faults", "set-nx-cad", []string{"request acquire", "1s"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			jd := hostileRun(t, tc.mode, tc.scenario, tc.lock, 0)
			wantNamed(t, jd, append([]string{"driver driver-" + tc.mode + " (client c"}, tc.want...)...)
		})
	}
}

// TestDriverWriteBound: a write to a driver that reads nothing of its
// stdin gives up after the bound (os.ErrDeadlineExceeded, which request
// names), once the pipe is full; at the run's stop it gives up at once.
func TestDriverWriteBound(t *testing.T) {
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // never read: the pipe fills
	defer wr.Close()
	w := &world{stop: make(chan struct{})}
	dp := &driverProc{p: &proc{w: w, name: "c0"}, d: &Driver{Name: "deaf"}, stdin: wr, bound: 50 * time.Millisecond}
	n := 0
	for ; n < 1<<20; n++ { // a pipe holds 64 KiB by default, at most 1 MiB
		if err = dp.write(driver.Request{Type: driver.Continue}); err != nil {
			break
		}
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after %d writes: err %v, want the write's deadline", n, err)
	}
	w.stopped = true
	if err := dp.write(driver.Request{Type: driver.Continue}); !errors.Is(err, errDriverStop) {
		t.Errorf("a write at the stop: %v, want errDriverStop", err)
	}
}
