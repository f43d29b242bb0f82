package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/sweep"
)

// Shards run by two builds of locksim (here: one's recorded build edited,
// as a build whose built-in no-faults had 2 clients would record another)
// do not merge, and a folder does not resume under another build; the
// refusals name both.
func TestMergeRefusesOtherBuild(t *testing.T) {
	base := t.TempDir()
	var shards []string
	for i, s := range []string{"0/2", "1/2"} {
		d := filepath.Join(base, "shard-"+string(rune('0'+i)))
		if code, _, stderr := cli(t, testHost(t), tinySweep(d, "--shard", s)...); code != exitSafe {
			t.Fatalf("shard %s: exit %d: %s", s, code, stderr)
		}
		shards = append(shards, d)
	}
	path := filepath.Join(shards[1], sweep.SpecFile)
	var spec map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &spec); err != nil {
		t.Fatal(err)
	}
	if b, _ := spec["build"].(string); !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(b) {
		t.Fatalf("sweep.json records no build: %v", spec["build"])
	}
	spec["build"] = strings.Repeat("ab", 32)
	data, _ := json.MarshalIndent(spec, "", "  ")
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, noHost(t), "merge", "--charts=false", "--out", filepath.Join(base, "merged"), shards[0], shards[1])
	if code != exitUsage || !strings.Contains(stderr, shards[0]) || !strings.Contains(stderr, shards[1]) || !strings.Contains(stderr, "build abababab") {
		t.Errorf("merge of two builds' shards: exit %d, %q; want 64 naming both", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(base, "merged")); !os.IsNotExist(err) {
		t.Error("the refused merge wrote its folder")
	}
	code, _, stderr = cli(t, testHost(t), tinySweep(shards[1], "--shard", "1/2")...)
	if code != exitUsage || !strings.Contains(stderr, "another build") || !strings.Contains(stderr, "build abababab") {
		t.Errorf("resuming another build's shard: exit %d, %q; want 64 naming its build", code, stderr)
	}
}
