package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/sim"
)

// tinySweep is a 12-job sweep that runs in well under a second (also
// under -race): 2 values × 2 locks × 3 seeds of the no-faults world.
func tinySweep(out string, extra ...string) []string {
	args := []string{"sweep", "--scenario", "no-faults", "--locks", "set-nx-cad,fencing", "--seeds", "3",
		"--param", "clients=2:3:2", "--duration", "2s", "--liveness", "2s", "--out", out, "--charts=false"}
	return append(args, extra...)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// setProgressEvery sets how often progress lines are printed, for one test.
func setProgressEvery(t *testing.T, d time.Duration) {
	old := progressEvery
	progressEvery = d
	t.Cleanup(func() { progressEvery = old })
}

// A sweep or report whose stderr is no terminal prints a plain progress
// line every progressEvery (every run here): done/total, rate, ETA.
func TestProgressLines(t *testing.T) {
	setProgressEvery(t, 0)
	dir := filepath.Join(t.TempDir(), "sweep")
	code, _, stderr := cli(t, testHost(t), tinySweep(dir)...)
	if code != exitSafe {
		t.Fatalf("exit %d; stderr: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	re := regexp.MustCompile(`^locksim: sweep: (\d+)/12 runs, \d+ runs/s, ETA (\d+(h|m|s|ms|µs|ns))+$`)
	if len(lines) != 11 {
		t.Fatalf("%d progress lines, want 11 (one per run but the last):\n%s", len(lines), stderr)
	}
	for i, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil || m[1] != strconv.Itoa(i+1) {
			t.Errorf("line %d: %q", i, l)
		}
	}
}

func TestSweepWritesResults(t *testing.T) {
	setProgressEvery(t, time.Hour)
	dir := filepath.Join(t.TempDir(), "sweep")
	code, stdout, stderr := cli(t, testHost(t), tinySweep(dir, "--charts")...)
	if code != exitSafe {
		t.Fatalf("exit %d; stderr: %s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr (no terminal: no progress bar): %q", stderr)
	}
	for _, want := range []string{"clients  lock", "set-nx-cad", "fencing", "results: ", "charts: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	lines := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(dir, sweep.ResultsFile)), "\n"), "\n")
	if len(lines) != 12 {
		t.Fatalf("%d lines, want 12", len(lines))
	}
	wantKeys := []string{"job", "scenario", "lock", "seed", "param", "value", "verdict", "claim", "lease_overlaps",
		"resource_violations", "porcupine", "ownership_violations", "trace_sha256"}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, k := range wantKeys {
			if _, ok := m[k]; !ok {
				t.Errorf("line %d has no %q: %s", i+1, k, l)
			}
		}
		if int(m["job"].(float64)) != i {
			t.Errorf("line %d is job %v: not in job order", i+1, m["job"])
		}
	}
	// Job order: value, then lock, then seed.
	var first, last sweep.Line
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[11]), &last)
	if first.Lock != "set-nx-cad" || first.Seed != 1 || *first.Value != 2 || last.Lock != "fencing" || last.Seed != 3 || *last.Value != 3 {
		t.Errorf("first %+v, last %+v", first, last)
	}
	csv := readFile(t, filepath.Join(dir, sweep.CSVFile))
	if n := strings.Count(csv, "\n"); n != 13 || !strings.HasPrefix(csv, "job,scenario,lock,seed,param,value,verdict") {
		t.Errorf("results.csv: %d lines:\n%s", n, csv)
	}
	for _, f := range []string{"rates-unsafe.png", "rates-unsafe.svg", "rates-overlap.png", "rates-resource.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// A rerun finds every job done: the same files.
	before := readFile(t, filepath.Join(dir, sweep.ResultsFile))
	code, _, stderr = cli(t, testHost(t), tinySweep(dir)...)
	if code != exitSafe || readFile(t, filepath.Join(dir, sweep.ResultsFile)) != before {
		t.Errorf("rerun of a complete sweep: exit %d, stderr %q, or the results changed", code, stderr)
	}
}

// runSweepDirect runs a sweep's options with a hook, in-process.
func runSweepDirect(t *testing.T, dir string, workers int, ctx context.Context, after func(int), extra ...string) sweep.Status {
	t.Helper()
	var stdout, stderr bytes.Buffer
	f := newSweepFlags()
	cmd := f.command(&stdout, &stderr, noHost(t), new(int))
	args := append(tinySweep(dir, extra...)[1:], "-j", fmt.Sprint(workers))
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	opts, err := f.options(cmd, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	opts.afterLine = after
	opts.signals = false
	st, err := opts.run(ctx, sim.TestBubble(t))
	if err != nil {
		t.Fatalf("sweep: %v; stderr %s", err, stderr.String())
	}
	return st
}

// TestSweepResume interrupts a sweep after K lines (as Ctrl-C does: the
// running jobs finish), reruns it, and compares the results with an
// uninterrupted run byte for byte.
func TestSweepResume(t *testing.T) {
	whole := filepath.Join(t.TempDir(), "whole")
	if st := runSweepDirect(t, whole, 1, context.Background(), nil); st.Interrupted || st.Done != 12 {
		t.Fatalf("uninterrupted run: %+v", st)
	}
	want := readFile(t, filepath.Join(whole, sweep.ResultsFile))
	for _, k := range []int{1, 4, 7} {
		t.Run(fmt.Sprint("after ", k), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "resumed")
			ctx, cancel := context.WithCancel(context.Background())
			// One worker: at most two more jobs start before the pool
			// stops, so the run is surely cut short.
			st := runSweepDirect(t, dir, 1, ctx, func(n int) {
				if n == k {
					cancel()
				}
			})
			cancel()
			if !st.Interrupted && st.Done == 12 {
				t.Skip("every job finished before the cancellation took effect")
			}
			if !st.Interrupted || st.Done < k || st.Done >= 12 {
				t.Fatalf("interrupted run: %+v", st)
			}
			part := readFile(t, filepath.Join(dir, sweep.ResultsFile))
			if !strings.HasPrefix(want, part) || !strings.HasSuffix(part, "\n") {
				t.Fatalf("the interrupted run's file is not a whole-line prefix of the full results:\n%s", part)
			}
			if _, err := os.Stat(filepath.Join(dir, sweep.CSVFile)); err == nil {
				t.Error("an interrupted sweep wrote results.csv")
			}
			st = runSweepDirect(t, dir, 2, context.Background(), nil)
			if st.Interrupted || st.Done != 12 {
				t.Fatalf("resumed run: %+v", st)
			}
			if got := readFile(t, filepath.Join(dir, sweep.ResultsFile)); got != want {
				t.Errorf("resumed results differ from the uninterrupted run:\n%s\n--- want ---\n%s", got, want)
			}
			if readFile(t, filepath.Join(dir, sweep.CSVFile)) != readFile(t, filepath.Join(whole, sweep.CSVFile)) {
				t.Error("results.csv differs")
			}
		})
	}
}

