package scenarios

import (
	"testing"
)

// TestBuiltinFilesParse: every embedded scenario file parses, and the ids
// DESIGN §8a fixes are all there.
func TestBuiltinFilesParse(t *testing.T) {
	for _, err := range builtinErrors {
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
