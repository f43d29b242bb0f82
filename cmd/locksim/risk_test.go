package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/risk"
)

func TestRiskRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("id: x\nclasses:\n  - id: p\n    kind: pause\n    per_hour: 1\n    size: {fixed: 1s}\n    colour: red\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"risk"}, "--lock: required"},
		{[]string{"risk", "--lock", "nope"}, `--lock: unknown lock "nope"`},
		{[]string{"risk", "--lock", "zk-lock"}, "risk covers Redis designs"},
		{[]string{"risk", "--lock", "redlock", "--ttl", "1ms"}, "--ttl"},
		{[]string{"risk", "--lock", "redlock", "--clients", "1"}, "--clients"},
		{[]string{"risk", "--lock", "redlock", "--seeds", "0"}, "--seeds"},
		{[]string{"risk", "--lock", "redlock", "--profile", filepath.Join(dir, "none.yaml")}, "--profile"},
		{[]string{"risk", "--lock", "redlock", "--profile", bad}, "colour"},
		{[]string{"risk", "--lock", "redlock", "extra"}, "extra"},
	} {
		code, stdout, stderr := cli(t, testHost(t), tc.args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d naming %q", tc.args, code, stdout, stderr, exitUsage, tc.want)
		}
	}
}

// A tiny profile end to end: the text and --json agree, and the same
// flags give the same numbers.
func TestRiskTinyProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(prof, []byte(`id: tiny
classes:
  - id: long-pause
    kind: pause
    per_year: 100
    size: {fixed: 3s}
    source: {rate: assumption, size: assumption}
  - id: failover
    kind: failover
    per_year: 4
    size: {fixed: 10s}
    source: {rate: assumption, size: assumption}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"risk", "--lock", "set-nx-cad", "--ttl", "1s", "--seeds", "6", "--profile", prof}
	code, stdout, stderr := cli(t, testHost(t), args...)
	if code != exitSafe {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"long-pause", "n/a: no Sentinel", "total", "sensitivity", "10x:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	code, js, stderr := cli(t, testHost(t), append(args, "--json")...)
	var r risk.Result
	if code != exitSafe || json.Unmarshal([]byte(js), &r) != nil {
		t.Fatalf("--json: exit %d %q %s", code, js, stderr)
	}
	if r.Runs != 6 || len(r.Classes) != 2 || r.Classes[0].Strata == nil || r.PerYear != r.Classes[0].PerYear {
		t.Errorf("--json: %+v", r)
	}
	if _, again, _ := cli(t, testHost(t), append(args, "--json")...); again != js {
		t.Errorf("a second run differs:\n%s\n%s", js, again)
	}
}

func TestRiskFromGCTrace(t *testing.T) {
	for flag, file := range map[string]string{"--from-gctrace": "gctrace.txt", "--from-chrony": "chrony.log", "--from-sentinel": "sentinel.log"} {
		code, stdout, stderr := cli(t, testHost(t), "risk", flag, "../../risk/testdata/"+file)
		if code != exitSafe || !strings.Contains(stderr, "cannot") && !strings.Contains(stderr, " not ") {
			t.Fatalf("%s: exit %d: %s", flag, code, stderr)
		}
		if _, err := risk.Decode([]byte(stdout), "out.yaml"); err != nil {
			t.Errorf("%s: the printed profile does not decode: %v\n%s", flag, err, stdout)
		}
	}
	if code, _, stderr := cli(t, testHost(t), "risk", "--from-chrony", "a", "--from-sentinel", "b"); code != exitUsage || !strings.Contains(stderr, "one log at a time") {
		t.Errorf("two imports: exit %d, %s", code, stderr)
	}
	if code, _, stderr := cli(t, testHost(t), "risk", "--from-gctrace", "../../go.mod"); code != exitUsage || !strings.Contains(stderr, "no gctrace lines") {
		t.Errorf("a file without gctrace lines: exit %d, %s", code, stderr)
	}
}