// TestSweepTornLine: a last line without its newline (the process died
// mid-write) is discarded and that job runs again.
func TestSweepTornLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "torn")
	runSweepDirect(t, dir, 2, context.Background(), nil)
	path := filepath.Join(dir, sweep.ResultsFile)
	want := readFile(t, path)
	lines := strings.SplitAfter(want, "\n")
	torn := strings.Join(lines[:7], "") + lines[7][:len(lines[7])/2]
	if err := os.WriteFile(path, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, testHost(t), tinySweep(dir)...)
	if code != exitSafe || !strings.Contains(stderr, "discarded a torn last line") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if got := readFile(t, path); got != want {
		t.Errorf("after the torn line:\n%s\n--- want ---\n%s", got, want)
	}
}

// TestShardsMergeToTheUnshardedRun: 3 shards merged equal the unsharded
// run byte for byte (results.jsonl, results.csv, sweep.json).
func TestShardsMergeToTheUnshardedRun(t *testing.T) {
	base := t.TempDir()
	whole := filepath.Join(base, "whole")
	if code, _, stderr := cli(t, testHost(t), tinySweep(whole)...); code != exitSafe {
		t.Fatalf("unsharded: exit %d: %s", code, stderr)
	}
	var shards []string
	for i := 0; i < 3; i++ {
		d := filepath.Join(base, fmt.Sprintf("shard-%d", i))
		code, _, stderr := cli(t, testHost(t), tinySweep(d, "--shard", fmt.Sprintf("%d/3", i))...)
		if code != exitSafe {
			t.Fatalf("shard %d: exit %d: %s", i, code, stderr)
		}
		n := strings.Count(readFile(t, filepath.Join(d, sweep.ResultsFile)), "\n")
		if n != 4 {
			t.Errorf("shard %d has %d lines, want 4", i, n)
		}
		shards = append(shards, d)
	}
	merged := filepath.Join(base, "merged")
	// Any order of the inputs.
	args := append([]string{"merge", "--charts=false", "--out", merged}, shards[2], shards[0], shards[1])
	code, stdout, stderr := cli(t, noHost(t), args...)
	if code != exitSafe {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "results: ") {
		t.Errorf("merge printed no summary:\n%s", stdout)
	}
	for _, f := range []string{sweep.ResultsFile, sweep.CSVFile, sweep.SpecFile} {
		if readFile(t, filepath.Join(merged, f)) != readFile(t, filepath.Join(whole, f)) {
			t.Errorf("merged %s differs from the unsharded run's", f)
		}
	}

	// Merging again into the same folder is fine; into another sweep's
	// folder it is refused, and that folder is untouched.
	if code, _, stderr := cli(t, noHost(t), args...); code != exitSafe {
		t.Errorf("merge again: exit %d: %s", code, stderr)
	}
	otherSweep := filepath.Join(base, "other-sweep")
	if code, _, stderr := cli(t, testHost(t), append(tinySweep(otherSweep), "--first-seed", "5")...); code != exitSafe {
		t.Fatalf("other sweep: exit %d: %s", code, stderr)
	}
	before := readFile(t, filepath.Join(otherSweep, sweep.ResultsFile))
	code, _, stderr = cli(t, noHost(t), append([]string{"merge", "--charts=false", "--out", otherSweep}, shards...)...)
	if code != exitUsage || !strings.Contains(stderr, "holds a different sweep") {
		t.Errorf("merge onto another sweep's folder: exit %d, %q", code, stderr)
	}
	if readFile(t, filepath.Join(otherSweep, sweep.ResultsFile)) != before {
		t.Error("the other sweep's results were overwritten")
	}

	// Merge refuses what is not one complete sweep.
	other := filepath.Join(base, "other")
	cli(t, testHost(t), append(tinySweep(other, "--shard", "1/3"), "--first-seed", "9")...)
	partial := filepath.Join(base, "partial")
	os.MkdirAll(partial, 0o755)
	os.WriteFile(filepath.Join(partial, sweep.SpecFile), []byte(readFile(t, filepath.Join(shards[1], sweep.SpecFile))), 0o644)
	lines := strings.SplitAfter(readFile(t, filepath.Join(shards[1], sweep.ResultsFile)), "\n")
	os.WriteFile(filepath.Join(partial, sweep.ResultsFile), []byte(strings.Join(lines[:2], "")), 0o644)
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{shards[0], shards[1]}, "shard 2/3 is missing"},
		{[]string{shards[0], shards[0], shards[2]}, "are both shard 0/3"},
		{[]string{shards[0], other, shards[2]}, "is a different sweep"},
		{[]string{shards[0], partial, shards[2]}, "shard 1/3 has 2 of its 4 jobs"},
		{[]string{shards[0], filepath.Join(base, "nope")}, "not a sweep directory"},
	} {
		code, _, stderr := cli(t, noHost(t), append([]string{"merge", "--charts=false", "--out", filepath.Join(base, "m2")}, c.dirs...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("merge %v: exit %d, stderr %q, want one line with %q", c.dirs, code, stderr, c.want)
		}
	}
}

