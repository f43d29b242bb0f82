package run

import (
	"strings"
	"testing"
)

// TestClusterOwnPromotionTold: in minority-primary-cluster (seed 1) the
// cluster's own election promotes n1, which the lock key taken on n0
// after the partition began never reached: the partition's fault line in
// the summary and the story say which replica was promoted and that it
// lacked the key, and --json's fault effect names it.
func TestClusterOwnPromotionTold(t *testing.T) {
	j := judgeCluster(t, "minority-primary-cluster", "cluster-set-nx-cad", 1)
	r := j.Report("")
	var sum strings.Builder
	r.WriteSummary(&sum)
	if !strings.Contains(sum.String(), "[bit; promoted n1, which lacked a live lock key]") {
		t.Errorf("summary's fault lines do not tell n1's promotion lacking the key:\n%s", sum.String())
	}
	if !strings.Contains(r.Story, "n0 -> n1 (cluster shard 0, slots 0-5460), which lacked a lock key live on the old primary") {
		t.Errorf("story does not tell the promotion lacking the key: %s", r.Story)
	}
	found := false
	for _, e := range r.FaultEffects {
		found = found || (e.Promoted == "n1" && e.PromotedLacking)
	}
	if !found {
		t.Errorf("no fault effect names n1 promoted lacking the key: %+v", r.FaultEffects)
	}
}
