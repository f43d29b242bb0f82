package realredis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/run"
)

// TestSwarmAimedSupported: a swarm block aimed at the Redis node n0
// (targets: [n0]) draws schedules the real arm carries out for every
// seed, where the same block unaimed draws node pauses of the storage,
// which the arm refuses.
func TestSwarmAimedSupported(t *testing.T) {
	for _, c := range []struct{ file, lock string }{
		{"../../../knownbugs/scenarios/renew-node-pauses-swarm.yaml", "watchdog"},
		{"../../../knownbugs/scenarios/node-restarts-fsync-swarm.yaml", "set-nx-cad"},
	} {
		for seed := uint64(1); seed <= 20; seed++ {
			j, err := Build(run.Spec{Scenario: c.file, Lock: c.lock, Seed: seed}, 2*time.Second)
			if err != nil {
				t.Fatalf("%s seed %d: %v", c.file, seed, err)
			}
			if err := Supported(j.Parts); err != nil {
				t.Fatalf("%s seed %d: %v", c.file, seed, err)
			}
			if len(j.Config.Faults) < 3 {
				t.Fatalf("%s seed %d: %d faults, want 3 to 6", c.file, seed, len(j.Config.Faults))
			}
		}
	}
	unaimed := filepath.Join(t.TempDir(), "unaimed.yaml")
	body := "id: unaimed\ndescription: node pauses on any node\nclients: {count: 2}\nswarm: {min_faults: 6, max_faults: 6, kinds: [node-pause]}\n"
	if err := os.WriteFile(unaimed, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for seed := uint64(1); seed <= 20; seed++ {
		j, err := Build(run.Spec{Scenario: unaimed, Lock: "set-nx-cad", Seed: seed}, 2*time.Second)
		if err == nil {
			err = Supported(j.Parts)
		}
		if err != nil && strings.Contains(err.Error(), "node-pause of store") {
			refused++
		}
	}
	if refused == 0 {
		t.Errorf("unaimed: no seed of 20 drew a node pause of the storage (want the arm's refusal the targets avoid)")
	}
}
