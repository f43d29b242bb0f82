package scenarios

import (
	"testing"

	"github.com/locksim/locksim/locks/catalogue"
)

// TestBuiltinFilesParse: every embedded scenario file parses, and the ids
// the report and the docs name are all there.
func TestBuiltinFilesParse(t *testing.T) {
	for _, err := range builtinErrors() {
		t.Error(err)
	}
	want := []string{"default", "no-faults", "pause-after-check", "pause-during-acquire", "clock-jump",
		"restart-no-persistence", "restart-fsync-always", "delayed-restart", "failover", "failover-wait",
		"split-brain", "delayed-write", "drift", "token-regression", "foreign-release", "watchdog-starved",
		"bonus-pool", "redlock-all-up", "redlock-2-of-5"}
	for _, id := range want {
		s, err := Get(id)
		if err != nil {
			t.Errorf("built-in scenario %q missing: %v", id, err)
			continue
		}
		if id == "default" {
			continue
		}
		if s.File == nil || s.File.Source == "" || len(s.File.Locks) == 0 {
			t.Errorf("%s: a built-in scenario file needs a source, locks and expectations", id)
		}
	}
}

// TestBuiltinCellsHaveFaults: in a built-in file that schedules faults,
// every cell (a lock that fits the file) gets at least one of them. A
// fault restricted with locks: applies to a lock it never names as to its
// topology's stand-in, so a restriction can leave a cell with no fault at
// all: a no-fault run reported under a fault scenario's name (it happened
// to token-regression's single-node cells).
func TestBuiltinCellsHaveFaults(t *testing.T) {
	for _, id := range IDs() {
		s, err := Get(id)
		if err != nil || s.File == nil || (len(s.File.Faults) == 0 && s.File.Swarm == nil) {
			continue
		}
		for _, lock := range catalogue.IDs() {
			info, _ := catalogue.Get(lock)
			if info.Unavailable != "" || s.Fits(info) != "" {
				continue
			}
			cfg, err := s.Build(info, 1, Params{})
			if err != nil {
				t.Errorf("%s × %s: %v", id, lock, err)
				continue
			}
			if len(cfg.Faults) == 0 {
				t.Errorf("%s × %s: the cell runs with no fault (every fault of the file is restricted to other locks)", id, lock)
			}
		}
	}
}
