package main

import (
	"strings"
	"testing"
)

// TestListLockParams: 'list locks ID' prints the lock's parameter table
// (name, default, unit, range), the one a scenario file's params read.
func TestListLockParams(t *testing.T) {
	code, out, stderr := cli(t, noHost(t), "list", "locks", "redlock")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"parameters (a scenario file's params: {redlock: {name: value}}):",
		"preset        redis-io  Redlock preset       redis-io | seed-001",
		"drift_factor  0.01      fraction of the TTL  [0, 0.5]",
		"node_timeout  50ms      duration             (0s, 24h0m0s]"} {
		if !strings.Contains(out, want) {
			t.Errorf("list locks redlock: no %q in\n%s", want, out)
		}
	}
	if _, out, _ := cli(t, noHost(t), "list", "locks", "redisson-lock"); !strings.Contains(out, "parameters: none") {
		t.Errorf("list locks redisson-lock: want 'parameters: none':\n%s", out)
	}
}