// TestSweepWorkersAgree: 1 worker and 4 workers (concurrent bubbles in
// one process) write the same bytes.
func TestSweepWorkersAgree(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	runSweepDirect(t, a, 1, context.Background(), nil)
	runSweepDirect(t, b, 4, context.Background(), nil)
	if readFile(t, filepath.Join(a, sweep.ResultsFile)) != readFile(t, filepath.Join(b, sweep.ResultsFile)) {
		t.Error("-j 1 and -j 4 differ")
	}
}

func TestSweepBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"sweep"}, "--out: required"},
		{[]string{"sweep", "--out", dir, "--scenario", "nope"}, `--scenario: unknown scenario "nope"`},
		{[]string{"sweep", "--out", dir, "--locks", "redlock,nope"}, `--locks: unknown lock "nope"`},
		{[]string{"sweep", "--out", dir, "--locks", "redlock,redlock"}, `--locks: "redlock" appears twice`},
		{[]string{"sweep", "--out", dir, "--seeds", "0"}, `--seeds: "0" is out of range`},
		{[]string{"sweep", "--out", dir, "--param", "frob=1:2:3"}, `--param: unknown parameter "frob"`},
		{[]string{"sweep", "--out", dir, "--param", "clients"}, `--param: "clients": want name=from:to:steps`},
		{[]string{"sweep", "--out", dir, "--param", "clients=1:4:3"}, "--param: clients: value 2.5 is not a whole number"},
		{[]string{"sweep", "--out", dir, "--param", "clients=0:4:5"}, "--param: clients: value 0 out of range [1, 10000]"},
		{[]string{"sweep", "--out", dir, "--param", "duration=0:4:5"}, "--param: duration: value 0 out of range (0, 86400]"},
		{[]string{"sweep", "--out", dir, "--param", "pause=0:1:0"}, `--param: pause: steps "0" out of range (1..1000)`},
		{[]string{"sweep", "--out", dir, "--param", "pause=a:1:2"}, `--param: pause: "a" is not a number`},
		{[]string{"sweep", "--out", dir, "--param", "pause=1,1"}, "--param: pause: value 1 appears twice"},
		{[]string{"sweep", "--out", dir, "--shard", "3/3"}, `--shard: "3/3": want 0 <= i < n`},
		{[]string{"sweep", "--out", dir, "--shard", "x"}, `--shard: "x": want i/n`},
		{[]string{"sweep", "--out", dir, "--locks", "redlock", "--param", "pause=5:5:1", "--duration", "10s"}, "lock redlock, pause=5: pause: a 50s pause"},
		{[]string{"sweep", "--out", dir, "-j", "0"}, `--jobs: "0" is out of range`},
		{[]string{"sweep", "--out", dir, "extra"}, `sweep: unexpected argument "extra"`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := cli(t, noHost(t), c.args...)
			if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "locksim: "+c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 64 and one line starting %q", code, stdout, stderr, "locksim: "+c.want)
			}
		})
	}
	// A different sweep in the same directory is refused.
	d := filepath.Join(dir, "s")
	if code, _, stderr := cli(t, testHost(t), tinySweep(d)...); code != exitSafe {
		t.Fatal(stderr)
	}
	more := tinySweep(d)
	more[slices.Index(more, "--seeds")+1] = "4" // a flag given twice is refused
	code, _, stderr := cli(t, noHost(t), more...)
	if code != exitUsage || !strings.Contains(stderr, "holds a different sweep (scenario no-faults, locks set-nx-cad,fencing, 3 seeds from 1, clients=2,3; first difference: seeds is 3 there, 4 here)") {
		t.Errorf("different sweep: exit %d, %q", code, stderr)
	}
}

