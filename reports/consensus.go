package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/internal/realarm/parity"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
)

// consensusView is the report's "consensus systems on the real arm"
// section: a parity folder's consensus cells (a lock whose world is a
// coordination service: zk-lock, zk-fencing on three real ZooKeeper
// servers; the etcd designs exist on the real arm only), each beside the
// report's own simulated row for the same scenario × lock (at the lock's
// own TTL, unscaled), with run counts and the real arm's caveat.
type consensusView struct {
	Intro    string
	Rows     []consensusRow
	Disagree []string
}

type consensusRow struct {
	Scenario, Lock, Expected string
	// Report is the report's simulated cell ("k/n verdict", "-" when the
	// report did not run it); Sim and Real the parity folder's arms, on
	// the scaled world; RealWall the real arm's wall time a run.
	Report, Sim, Real, RealWall string
	Agree, Class                string
	Reasons                     []string // the real arm's first reasons for non-safe runs
}

// isConsensusLock reports whether lock runs on a coordination service
// (its cells belong to the consensus section, not to the Redis one).
func isConsensusLock(id string) bool {
	info, err := catalogue.Get(id)
	return err == nil && (info.Topology == locks.Consensus || info.Real != "")
}

// consensusView builds the section from the parity result r and the
// report's own results (nil when r has no consensus cell).
func consensusSection(r *parity.Result, res Results) *consensusView {
	if r == nil {
		return nil
	}
	sim := map[[2]string]CellResult{}
	for _, c := range res.Cells {
		sim[[2]string{c.Scenario, c.Lock}] = c
	}
	v := &consensusView{}
	var ttls []string // each distinct TTL the cells ran at, in table order
	for _, c := range r.Cells {
		if !isConsensusLock(c.Lock) {
			continue
		}
		if s := time.Duration(c.TTLNS).String(); !slices.Contains(ttls, s) {
			ttls = append(ttls, s)
		}
		row := consensusRow{Scenario: c.Scenario, Lock: c.Lock, Expected: orDash(c.Expected), Report: "-",
			Sim:  fmt.Sprintf("%d/%d %s", c.SimUnsafe, c.SimRuns, c.SimVerdict),
			Real: fmt.Sprintf("%d/%d %s", c.RealUnsafe, c.RealRuns, c.RealVerdict), RealWall: "-",
			Agree: "yes", Class: "safe", Reasons: c.RealReasons}
		if s, ok := sim[[2]string{c.Scenario, c.Lock}]; ok {
			row.Report = fmt.Sprintf("%d/%d %s", s.UnsafeRuns, s.Runs, s.Verdict)
		}
		if n := c.RealRuns + len(c.Errors); n > 0 { // the wall time counts the runs that failed too
			row.RealWall = (time.Duration(c.RealWallNS) / time.Duration(n)).Round(100 * time.Millisecond).String()
		}
		if len(c.Errors) > 0 {
			row.Real += fmt.Sprintf(" (+%d not judged: %s)", len(c.Errors), clipLine(c.Errors[0]))
		}
		switch {
		case c.NotSupported != "":
			row.Real, row.Agree, row.Class = "not supported: "+c.NotSupported, "-", ""
		case !c.Agree:
			row.Agree, row.Class = "NO", "unsafe"
			v.Disagree = append(v.Disagree, c.Scenario+" × "+c.Lock)
		}
		v.Rows = append(v.Rows, row)
	}
	if len(v.Rows) == 0 {
		return nil
	}
	v.Intro = fmt.Sprintf("The debate's recommended answer, a consensus system with fencing tokens, against the real thing: the simulator's ZooKeeper-like store "+
		"(internal/zk: etcd raft, three members) beside three real ZooKeeper servers (JVMs) on loopback, and etcd's own concurrency.Mutex against three real etcd members (real arm only). "+
		"Both parity arms play each scenario at a session timeout (lease) of %s, every duration scaled alike; the report's own column is its simulated cell at the lock's own TTL. "+
		"A real run is not replayable: the seed fixes the fault schedule and the workload's choices, not the interleaving, and the servers' timing (JVM start-up, elections, session expiry ticks) is the machine's. "+
		"Run counts are per arm; docs/CONSENSUS.md has the expectations written before measuring, docs/PARITY.md what every disagreement was (its traces: docs/FINDINGS.md).", strings.Join(ttls, " or "))
	return v
}

// clipLine is an error's first line, at most 160 bytes.
func clipLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
