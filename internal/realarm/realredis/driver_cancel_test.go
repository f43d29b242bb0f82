package realredis

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/internal/realarm/driver"
)

// TestDriverNeverGivesUp: a driver for a lock library whose acquire
// retries forever (redis-lock 1.0.0's lock(); testdata/never_gives_up.py)
// declares cancel. A client whose key a crashed holder keeps forever (c0)
// is then judged as waiting: each of its acquires is cancelled at half the
// bound and returns unknown, saying so, within the bound; the run ends
// with no harness error, and the verdict is the lock's: safe, the stuck
// clients starved (a fairness figure) while c1, whose key is free,
// progresses; a deadlock only when every client's key is held forever (no
// client can ever take it), where the clients are recorded as trying, not
// stuck. (One free client: the library gives no validity, so two taking
// turns could overlap on a loaded machine, the library's unsafety.)
// Before cancel, such a driver was named as hanging ("no reply within
// 1s") and the run was unknown.
func TestDriverNeverGivesUp(t *testing.T) {
	requirePythonRedis(t)
	src, err := filepath.Abs(filepath.Join("testdata", "never_gives_up.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stuck   string
		verdict checker.Verdict
	}{
		{"all-but-c1", checker.VerdictSafe},
		{"all", checker.VerdictLiveness},
	} {
		t.Run(tc.stuck, func(t *testing.T) {
			exe := script(t, t.TempDir(), "never-gives-up", "exec /usr/bin/python3 "+src+" "+tc.stuck+"\n")
			d, err := ResolveDriver(exe)
			if err != nil {
				t.Fatal(err)
			}
			j := short(t, "no-faults", "set-nx-cad", 1)
			if err := j.WithDriver(d); err != nil {
				t.Fatal(err)
			}
			jd, err := j.RunAndJudge(context.Background(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			lv := jd.Check.Liveness
			t.Logf("verdict %s, err %v; reasons %q, starved %v", jd.Verdict(), jd.Err, jd.Check.Reasons, lv.Starved)
			if jd.Err != nil || jd.Verdict() != tc.verdict {
				t.Fatalf("verdict %s, err %v: want %s and no error", jd.Verdict(), jd.Err, tc.verdict)
			}
			bound := requestBound(d, j.TTL, j.Config.Liveness)
			calls := map[int64]int64{}
			cancelled := 0
			for _, e := range jd.Result.History {
				if e.Proc != "c0" || e.Op != event.OpAcquire {
					continue
				}
				switch e.Kind {
				case event.KindCall:
					calls[e.OpID] = e.T
				case event.KindOK:
					t.Errorf("c0 acquired a key held forever: %+v", e)
				case event.KindUnknown:
					cancelled++
					if took := time.Duration(e.T - calls[e.OpID]); took > bound || took < driver.CancelAfter(bound) {
						t.Errorf("c0's acquire %d returned after %v: want within the bound (%v), from its cancel at %v", e.OpID, took, bound, driver.CancelAfter(bound))
					}
					if want := fmt.Sprintf("cancelled by the harness at %v of its %v bound (the library was still waiting): lock() still retrying", driver.CancelAfter(bound), bound); e.Detail != want+": it never gives up" {
						t.Errorf("c0's cancelled acquire: detail %q", e.Detail)
					}
				}
			}
			if cancelled < 2 {
				t.Errorf("c0's acquires cancelled: %d, want its every acquire (at least 2 in the run)", cancelled)
			}
			if !slices.Contains(lv.Starved, "c0") || !strings.Contains(strings.Join(lv.Reasons, "\n"), map[string]string{"all-but-c1": "not a failure", "all": "while clients kept trying"}[tc.stuck]) {
				t.Errorf("liveness: starved %v, reasons %q", lv.Starved, lv.Reasons)
			}
			if tc.stuck != "all" && (lv.Grants == 0 || slices.Contains(lv.Starved, "c1")) {
				t.Errorf("no client acquired: %+v", lv)
			}
		})
	}
}
