package reports

import (
	"fmt"
	"strings"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/scenarios"
)

// waitDesigns are the designs that make their lock writes wait for
// replicas (WAIT), each beside the same design without it: what the
// index's sentence on WAIT compares.
var waitDesigns = []struct{ id, without string }{
	{"set-nx-wait", "primary-replica"},
	{"redisson-wait", "redisson-lock"},
	{"redisson-wait-cluster", "redisson-cluster"},
}

// waitIntro is what WAIT does and does not do, as Redis's documentation of
// WAIT says it; the measured rates follow it.
const waitIntro = "WAIT blocks a write until replicas acknowledge it, so a failover that promotes an acknowledging replica keeps the lock's key; it does not make Redis strongly consistent: a key acknowledged by a replica that is not the one promoted, or taken on a primary cut off from its replicas, is still lost."

// replicaLoss says whether scenario s can lose a write to a failover:
// its file makes the world replicated and injects a failover or a
// partition (Sentinel's or the cluster's failover follows one).
func replicaLoss(s scenarios.Scenario) bool {
	f := s.File
	if f == nil || f.Topology.Replicated == nil || !*f.Topology.Replicated {
		return false
	}
	for _, fs := range f.Faults {
		if fs.Kind == string(faults.Failover) || fs.Kind == string(faults.Partition) {
			return true
		}
	}
	return false
}

// waitReading is the index's sentence on what WAIT buys, with the rates
// measured for each WAIT design that ran where a failover can lose a
// write, and its sibling without WAIT in the same scenarios; "" when
// none ran there.
func (p *Plan) waitReading(res map[string]*CellResult) string {
	var parts []string
	for _, d := range waitDesigns {
		var unsafe []*CellResult
		var safe, sibling []string
		for _, s := range p.scenarioOrder() {
			if !replicaLoss(s) {
				continue // WAIT has nothing to say where no replica is lost
			}
			j := res[anchor(s.ID, d.id)]
			if j == nil || p.cell(s.ID, d.id) == nil {
				continue
			}
			switch {
			case j.Verdict == checker.VerdictUnsafe:
				unsafe = append(unsafe, j)
				if w := res[anchor(s.ID, d.without)]; w != nil && p.cell(s.ID, d.without) != nil {
					sibling = append(sibling, s.ID+" "+rateText(w))
				}
			case j.Verdict == checker.VerdictSafe && j.Untested() == "":
				safe = append(safe, fmt.Sprintf("%s (0 of %d)", s.ID, j.Runs))
			}
		}
		if len(unsafe) == 0 && len(safe) == 0 {
			continue
		}
		part := d.id
		if len(unsafe) > 0 {
			part += " is unsafe in " + rateGroups(unsafe)
			if len(sibling) > 0 {
				part += fmt.Sprintf(" (without WAIT, %s: %s)", d.without, strings.Join(sibling, " · "))
			}
		}
		if len(safe) > 0 {
			if len(unsafe) > 0 {
				part += " and"
			}
			part += " safe in " + listSome(safe, 5)
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return waitIntro + " Measured: " + strings.Join(parts, "; ") + "."
}
