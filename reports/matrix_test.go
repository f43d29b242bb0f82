package reports

import (
	"testing"

	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
)

// The matrix is dense: every (scenario, lock) pair whose topology fits has
// a cell, and no cell is of a pair that does not fit.
func TestMatrixIsDense(t *testing.T) {
	p, err := NewPlan(Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	have := map[[2]string]bool{}
	for _, c := range p.Cells() {
		have[[2]string{c.Scenario.ID, c.Lock.ID}] = true
		if why := c.Scenario.Fits(c.Lock); why != "" {
			t.Errorf("cell %s × %s, which does not fit: %s", c.Scenario.ID, c.Lock.ID, why)
		}
	}
	for _, sid := range scenarios.IDs() {
		s, _ := scenarios.Get(sid)
		if s.File != nil && !s.File.InMatrix() {
			continue
		}
		for _, id := range catalogue.IDs() {
			info, _ := catalogue.Get(id)
			if info.Unavailable == "" && s.Fits(info) == "" && !have[[2]string{sid, id}] {
				t.Errorf("no cell for %s × %s, which fits", sid, id)
			}
		}
	}
	// The rule, checked against pairs decided by hand from the files.
	for _, c := range []struct {
		scenario, lock string
		fits           bool
	}{
		{"clock-jump", "redsync", true},   // lists redlock
		{"clock-jump", "redislock", true}, // lists set-nx-cad
		{"failover", "redsync", false},    // a replicated world only
		{"failover", "gocron", true},      // single-node locks run on the primary
		{"bonus-pool", "primary-replica", false},
		{"redlock-2-of-5", "set-nx-cad", false},
		{"watchdog-starved", "set-nx-cad", false}, // never renews: the pauses at renewing would never fire
		{"watchdog-starved", "watchdog", true},
		{"pause-after-check", "setnx-del", false}, // no TTL, and the file counts in TTLs
		{"bonus-pool", "version-cas", false},      // not_for: porcupine cannot finish
	} {
		if got := have[[2]string{c.scenario, c.lock}]; got != c.fits {
			t.Errorf("%s × %s: cell %v, want %v", c.scenario, c.lock, got, c.fits)
		}
	}
	if len(have) < 200 {
		t.Errorf("only %d cells", len(have))
	}
}
