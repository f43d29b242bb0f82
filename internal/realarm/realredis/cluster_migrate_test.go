package realredis

import (
	"context"
	"strings"
	"testing"

	"github.com/locksim/locksim/event"
)

// TestClusterSlotMigration: slot-migration-cluster's first migration on
// three real redis-server processes in cluster mode. The lock key's slot
// (3196) is marked migrating from shard 0 to shard 1, its keys MIGRATE
// halfway, SETSLOT NODE gives it to shard 1 at the end, each step in the
// history in that order; the clients take the lock after it (they follow
// -MOVED to the new shard), the run ends without a harness error, and
// nothing is left after it.
func TestClusterSlotMigration(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	j := short(t, "slot-migration-cluster", "cluster-set-nx-cad", 1)
	j.Config.Faults = j.Config.Faults[:1]
	jd, err := j.RunAndJudge(context.Background(), tmp)
	if err != nil {
		t.Fatal(err)
	}
	steps := []string{
		"slot 3196 migrating: shard 0 (n0) -> shard 1 (n1)",
		"slot 3196: MIGRATE ",
		"slot 3196: SETSLOT NODE n1: shard 1 serves it",
	}
	next, moved := 0, int64(-1)
	acquiredAfter := 0
	for _, ev := range jd.Result.History {
		if ev.Kind == event.KindReconfigure {
			if ev.Fault != 1 {
				t.Errorf("reconfigure %q of fault %d, want fault 1", ev.Detail, ev.Fault)
			}
			if next < len(steps) && strings.HasPrefix(ev.Detail, steps[next]) {
				next++
				if next == len(steps) {
					moved = ev.T
				}
			}
		}
		if moved >= 0 && ev.T > moved && ev.Op == event.OpAcquire && ev.Kind == event.KindOK {
			acquiredAfter++
		}
	}
	if next < len(steps) {
		t.Errorf("the history lacks %q (steps in order)", steps[next])
	}
	if acquiredAfter == 0 {
		t.Errorf("no acquisition after the slot moved: %s", jd.Report("").Verdict)
	}
	if es := jd.Result.Effects; len(es) != 1 || !es[0].Started {
		t.Errorf("effects %+v: want the migration started", es)
	}
	if got := ours(t, jd.Info.Listeners); len(got) > 0 {
		t.Errorf("left running: %v", got)
	}
	empty(t, tmp)
}