// buildBinary builds the CLI into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	bin := filepath.Join(t.TempDir(), "locksim")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestSweepBinary builds the CLI and runs a sweep with worker processes:
// it writes the same bytes as the in-process run; SIGINT finishes the
// running jobs, exits 130, and a rerun completes the same results.
func TestSweepBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	base := t.TempDir()
	bin := buildBinary(t)
	inproc := filepath.Join(base, "inproc")
	if code, _, stderr := cli(t, testHost(t), tinySweep(inproc)...); code != exitSafe {
		t.Fatal(stderr)
	}
	procs := filepath.Join(base, "procs")
	out, err := exec.Command(bin, append(tinySweep(procs), "-j", "3")...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if readFile(t, filepath.Join(procs, sweep.ResultsFile)) != readFile(t, filepath.Join(inproc, sweep.ResultsFile)) {
		t.Error("worker processes and the in-process run differ")
	}

	// Ctrl-C: a bigger sweep, interrupted once a few lines are there.
	big := func(dir string) []string {
		return []string{"sweep", "--scenario", "no-faults", "--locks", "set-nx-cad", "--seeds", "60", "--duration", "5s", "--liveness", "2s", "--out", dir, "-j", "2"}
	}
	dir := filepath.Join(base, "sigint")
	cmd := exec.Command(bin, big(dir)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, sweep.ResultsFile)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(path); bytes.Count(b, []byte("\n")) >= 3 {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	part := readFile(t, path)
	if code == exitSafe {
		t.Skip("the sweep finished before the signal")
	}
	if code != exitInterrupted || !strings.Contains(stderr.String(), "run the same command again to resume") {
		t.Fatalf("SIGINT: exit %d (%v), stderr %q", code, err, stderr.String())
	}
	if !strings.HasSuffix(part, "\n") || strings.Count(part, "\n") >= 60 {
		t.Fatalf("after SIGINT the file has %d lines and ends %q", strings.Count(part, "\n"), part[max(0, len(part)-20):])
	}
	if out, err := exec.Command(bin, big(dir)...).CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	whole := filepath.Join(base, "whole")
	if out, err := exec.Command(bin, big(whole)...).CombinedOutput(); err != nil {
		t.Fatalf("whole: %v\n%s", err, out)
	}
	if readFile(t, path) != readFile(t, filepath.Join(whole, sweep.ResultsFile)) {
		t.Error("interrupted and resumed results differ from an uninterrupted run")
	}
}

// TestSweepPauseShort: with a safety phase too short for c0 to reach its
// write in time, some runs of a pause sweep cannot pause in full: they are
// marked pause_short in results.jsonl and the CSV, left out of the rates,
// and counted in the table's last column.
func TestSweepPauseShort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sweep")
	args := []string{"sweep", "--scenario", "no-faults", "--locks", "set-nx-cad", "--seeds", "8", "--param", "pause=1",
		"--duration", "7s", "--liveness", "2s", "--out", dir, "--charts=false"}
	code, stdout, stderr := cli(t, testHost(t), args...)
	if code != exitSafe || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	short := 0
	for _, l := range strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(dir, sweep.ResultsFile)), "\n"), "\n") {
		var sl sweep.Line
		if err := json.Unmarshal([]byte(l), &sl); err != nil {
			t.Fatal(err)
		}
		if sl.PauseShort {
			short++
		}
	}
	if short == 0 || short == 8 {
		t.Fatalf("%d of 8 runs pause_short; this test needs some of each", short)
	}
	if csv := readFile(t, filepath.Join(dir, sweep.CSVFile)); strings.Count(csv, ",true\n") != short || !strings.Contains(csv, ",error,pause_short\n") {
		t.Errorf("CSV does not mark the %d short runs:\n%s", short, csv)
	}
	var row string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "1 ") {
			row = l
		}
	}
	f := strings.Fields(row)
	if !strings.Contains(stdout, "pause short (left out)") || len(f) < 3 || f[2] != strconv.Itoa(8-short) || f[len(f)-1] != strconv.Itoa(short) {
		t.Errorf("table row %q: want %d runs counted and %d left out\n%s", row, 8-short, short, stdout)
	}
}

