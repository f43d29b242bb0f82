package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

var lastLineRE = regexp.MustCompile(`^trace sha256: [0-9a-f]{64}$`)

// noHost is the host for commands that must fail before any bubble runs.
func noHost(t *testing.T) host {
	return func(func(sim.Bubble) int) int {
		t.Helper()
		t.Fatal("input was accepted: the run was hosted")
		return -1
	}
}

// testHost runs the body in a synctest bubble hosted by t.
func testHost(t *testing.T) host {
	return func(body func(sim.Bubble) int) int { return body(sim.TestBubble(t)) }
}

// cli runs the CLI in-process.
func cli(t *testing.T, h host, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(args, &out, &errb, h)
	return code, out.String(), errb.String()
}

// short keeps in-process runs quick (also under -race).
var short = []string{"--duration", "10s", "--liveness", "5s"}

// writeScenario writes a minimal scenario file with one extra line.
func writeScenario(t *testing.T, extra string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	body := "id: t\ndescription: x\nsource: y\n" + extra + "\nfaults: []\nlocks: [fencing]\nexpect:\n  fencing: {agreed: safe}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir", "trace.jsonl")
	// Outputs that are not a regular file we may replace: the
	// path must be left untouched (checked after the cases).
	odd := t.TempDir()
	fifo, link, ro, plain := filepath.Join(odd, "fifo"), filepath.Join(odd, "link"), filepath.Join(odd, "ro"), filepath.Join(odd, "plain")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(odd, "target"), link); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ro, plain} {
		if err := os.WriteFile(f, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(ro, 0o444)
	cases := []struct {
		args []string
		want string // the message must start with this (after "locksim: ")
	}{
		{[]string{"run", "--lock", "redlock", "--seed", "abc"}, `--seed: "abc" is not a number (0..18446744073709551615)`},
		{[]string{"run", "--lock", "redlock", "--seed", "-1"}, `--seed: "-1" is out of range (0..18446744073709551615)`},
		{[]string{"run", "--lock", "redlock", "--seed", "18446744073709551616"}, `--seed: "18446744073709551616" is out of range (0..18446744073709551615)`},
		{[]string{"run", "--lock", "redlock", "--seed", "1.5"}, `--seed: "1.5" is not a number`},
		{[]string{"run", "--lock", "redlock"}, `--seed: required (0..18446744073709551615)`},
		{[]string{"run", "--seed", "1"}, `--lock: required (one of: `},
		{[]string{"run", "--lock", "no-such-lock", "--seed", "1"}, `--lock: unknown lock "no-such-lock" (one of: `},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--scenario", "nope"}, `--scenario: unknown scenario "nope" (one of: bg-crash, bg-ntp-step, bg-process-pause, bonus-pool, clock-jump, default`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--clients", "0"}, `--clients: "0" is out of range (1..10000)`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--clients", "10001"}, `--clients: "10001" is out of range (1..10000)`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--clients", "many"}, `--clients: "many" is not a number (1..10000)`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--nodes", "65"}, `--nodes: "65" is out of range (1..64)`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--nodes", "-3"}, `--nodes: "-3" is out of range (1..64)`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--duration", "0s"}, `--duration: "0s" is out of range (1ms..24h0m0s)`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--duration", "-5s"}, `--duration: "-5s" is out of range (1ms..24h0m0s)`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--duration", "25h"}, `--duration: "25h" is out of range (1ms..24h0m0s)`},
		// A duration too short for the faults was once a panic.
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--duration", "1ns"}, `--duration: "1ns" is out of range (1ms..24h0m0s)`},
		{[]string{"run", "--lock", "fencing", "--seed", "1", "--scenario", writeScenario(t, "duration: 1ns")}, `--scenario: `},
		{[]string{"sweep", "--locks", "fencing", "--seeds", "1", "--param", "duration=1ns:2ns:2", "--out", filepath.Join(t.TempDir(), "sw")}, `lock fencing, duration=1e-09: duration: 1ns out of range [1ms, 24h0m0s]`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--liveness", "soon"}, `--liveness: "soon" is not a duration`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--liveness", "0"}, `--liveness: "0" is out of range`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--trace", missing}, `--trace: cannot write `},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--trace", t.TempDir()}, `--trace: "`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--trace", os.DevNull}, `--trace: "` + os.DevNull + `" is a device`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--trace", fifo}, `--trace: "` + fifo + `" is a FIFO`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--trace", link}, `--trace: "` + link + `" is a symbolic link`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--trace", ro}, `--trace: "` + ro + `" is read-only`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--counterexample", plain}, `--counterexample: "` + plain + `" exists and is not a directory`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--trace", ""}, `--trace: empty value`},
		{[]string{"sweep", "--locks", "", "--out", filepath.Join(odd, "sw1")}, `--locks: empty value`},
		{[]string{"sweep", "--param", "clients=1,2", "--param", "nodes=1,2", "--out", filepath.Join(odd, "sw2")}, `--param: given twice ("clients=1,2", then "nodes=1,2")`},
		{[]string{"run", "--lock", "redlock", "--seed"}, `flag needs an argument: --seed`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "--frobnicate"}, `unknown flag: --frobnicate`},
		{[]string{"run", "--lock", "redlock", "--seed", "1", "extra"}, `run: unexpected argument "extra"`},
		{[]string{"rn"}, `unknown command "rn" (did you mean "run"?`},
		{[]string{"list", "faults-and-more"}, `list: unknown list "faults-and-more" (one of: locks, scenarios, bugs)`},
		{[]string{"version", "now"}, `version: unexpected argument "now"`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := cli(t, noHost(t), c.args...)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout not empty: %q", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr is not exactly one line: %q", stderr)
			}
			if want := "locksim: " + c.want; !strings.HasPrefix(stderr, want) {
				t.Errorf("stderr %q\n  does not start with %q", stderr, want)
			}
		})
	}
	// The odd outputs are untouched.
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("%s is no longer a FIFO: %v %v", fifo, st, err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symlink: %v %v", link, st, err)
	}
	for _, f := range []string{ro, plain} {
		if b, err := os.ReadFile(f); err != nil || string(b) != "keep" {
			t.Errorf("%s changed: %q %v", f, b, err)
		}
	}
	if st, err := os.Stat(ro); err != nil || st.Mode().Perm() != 0o444 {
		t.Errorf("%s mode changed: %v %v", ro, st, err)
	}
}

