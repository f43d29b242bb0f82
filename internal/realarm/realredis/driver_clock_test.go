package realredis

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/run"
)

// TestDriverClockFaultChangesVerdict shows "a client clock fault
// changes a verdict", for a Python and a Node driver: c0 stops at the
// acquiring point for 1.5 TTL, and in drivers/scenarios/
// jump-during-acquire.yaml its clock also steps back 2 TTL meanwhile
// (libfaketime in the driver's process). With the careful workload the
// control (validity: time.time() before the SET + TTL) and redlock
// (expiration = Date.now() at the start + TTL - drift, checked against
// Date.now(): redlock.js 397, 416, 419) trust a validity computed on the
// stepped clock and write after their key expired: unsafe. The same
// schedule without the step (jump-during-acquire-no-clock.yaml) leaves
// them no validity, and careful code writes nothing: safe. Real runs are
// not replayable, so the step's side asks for one unsafe run in three
// seeds and the other for none.
func TestDriverClockFaultChangesVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("real driver runs: 12 runs of ~5 s")
	}
	requireRedis(t)
	for _, name := range []string{"python-set-nx-cad", "node-redlock"} {
		t.Run(name, func(t *testing.T) {
			if strings.HasPrefix(name, "node-") {
				requireNodeRedlock(t)
			} else {
				requirePythonRedis(t)
			}
			unsafe := map[string]int{}
			for _, sc := range []string{"jump-during-acquire", "jump-during-acquire-no-clock"} {
				for seed := uint64(1); seed <= 3; seed++ {
					spec := run.Spec{Scenario: filepath.Join("..", "..", "..", "drivers", "scenarios", sc+".yaml"), Lock: "set-nx-cad", Seed: seed}
					spec.Params.Careful = true
					j, err := Build(spec, DefaultTTL)
					if err != nil {
						t.Fatal(err)
					}
					if err := j.WithDriver(repoDriver(t, name)); err != nil {
						t.Fatal(err)
					}
					jd, err := j.RunAndJudge(context.Background(), "")
					if err != nil {
						t.Fatal(err)
					}
					reason := ""
					if len(jd.Check.Reasons) > 0 {
						reason = jd.Check.Reasons[0]
					}
					t.Logf("%s seed %d: %s %s", sc, seed, jd.Verdict(), reason)
					if jd.Verdict() == checker.VerdictUnsafe {
						unsafe[sc]++
					}
				}
			}
			if unsafe["jump-during-acquire"] == 0 {
				t.Errorf("%s: no unsafe run with c0's clock stepped back during its acquisition (want the validity on the stepped clock to be trusted)", name)
			}
			if unsafe["jump-during-acquire-no-clock"] != 0 {
				t.Errorf("%s: %d unsafe runs without the clock step (want none: careful code writes nothing once the validity ran out)", name, unsafe["jump-during-acquire-no-clock"])
			}
		})
	}
}