// TestEmptyShard: with more shards than jobs (an Indexed Job with more
// pods than jobs) a shard with no job is a complete, empty result, and
// merging every shard equals the unsharded run.
func TestEmptyShard(t *testing.T) {
	base := t.TempDir()
	whole := filepath.Join(base, "whole")
	if code, _, stderr := cli(t, testHost(t), tinySweep(whole)...); code != exitSafe {
		t.Fatalf("unsharded: exit %d: %s", code, stderr)
	}
	jobs := strings.Count(readFile(t, filepath.Join(whole, sweep.ResultsFile)), "\n")
	n := jobs + 2
	args := []string{"merge", "--charts=false", "--out", filepath.Join(base, "merged")}
	for i := 0; i < n; i++ {
		d := filepath.Join(base, fmt.Sprintf("shard-%d", i))
		code, _, stderr := cli(t, testHost(t), tinySweep(d, "--shard", fmt.Sprintf("%d/%d", i, n))...)
		if code != exitSafe {
			t.Fatalf("shard %d/%d: exit %d: %s", i, n, code, stderr)
		}
		if i >= jobs {
			if got := readFile(t, filepath.Join(d, sweep.ResultsFile)); got != "" {
				t.Errorf("empty shard %d/%d: results %q, want an empty file", i, n, got)
			}
		}
		args = append(args, d)
	}
	if code, _, stderr := cli(t, noHost(t), args...); code != exitSafe {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	if readFile(t, filepath.Join(base, "merged", sweep.ResultsFile)) != readFile(t, filepath.Join(whole, sweep.ResultsFile)) {
		t.Error("the merge of every shard differs from the unsharded run")
	}
}

// TestSweepFolderLocked: a second sweep into a folder another sweep is
// writing is refused with the owner's pid (two at once wrote duplicate
// lines); once the first is done, the folder is free again.
func TestSweepFolderLocked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sw")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := sweep.LockDir(dir) // the first sweep, as another process would hold it
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, testHost(t), tinySweep(dir)...)
	want := fmt.Sprintf("in use by another locksim sweep (pid %d)", os.Getpid())
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, want) {
		t.Errorf("second sweep: exit %d, stdout %q, stderr %q; want exit %d naming %q", code, stdout, stderr, exitUsage, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, sweep.ResultsFile)); len(b) != 0 {
		t.Errorf("the refused sweep wrote results: %q", b)
	}
	unlock()
	if code, _, stderr := cli(t, testHost(t), tinySweep(dir)...); code != exitSafe {
		t.Errorf("after the first sweep ended: exit %d, %s", code, stderr)
	}
}

