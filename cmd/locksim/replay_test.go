package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
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
		// The careful workload is part of the run (it diverged at the
		// first section when the header dropped it).
		{"run", "--lock", "set-nx-cad", "--seed", "1", "--scenario", "drift", "--step", "4", "--hold-min", "3s", "--hold-max", "3.6s", "--careful", "--duration", "10s", "--liveness", "5s", "--trace", trace},
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
	// Without its footer: replay compares it line by line
	// (TestReplayEditedFile: with it). This locksim writes a footer on
	// every trace, so one of its own traces without it was cut short, and
	// a difference is a damaged file (exit 64, naming the file and the
	// line), not a determinism bug (a line deleted from a cut
	// trace was exit 70, "please report").
	lines := strings.Split(string(b), "\n")
	if n := len(lines); n < 3 || !strings.HasPrefix(lines[n-2], `{"locksim_end":`) {
		t.Fatalf("the trace does not end with a footer: %q", lines[max(n-3, 0):])
	}
	lines = append(lines[:len(lines)-2], "")
	changed := append([]string(nil), lines...)
	changed[20] = strings.Replace(changed[20], `"k":"`, `"k":"x`, 1)
	tampered := filepath.Join(dir, "tampered.jsonl")
	os.WriteFile(tampered, []byte(strings.Join(changed, "\n")), 0o644)
	code, stdout, stderr := cli(t, testHost(t), "replay", tampered)
	if code != exitUsage || !strings.Contains(stderr, tampered+" is damaged: it has no footer line") || !strings.Contains(stderr, "its line 21 differs") || !strings.Contains(stderr, `"k":"x`) || strings.Contains(stderr, "determinism") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "replay:         DIVERGED at line 21") {
		t.Errorf("summary:\n%s", stdout)
	}
	deleted := filepath.Join(dir, "deleted.jsonl")
	os.WriteFile(deleted, []byte(strings.Join(append(append([]string(nil), lines[:9]...), lines[10:40]...), "\n")+"\n"), 0o644)
	if code, _, stderr := cli(t, testHost(t), "replay", deleted); code != exitUsage || !strings.Contains(stderr, deleted+" is damaged") || !strings.Contains(stderr, "its line 10 differs") || strings.Contains(stderr, "determinism") {
		t.Errorf("a cut trace with a line deleted: exit %d, stderr %q", code, stderr)
	}
	// Written by another version (perhaps before footers): the message
	// says that a change to locksim can change traces.
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
	// A deleted one is not found (it was once reported "changed").
	os.Remove(file)
	code, _, stderr = cli(t, testHost(t), "replay", trace)
	if code != exitUsage || !strings.Contains(stderr, "the scenario file "+file+" is not found") || strings.Contains(stderr, "changed") {
		t.Errorf("deleted file: exit %d, stderr %q", code, stderr)
	}
}

// TestReplayEditedFile: a trace file's footer records its lines' count and
// hashes, so a file edited after it was written (an event's timestamp, the
// header's seed) is an input error (exit 64) named as such, not a
// determinism bug (exit 70) as it once was; a file without a footer
// still replays; and a recording whose footer vouches for it but that
// ends before the run does is a divergence.
func TestReplayEditedFile(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	code, stdout, stderr := cli(t, testHost(t), "run", "--lock", "set-nx-cad", "--seed", "3", "--duration", "10s", "--liveness", "5s", "--trace", trace, "--json")
	if stderr != "" || code == exitInternal || code == exitUsage {
		t.Fatalf("run: %d %q", code, stderr)
	}
	runCode := code
	var r struct {
		TraceSHA256 string `json:"trace_sha256"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines = lines[:len(lines)-1] // the "" after the last newline
	footer := lines[len(lines)-1]
	if !strings.Contains(footer, `"events":`+strconv.Itoa(len(lines)-2)+`,"trace_sha256":"`+r.TraceSHA256+`"`) {
		t.Fatalf("footer %q: want %d events and the run's trace_sha256 %s", footer, len(lines)-2, r.TraceSHA256)
	}
	write := func(name string, ls []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(ls, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edit := func(i int, old, new string) []string {
		ls := append([]string(nil), lines...)
		if !strings.Contains(ls[i], old) {
			t.Fatalf("line %d has no %q: %s", i+1, old, ls[i])
		}
		ls[i] = strings.Replace(ls[i], old, new, 1)
		return ls
	}
	timestamp := regexp.MustCompile(`^\{"t":\d+`).FindString(lines[20])
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"timestamp", edit(20, timestamp, timestamp+"1"), "its event lines hash to sha256"},
		{"seed", edit(0, `"seed":3,`, `"seed":4,`), "the header (line 1) hashes to sha256"},
		{"line removed", append(append([]string(nil), lines[:20]...), lines[21:]...), fmt.Sprintf("it has %d event lines, the footer records %d", len(lines)-3, len(lines)-2)},
		{"footer", edit(len(lines)-1, `"events":`, `"events":1`), "the footer records"},
		{"footer garbled", edit(len(lines)-1, `"trace_sha256"`, `"trace_sha"`), "is not a trace footer"},
	} {
		code, _, stderr := cli(t, testHost(t), "replay", write(c.name+".jsonl", c.lines))
		if code != exitUsage || !strings.Contains(stderr, "was edited or corrupted after it was written") || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "determinism") {
			t.Errorf("%s edited: exit %d, stderr %q (want exit 64 saying %q)", c.name, code, stderr, c.want)
		}
	}
	// Without the footer: a file written before footers, replayed as before.
	if code, stdout, stderr := cli(t, testHost(t), "replay", write("old.jsonl", lines[:len(lines)-1])); code != runCode || !strings.Contains(stdout, "identical to") {
		t.Errorf("without a footer: exit %d (the run's %d), stderr %q", code, runCode, stderr)
	}
	// A footer that vouches for a recording shorter than the run: the run
	// diverged (its trace went on), and the file is intact.
	short := append([]string(nil), lines[:31]...)
	sum := sha256.Sum256([]byte(strings.Join(short[1:], "")))
	var h struct {
		Run run.Header `json:"locksim_run"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil {
		t.Fatal(err)
	}
	f, err := run.NewFooter(h.Run, 30, hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	var fb bytes.Buffer
	run.WriteFooter(&fb, f)
	code, _, stderr = cli(t, testHost(t), "replay", write("short.jsonl", append(short, fb.String())))
	if code != exitInternal || !strings.Contains(stderr, "diverged from the file at line 32") || !strings.Contains(stderr, "recorded: (end of file)") {
		t.Errorf("a vouched-for recording shorter than the run: exit %d, stderr %q", code, stderr)
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
	// A real-arm run's trace, by the real arm's own writer: a history of
	// real processes, which replay names as such (it used to say "line 1 is not
	// a locksim run header").
	real := filepath.Join(dir, "real.jsonl")
	job, err := realredis.BuildScaled(run.Spec{Scenario: "pause-after-check", Lock: "set-nx-cad", Seed: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	evs := []sim.Event{{T: 1e6, Proc: "c0", Kind: event.KindCall, Op: event.OpRead, OpID: 1}}
	jd := &realredis.Judged{Judged: &run.Judged{Job: job.Job, Result: &sim.Result{History: evs}}, Real: job, Info: &realredis.Info{}}
	if err := jd.WriteHistory(real); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "replay: needs a trace file, or --lock and --seed"},
		{[]string{"replay", real}, real + " is the trace of a real-arm run ('locksim run --backend real'): a real run is not replayable; replay works on simulator traces only"},
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
