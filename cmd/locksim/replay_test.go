package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/run"
)

// TestReplayTraceFile: a trace written by run replays event for event; the
// replay prints the same verdict, exit code and hash, and says so.
func TestReplayTraceFile(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	faultsFile := filepath.Join(dir, "f.json")
	if err := os.WriteFile(faultsFile, []byte(`[{"kind":"client-pause","start":1000000000,"duration":4000000000,"targets":["c0"],"at":"before-write"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two runs: the default swarm, and a schedule from a file (the header
	// carries the schedule, not the file's name).
	for _, args := range [][]string{
		{"run", "--lock", "set-nx-cad", "--seed", "3", "--duration", "10s", "--liveness", "5s", "--trace", trace},
		{"run", "--lock", "redlock", "--seed", "4", "--scenario", "no-faults", "--clients", "2", "--duration", "12s", "--liveness", "5s", "--faults", faultsFile, "--trace", trace},
	} {
		code, stdout, stderr := cli(t, testHost(t), args...)
		if stderr != "" || code == exitUsage || code == exitInternal {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		hash := lastLine(stdout)
		if args[4] == "redlock" {
			os.Remove(faultsFile)
		}
		rcode, rout, rerr := cli(t, testHost(t), "replay", trace)
		if rcode != code || rerr != "" {
			t.Fatalf("replay: exit %d (run: %d), stderr %q", rcode, code, rerr)
		}
		if lastLine(rout) != hash || !strings.Contains(rout, "\nreplay:         identical to "+trace+" (") {
			t.Errorf("replay summary:\n%s", rout)
		}
		// --json carries the comparison.
		_, jout, _ := cli(t, testHost(t), "replay", trace, "--json")
		var r struct {
			Verdict string           `json:"verdict"`
			Replay  run.ReplayReport `json:"replay"`
		}
		if err := json.Unmarshal([]byte(jout), &r); err != nil || !r.Replay.Identical || r.Replay.Events < 10 || r.Replay.File != trace {
			t.Errorf("replay --json: %v %+v", err, r)
		}
	}
}

// TestReplayCatchesDivergence: an event changed in the file is found, named
// by its line, and the replay fails with exit 70.
func TestReplayCatchesDivergence(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	if code, _, stderr := cli(t, testHost(t), "run", "--lock", "set-nx-cad", "--seed", "3", "--duration", "10s", "--liveness", "5s", "--trace", trace); stderr != "" || code == exitInternal {
		t.Fatalf("run: %d %q", code, stderr)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	changed := append([]string(nil), lines...)
	changed[20] = strings.Replace(changed[20], `"k":"`, `"k":"x`, 1)
	tampered := filepath.Join(dir, "tampered.jsonl")
	os.WriteFile(tampered, []byte(strings.Join(changed, "\n")), 0o644)
	code, stdout, stderr := cli(t, testHost(t), "replay", tampered)
	if code != exitInternal || !strings.Contains(stderr, "diverged from the file at line 21") || !strings.Contains(stderr, `"k":"x`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "replay:         DIVERGED at line 21") || !strings.Contains(stderr, "a determinism bug") {
		t.Errorf("summary:\n%s", stdout)
	}
	// Written by another version: the message says so instead.
	other := filepath.Join(dir, "other.jsonl")
	os.WriteFile(other, []byte(strings.Replace(strings.Join(changed, "\n"), `"locksim":"`, `"locksim":"locksim v0.0.1 `, 1)), 0o644)
	if code, _, stderr := cli(t, testHost(t), "replay", other); code != exitInternal || !strings.Contains(stderr, "the file was written by locksim v0.0.1") {
		t.Errorf("other version: exit %d, stderr %q", code, stderr)
	}
	// A recording cut short is a damaged file, not a divergence (exit 64),
	// whether cut at a line's end or in the middle of one.
	short := filepath.Join(dir, "short.jsonl")
	os.WriteFile(short, []byte(strings.Join(lines[:30], "\n")+"\n"), 0o644)
	if code, _, stderr := cli(t, testHost(t), "replay", short); code != exitUsage || !strings.Contains(stderr, "is truncated at line 31") || strings.Contains(stderr, "determinism") {
		t.Errorf("short file: exit %d, stderr %q", code, stderr)
	}
	cut := filepath.Join(dir, "cut.jsonl")
	os.WriteFile(cut, []byte(strings.Join(lines[:30], "\n")+"\n"+lines[30][:len(lines[30])/2]), 0o644)
	if code, _, stderr := cli(t, testHost(t), "replay", cut); code != exitUsage || !strings.Contains(stderr, "is truncated at line 31") {
		t.Errorf("file cut mid-line: exit %d, stderr %q", code, stderr)
	}
}

// A trace of a scenario file records the file's hash; replaying it after
// the file changed says so (exit 64) instead of blaming determinism.
func TestReplayScenarioFileChanged(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	data, err := os.ReadFile("../../scenarios/builtin/no-faults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, data, 0o644)
	trace := filepath.Join(dir, "t.jsonl")
	if code, _, stderr := cli(t, testHost(t), "run", "--scenario", file, "--lock", "set-nx-cad", "--seed", "1", "--duration", "2s", "--liveness", "2s", "--trace", trace); code != exitSafe {
		t.Fatalf("run: %d %q", code, stderr)
	}
	if code, _, stderr := cli(t, testHost(t), "replay", trace); code != exitSafe {
		t.Fatalf("replay of the unchanged file: %d %q", code, stderr)
	}
	os.WriteFile(file, append(data, []byte("# edited\n")...), 0o644)
	code, _, stderr := cli(t, testHost(t), "replay", trace)
	if code != exitUsage || !strings.Contains(stderr, "changed since the recording") || strings.Contains(stderr, "determinism") {
		t.Errorf("edited file: exit %d, stderr %q", code, stderr)
	}
}

// TestReplaySeed: without a file, replay runs the seed twice and compares.
func TestReplaySeed(t *testing.T) {
	code, stdout, stderr := cli(t, testHost(t), "replay", "--lock", "redsync", "--seed", "7", "--duration", "10s", "--liveness", "5s")
	if stderr != "" || code == exitInternal || code == exitUsage {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	_, runOut, _ := cli(t, testHost(t), "run", "--lock", "redsync", "--seed", "7", "--duration", "10s", "--liveness", "5s")
	if !strings.Contains(stdout, "\nreplay:         identical in two runs (") || lastLine(stdout) != lastLine(runOut) {
		t.Errorf("replay:\n%s\nrun's last line: %s", stdout, lastLine(runOut))
	}
}

// TestReplayBadInput: one clear line, exit 64.
func TestReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	notTrace := filepath.Join(dir, "x.json")
	os.WriteFile(notTrace, []byte("[]\n"), 0o644)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	badLock := filepath.Join(dir, "badlock.jsonl")
	os.WriteFile(badLock, []byte(`{"locksim_run":{"locksim":"x","scenario":"default","lock":"nope","seed":1,"clients":5,"nodes":1,"duration_ns":1000000000,"liveness_ns":1000000000,"faults":[]}}`+"\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "replay: needs a trace file, or --lock and --seed"},
		{[]string{"replay", filepath.Join(dir, "missing.jsonl")}, "replay: cannot read"},
		{[]string{"replay", notTrace}, "line 1 is not a locksim run header"},
		{[]string{"replay", empty}, "empty file"},
		{[]string{"replay", badLock}, `the header's lock "nope" is not in this locksim's catalogue`},
		{[]string{"replay", notTrace, "--seed", "3"}, "--seed: not with a trace file"},
		{[]string{"replay", "a", "b"}, "accepts at most 1 arg"},
	} {
		code, _, stderr := cli(t, testHost(t), c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q (want one line containing %q)", c.args, code, stderr, c.want)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}