func TestRunSummary(t *testing.T) {
	args := append([]string{"run", "--lock", "set-nx-cad", "--seed", "3"}, short...)
	code, stdout, stderr := cli(t, testHost(t), args...)
	if code != exitSafe && code != exitUnsafe && code != exitLiveness {
		t.Fatalf("exit code %d; stderr: %s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr: %q", stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if last := lines[len(lines)-1]; !lastLineRE.MatchString(last) {
		t.Errorf("last line %q does not match %v", last, lastLineRE)
	}
	for _, key := range []string{"scenario:", "lock:", "seed:", "virtual time:", "events:", "commands:", "faults:", "failovers:", "crashes:", "acquisitions:", "lease overlaps:", "verdict:"} {
		if !strings.Contains(stdout, "\n"+key) && !strings.HasPrefix(stdout, key) {
			t.Errorf("summary has no %q line:\n%s", key, stdout)
		}
	}
	// Same flags, same output, byte for byte.
	code2, stdout2, _ := cli(t, testHost(t), args...)
	if code2 != code || stdout2 != stdout {
		t.Errorf("second run differs: exit %d vs %d\n%s\n---\n%s", code2, code, stdout2, stdout)
	}
}

func TestRunJSONAndTrace(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	args := append([]string{"run", "--lock", "redlock", "--seed", "2", "--json", "--trace", trace}, short...)
	code, stdout, stderr := cli(t, testHost(t), args...)
	if stderr != "" {
		t.Errorf("stderr: %q", stderr)
	}
	if strings.Count(stdout, "\n") != 1 {
		t.Errorf("--json printed %d lines, want one object on one line", strings.Count(stdout, "\n"))
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	for _, k := range []string{"scenario", "lock", "seed", "verdict", "lease_overlaps", "resource_violations", "ownership_violations", "trace_sha256"} {
		if _, ok := r[k]; !ok {
			t.Errorf("JSON has no %q", k)
		}
	}
	if r["scenario"] != "default" || r["lock"] != "redlock" || r["seed"] != 2.0 {
		t.Errorf("scenario/lock/seed = %v/%v/%v", r["scenario"], r["lock"], r["seed"])
	}
	verdict, _ := r["verdict"].(string)
	if want, ok := verdictExit[checker.Verdict(verdict)]; !ok || want != code {
		t.Errorf("verdict %q with exit code %d", verdict, code)
	}
	if _, ok := r["counterexample"]; ok != (verdict == string(checker.VerdictUnsafe)) {
		t.Errorf("counterexample present = %v with verdict %q", ok, verdict)
	}

	// The trace file is complete: a header line naming the run, then the
	// events, whose SHA-256 is the reported hash.
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	header, events, ok := bytes.Cut(b, []byte("\n"))
	if !ok || !bytes.HasPrefix(header, []byte(`{"locksim_run":{`)) || !bytes.Contains(header, []byte(`"lock":"redlock","seed":2,`)) {
		t.Errorf("trace header %q", header)
	}
	// The last line is the footer (TestReplayEditedFile).
	i := bytes.LastIndexByte(events[:max(len(events)-1, 0)], '\n')
	if footer := events[i+1:]; !bytes.HasPrefix(footer, []byte(`{"locksim_end":{`)) || !bytes.Contains(footer, []byte(fmt.Sprint(r["trace_sha256"]))) {
		t.Errorf("trace footer %q", footer)
	}
	events = events[:i+1]
	sum := sha256.Sum256(events)
	if got := hex.EncodeToString(sum[:]); got != r["trace_sha256"] {
		t.Errorf("trace file sha256 %s, reported %v", got, r["trace_sha256"])
	}
	assertOnlyFiles(t, dir, "trace.jsonl")
}

// TestTraceRemovedOnIncompleteRun: a run that stops early (event budget)
// leaves neither the trace file nor its temp file, and its verdict is
// unknown.
func TestTraceRemovedOnIncompleteRun(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	cfg, err := scenarios.Build("default", "redlock", 1, scenarios.Params{Duration: 10 * time.Second, Liveness: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxEvents = 200
	info, _ := catalogue.Get("redlock")
	j := &runJob{job: run.NewJob("default", info, cfg, checker.Options{}), repro: "locksim run --scenario default --lock redlock --seed 1", json: true}
	if err := j.openTrace(trace); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := j.run(sim.TestBubble(t), &out, &errb)
	if code != exitUnknown {
		t.Errorf("exit code %d, want %d (unknown); stderr: %s", code, exitUnknown, errb.String())
	}
	if !strings.Contains(errb.String(), "event budget") {
		t.Errorf("stderr does not say why: %q", errb.String())
	}
	var r run.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != checker.VerdictUnknown || r.Error == "" || r.TraceFile != "" {
		t.Errorf("verdict %q, error %q, trace_file %q", r.Verdict, r.Error, r.TraceFile)
	}
	assertOnlyFiles(t, dir)
}

func assertOnlyFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("files in %s: %v, want %v", dir, got, want)
	}
}

func TestListAndVersion(t *testing.T) {
	code, stdout, stderr := cli(t, noHost(t), "list", "locks")
	if code != 0 || stderr != "" {
		t.Fatalf("list locks: exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	ids := append(catalogue.IDs(), catalogue.RealOnlyIDs()...) // real-only designs are listed, marked
	slices.Sort(ids)
	if len(lines) != len(ids) {
		t.Fatalf("list locks printed %d lines for %d locks:\n%s", len(lines), len(ids), stdout)
	}
	for i, id := range ids {
		info, _ := catalogue.Get(id)
		// A line fits a 100-column terminal: the id, then the source and
		// the weakness as far as they fit; 'list locks ID' has them whole.
		if f := strings.Fields(lines[i]); len(f) == 0 || f[0] != id || utf8.RuneCountInString(lines[i]) > 100 {
			t.Errorf("line %d = %q, want id %s first, at most 100 columns", i, lines[i], id)
		}
		weak := []rune(oneLine(info.Weakness))
		if !strings.Contains(lines[i], string(weak[:min(len(weak), 20)])) {
			t.Errorf("line %d = %q does not start %s's weakness", i, lines[i], id)
		}
		// A lock this binary cannot run (go-zero without its build tag) says so.
		if info.Unavailable != "" && !strings.Contains(lines[i], "[unavailable]") {
			t.Errorf("line %d = %q does not say %s is unavailable", i, lines[i], id)
		}
		// A design only the real arm runs (etcd) says so.
		if info.RealOnly != "" && !strings.Contains(lines[i], "[real arm only]") {
			t.Errorf("line %d = %q does not say %s runs on the real arm only", i, lines[i], id)
		}
		code, one, _ := cli(t, noHost(t), "list", "locks", id)
		if code != 0 || !strings.Contains(one, oneLine(info.Weakness)) || !strings.Contains(one, oneLine(info.Source)) ||
			(info.Unavailable != "" && !strings.Contains(one, oneLine(info.Unavailable))) ||
			(info.RealOnly != "" && !strings.Contains(one, oneLine(info.RealOnly))) {
			t.Errorf("list locks %s: exit %d, want the source, weakness and why unavailable whole:\n%s", id, code, one)
		}
	}
	if code, _, stderr := cli(t, noHost(t), "list", "locks", "nope"); code != exitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("list locks nope: exit %d, %q", code, stderr)
	}

	code, stdout, _ = cli(t, noHost(t), "list", "scenarios")
	if code != 0 || !strings.Contains("\n"+stdout, "\ndefault ") {
		t.Errorf("list scenarios: exit %d:\n%s", code, stdout)
	}
	if n := strings.Count(stdout, "\n"); n != len(scenarios.IDs()) {
		t.Errorf("list scenarios printed %d lines for %d scenarios", n, len(scenarios.IDs()))
	}
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if utf8.RuneCountInString(line) > 100 {
			t.Errorf("list scenarios: %d columns: %q", utf8.RuneCountInString(line), line)
		}
	}
	if code, one, _ := cli(t, noHost(t), "list", "scenarios", "clock-jump"); code != 0 || !strings.Contains(one, "id:           clock-jump\n") || !strings.Contains(one, "source:") {
		t.Errorf("list scenarios clock-jump: exit %d:\n%s", code, one)
	}

	code, stdout, _ = cli(t, noHost(t), "version")
	if code != 0 || !regexp.MustCompile(`^locksim \S+ \(go\S+\)\n$`).MatchString(stdout) {
		t.Errorf("version: exit %d, %q", code, stdout)
	}

	code, stdout, _ = cli(t, noHost(t), "--help")
	if code != 0 || !strings.Contains(stdout, "64  usage or input error") {
		t.Errorf("--help: exit %d, no exit codes:\n%s", code, stdout)
	}
}

// TestBinaryDeterminism builds the real binary and runs the same seed in
// separate processes with GOMAXPROCS=1 and 2: the output, trace hash
// included, must be identical. With LOCKSIM_RACE_CLI=1 a -race build must
// print the same too (slow).
func TestBinaryDeterminism(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	dir := t.TempDir()
	build := func(name string, flags ...string) string {
		bin := filepath.Join(dir, name)
		args := append(append([]string{"build"}, flags...), "-o", bin, ".")
		if out, err := exec.Command(gobin, args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return bin
	}
	run := func(bin string, env []string, args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%s: %v", bin, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}
	hashLine := func(stdout string) string {
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		last := lines[len(lines)-1]
		if !lastLineRE.MatchString(last) {
			t.Fatalf("last line %q does not match %v", last, lastLineRE)
		}
		return last
	}

	bin := build("locksim")
	args := []string{"run", "--lock", "redsync", "--seed", "7"}
	type outcome struct {
		code   int
		stdout string
	}
	var first *outcome
	check := func(label string, bin string, env ...string) {
		code, stdout, stderr := run(bin, env, args...)
		if code != exitSafe && code != exitUnsafe && code != exitLiveness {
			t.Fatalf("%s: exit %d; stderr: %s", label, code, stderr)
		}
		h := hashLine(stdout)
		t.Logf("%s: exit %d, %s", label, code, h)
		if first == nil {
			first = &outcome{code, stdout}
			return
		}
		if h != hashLine(first.stdout) || code != first.code || stdout != first.stdout {
			t.Errorf("%s differs from the first run:\n%s\n--- first ---\n%s", label, stdout, first.stdout)
		}
	}
	check("GOMAXPROCS=1", bin, "GOMAXPROCS=1")
	check("GOMAXPROCS=2", bin, "GOMAXPROCS=2")

	// Through a real process, bad input exits 64 with one line.
	code, stdout, stderr := run(bin, nil, "run", "--lock", "redsync", "--seed", "abc")
	if code != exitUsage || stdout != "" || stderr != "locksim: --seed: \"abc\" is not a number (0..18446744073709551615)\n" {
		t.Errorf("bad seed: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	if os.Getenv("LOCKSIM_RACE_CLI") == "1" {
		race := build("locksim-race", "-race")
		check("-race GOMAXPROCS=1", race, "GOMAXPROCS=1")
		check("-race GOMAXPROCS=4", race, "GOMAXPROCS=4")
	}
}

// TestTraceBound: a trace past --trace-max-mb is not written (a 24 h run
// wrote 3.9 GB); the run says so, leaving no file, and exits with its
// verdict (TestTraceNotWrittenKeepsTheVerdict).
func TestTraceBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	code, _, stderr := cli(t, testHost(t), "run", "--lock", "redlock", "--seed", "1", "--trace", path, "--trace-max-mb", "1")
	if code == exitInternal || code == exitUsage || !strings.Contains(stderr, "not written: the trace passed the bound of 1 MiB") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a trace file was left: %v", err)
	}
	if code, _, stderr := cli(t, testHost(t), "run", "--lock", "redlock", "--seed", "1", "--duration", "2s", "--liveness", "2s", "--trace", path, "--trace-max-mb", "1"); code == exitInternal || code == exitUsage {
		t.Errorf("a short run under the bound: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}