// TestWorkersBounded: -j beyond what the machine holds is lowered, and
// the sweep says so (1024 workers of ~40 MB each outgrew a 24 GB machine).
func TestWorkersBounded(t *testing.T) {
	n, note := boundWorkers(1024)
	if n > 4*runtime.NumCPU() || note == "" || !strings.Contains(note, "-j 1024 lowered to") {
		t.Errorf("boundWorkers(1024) = %d, %q", n, note)
	}
	if n, note := boundWorkers(1); n != 1 || note != "" {
		t.Errorf("boundWorkers(1) = %d, %q", n, note)
	}
	dir := filepath.Join(t.TempDir(), "sw")
	code, _, stderr := cli(t, testHost(t), append(tinySweep(dir), "-j", "1024")...)
	if code != exitSafe || !strings.Contains(stderr, "-j 1024 lowered to") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestSweepScenarioFileSweep: a scenario file's own sweep: block is what
// 'sweep' varies when no --param is given; each job is the run 'run
// --step N' names (the same trace), and a file edited since the sweep
// began is a different sweep.
func TestSweepScenarioFileSweep(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "drift3.yaml")
	src := strings.Replace(readFile(t, "../../scenarios/builtin/drift.yaml"), "id: drift", "id: drift3", 1)
	src = regexp.MustCompile(`(?m)^sweep: .*$`).ReplaceAllString(src, `sweep: {name: "faults[*].drift_ppm", from: 0, to: 200000, steps: 3}`)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sw")
	args := []string{"sweep", "--scenario", file, "--locks", "redlock", "--seeds", "2", "--duration", "5s", "--liveness", "2s", "--out", out, "--charts=false"}
	code, stdout, stderr := cli(t, testHost(t), args...)
	if code != exitSafe {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "sweep:faults[*].drift_ppm") {
		t.Errorf("the table does not name the file's parameter:\n%s", stdout)
	}
	var lines []sweep.Line
	for _, l := range strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(out, sweep.ResultsFile)), "\n"), "\n") {
		var sl sweep.Line
		if err := json.Unmarshal([]byte(l), &sl); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, sl)
	}
	if len(lines) != 6 || lines[0].Param != "sweep:faults[*].drift_ppm" || *lines[0].Value != 0 || *lines[5].Value != 200000 {
		t.Fatalf("lines: %+v", lines)
	}
	// The last job (step 2, seed 2) is 'run --step 2 --seed 2'.
	code, stdout, stderr = cli(t, testHost(t), "run", "--scenario", file, "--lock", "redlock", "--seed", "2", "--step", "2", "--duration", "5s", "--liveness", "2s", "--json")
	var rep struct {
		TraceSHA256 string `json:"trace_sha256"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.TraceSHA256 != lines[5].TraceSHA256 {
		t.Errorf("run --step 2: exit %d, trace %q, the sweep's line has %q (%v; %s)", code, rep.TraceSHA256, lines[5].TraceSHA256, err, stderr)
	}
	// Edit the file: the folder holds another sweep now.
	if err := os.WriteFile(file, []byte(src+"\n# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cli(t, noHost(t), args...)
	if code != exitUsage || !strings.Contains(stderr, "first difference: scenario_sha256") {
		t.Errorf("edited file: exit %d, %q", code, stderr)
	}
}

// A sweep with a result store, run again into a new folder with the same
// store, reruns nothing and writes the same files byte for byte; the
// store's line says so. The real arm refuses --cache.
func TestSweepResultStore(t *testing.T) {
	setProgressEvery(t, time.Hour)
	cache := filepath.Join(t.TempDir(), "cache")
	var dirs []string
	for i, want := range []string{"0 of 12 runs", "12 of 12 runs"} {
		dir := filepath.Join(t.TempDir(), "sweep")
		dirs = append(dirs, dir)
		code, _, stderr := cli(t, testHost(t), tinySweep(dir, "--charts", "--cache", cache)...)
		if code != exitSafe {
			t.Fatalf("sweep %d: exit %d; stderr: %s", i+1, code, stderr)
		}
		if line := "locksim: sweep: " + want + " from the result store " + cache + "\n"; stderr != line {
			t.Errorf("sweep %d: stderr %q, want %q", i+1, stderr, line)
		}
	}
	entries, err := os.ReadDir(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 4 {
		t.Fatalf("the first sweep wrote only %d files", len(entries))
	}
	for _, e := range entries {
		if e.Name() == sweep.LockFile {
			continue
		}
		if a, b := readFile(t, filepath.Join(dirs[0], e.Name())), readFile(t, filepath.Join(dirs[1], e.Name())); a != b {
			t.Errorf("%s differs between the sweep that ran and the one from the store", e.Name())
		}
	}
	code, _, stderr := cli(t, testHost(t), tinySweep(filepath.Join(t.TempDir(), "real"), "--backend", "real", "--cache", cache)...)
	if code != exitUsage || !strings.Contains(stderr, "--cache: only with --backend sim") {
		t.Errorf("--backend real --cache: exit %d, stderr %q", code, stderr)
	}
}
