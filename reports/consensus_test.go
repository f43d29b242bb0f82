package reports

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/realarm/parity"
)

// TestConsensusSection: a parity folder's consensus cells get their own
// section, beside the report's own simulated cell, and leave the Redis
// section; a folder of consensus cells only has no Redis section.
func TestConsensusSection(t *testing.T) {
	r := &parity.Result{TTLNS: 1e9, Cells: []parity.CellResult{
		{Scenario: "pause-after-check", Lock: "zk-lock", TTLNS: 1e9, SimRuns: 20, SimUnsafe: 20, SimVerdict: "unsafe", RealRuns: 3, RealUnsafe: 3, RealVerdict: "unsafe", Agree: true, RealWallNS: 60e9},
		{Scenario: "leader-partition", Lock: "zk-fencing", TTLNS: 1e9, SimRuns: 20, SimVerdict: "safe", RealRuns: 1, RealVerdict: "liveness", Errors: []string{"seed 1: zookeeper zk0 did not serve\nlog"}, RealWallNS: 60e9},
		{Scenario: "pause-after-check", Lock: "set-nx-cad", SimRuns: 20, SimUnsafe: 20, SimVerdict: "unsafe", RealRuns: 3, RealUnsafe: 3, RealVerdict: "unsafe", Agree: true},
	}}
	res := Results{Cells: []CellResult{{Scenario: "pause-after-check", Lock: "zk-lock", Runs: 200, UnsafeRuns: 200, Verdict: "unsafe"}}}
	v := consensusSection(r, res)
	if v == nil || len(v.Rows) != 2 {
		t.Fatalf("consensus section: %+v, want the two zk rows", v)
	}
	if got := v.Rows[0]; got.Report != "200/200 unsafe" || got.Real != "3/3 unsafe" || got.RealWall != "20s" || got.Agree != "yes" {
		t.Errorf("row 0: %+v, want the report's 200/200 unsafe beside real 3/3 unsafe, 20s a run", got)
	}
	if got := v.Rows[1]; got.Report != "-" || got.Agree != "NO" || got.RealWall != "30s" || !strings.Contains(got.Real, "+1 not judged: seed 1: zookeeper zk0 did not serve") || strings.Contains(got.Real, "log") {
		t.Errorf("row 1: %+v, want no report cell, a disagreement, 30s a run over 2 runs, the error's first line", got)
	}
	if len(v.Disagree) != 1 || v.Disagree[0] != "leader-partition × zk-fencing" {
		t.Errorf("disagree: %v", v.Disagree)
	}
	p := &Plan{parity: r}
	pv, err := p.parityView(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if pv == nil || len(pv.Rows) != 1 || pv.Rows[0].Lock != "set-nx-cad" {
		t.Fatalf("Redis section: %+v, want set-nx-cad only", pv)
	}
	p.parity = &parity.Result{Cells: r.Cells[:2]}
	if pv, err := p.parityView(t.TempDir()); err != nil || pv != nil {
		t.Fatalf("a consensus-only folder's Redis section: %+v, %v, want none", pv, err)
	}
}
