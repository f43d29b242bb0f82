package realredis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/run"
)

// TestClusterOwnFailover: minority-primary-cluster's first partition on
// six real redis-server processes failing over by themselves. The
// partition cuts n0's cluster bus from the other primaries (bus links),
// so real Redis flags n0 FAIL and elects n1 with no harness TAKEOVER;
// the harness records the promotion as the cluster's own, credited to
// the partition, and, after the heal, n0 turning into n1's replica;
// nothing is left after the run.
func TestClusterOwnFailover(t *testing.T) {
	requireRedis(t)
	if testing.Short() {
		t.Skip("six real redis-server processes and the cluster's own election: seconds of real time (run without -short)")
	}
	tmp := t.TempDir()
	j, err := Build(run.Spec{Scenario: "minority-primary-cluster", Lock: "cluster-set-nx-cad", Seed: 1}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f := j.Config.Faults[0]
	// A partition of 4 s: the election (node timeout 500 ms, then 0.5-1 s
	// after FAIL, Redis's own) ends well inside it, even on a loaded machine.
	f.At, f.On, f.Start, f.Duration = "", "", 500*time.Millisecond, 4*time.Second
	j.Config.Faults = j.Config.Faults[:1]
	j.Config.Faults[0] = f
	j.Config.Duration, j.Config.Liveness = 5*time.Second, time.Second
	jd, err := j.RunAndJudge(context.Background(), tmp)
	if err != nil {
		t.Fatal(err)
	}
	promoted, demoted := false, false
	for _, ev := range jd.Result.History {
		switch {
		case ev.Proc == clusterProc && ev.Kind == event.KindFailover && strings.HasPrefix(ev.Detail, "n0 -> n1 (cluster shard 0, slots 0-5460) by the cluster's own election"):
			promoted = true
		case ev.Proc == clusterProc && ev.Kind == event.KindDemote && strings.HasPrefix(ev.Detail, "n0 -> replica of n1"):
			demoted = promoted
		}
	}
	if !promoted || !demoted || jd.Result.Stats.Failovers != 1 {
		t.Errorf("promoted %v, then demoted %v, failovers %d: want n1 elected by the cluster, n0 its replica after, 1 failover", promoted, demoted, jd.Result.Stats.Failovers)
	}
	// The promotion is credited to the partition (cluster_own_effects.go).
	if len(jd.Result.Effects) == 0 {
		t.Fatalf("no fault effect recorded, want the partition's")
	}
	if e := jd.Result.Effects[0]; e.Promoted != "n1" {
		t.Errorf("the partition's effect names promoted %q, want n1", e.Promoted)
	}
	var sum strings.Builder
	jd.WriteSummary(&sum, jd.Report(""))
	if !strings.Contains(sum.String(), "failed over by the cluster's own election") || strings.Contains(sum.String(), "TAKEOVER") {
		t.Errorf("summary's backend line does not say the cluster fails over by itself:\n%s", firstLine(sum.String()))
	}
	if got := ours(t, jd.Info.Listeners); len(got) > 0 {
		t.Errorf("left running: %v", got)
	}
	empty(t, tmp)
}
