package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locksim/locksim/internal/realarm/realredis"
)

// redisPIDs is the set of live redis-server processes.
func redisPIDs(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("pgrep", "-a", "redis-server").Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("pgrep: %v", err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if pid, rest, ok := strings.Cut(l, " "); ok {
			m[pid] = rest
		}
	}
	return m
}

// TestRealInterrupt: Ctrl-C in the middle of 'run --backend real' exits
// 130 and leaves no redis-server it started and no temp dir; a bad
// --backend or --ttl is an input error naming the flag.
func TestRealInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	if err := realredis.CheckBinaries(); err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("real-Redis arm skipped: %v", err)
	}
	bin := buildBinary(t)
	for _, args := range [][]string{{"--backend", "nope"}, {"--backend", "real", "--ttl", "1ms"}, {"--ttl", "1s"}} {
		cmd := exec.Command(bin, append([]string{"run", "--scenario", "pause-after-check", "--lock", "set-nx-cad", "--seed", "1"}, args...)...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != exitUsage || !strings.Contains(string(out), "--") {
			t.Errorf("%v: exit %d, %s; want %d naming the flag", args, cmd.ProcessState.ExitCode(), out, exitUsage)
		}
	}
	tmp := t.TempDir()
	before := redisPIDs(t)
	cmd := exec.Command(bin, "run", "--backend", "real", "--scenario", "restart-no-persistence", "--lock", "redlock", "--seed", "1")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	var mine []string
	for pid, c := range redisPIDs(t) {
		if _, old := before[pid]; !old {
			mine = append(mine, pid+" "+c)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d after SIGINT, want 130; stderr %s", code, stderr.String())
	}
	if len(mine) < 5 {
		t.Errorf("while running: %d new redis-server processes, want 5 (%v)", len(mine), mine)
	}
	after := redisPIDs(t)
	for _, m := range mine {
		pid, _, _ := strings.Cut(m, " ")
		if _, alive := after[pid]; alive {
			t.Errorf("after SIGINT: still running: %s", m)
		}
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "locksim-real-*"))
	if len(left) > 0 {
		t.Errorf("temp dirs left: %v", left)
	}
}

// TestSweepReal: 'sweep --backend real' runs its jobs against real Redis
// and records the backend, so a simulator sweep does not resume into its
// folder; an unsupported scenario is refused before anything starts.
func TestSweepReal(t *testing.T) {
	if err := realredis.CheckBinaries(); err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("real-Redis arm skipped: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "sw")
	args := []string{"sweep", "--backend", "real", "--ttl", "200ms", "--scenario", "pause-after-check", "--locks", "fencing", "--seeds", "1", "--out", dir}
	code, _, stderr := cli(t, testHost(t), args...)
	if code != exitSafe {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil || !strings.Contains(string(lines), `"verdict":"safe"`) {
		t.Errorf("results.jsonl: %s %v", lines, err)
	}
	spec, _ := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if !strings.Contains(string(spec), `"backend": "real"`) {
		t.Errorf("sweep.json does not record the backend: %s", spec)
	}
	code, _, stderr = cli(t, testHost(t), "sweep", "--scenario", "pause-after-check", "--locks", "fencing", "--seeds", "1", "--out", dir)
	if code != exitUsage || !strings.Contains(stderr, "backend") {
		t.Errorf("a simulator sweep into the real sweep's folder: exit %d, %s", code, stderr)
	}
	code, _, stderr = cli(t, testHost(t), "sweep", "--backend", "real", "--scenario", "delayed-restart-jump", "--locks", "set-nx-cad", "--seeds", "1", "--out", filepath.Join(t.TempDir(), "f"))
	if code != exitUsage || !strings.Contains(stderr, "not supported by the real backend") {
		t.Errorf("delayed-restart-jump on real Redis: exit %d, %s", code, stderr)
	}
}

// TestRealOutputsUpFront: 'run --backend real' refuses an output it
// could not write before the run starts, as the simulator does (issue
// 41: a read-only folder for --trace ran the whole real run, then said
// "not written", exit 0). Tests run as root, so the folder's mode bits
// are what refuses it; none of these needs redis-server.
func TestRealOutputsUpFront(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", filepath.Join(ro, "x.jsonl")}, fmt.Sprintf("--trace: cannot write %q: %s is read-only", filepath.Join(ro, "x.jsonl"), ro)},
		{[]string{"--trace", filepath.Join(file, "x.jsonl")}, fmt.Sprintf("--trace: cannot write %q: %s is not a directory", filepath.Join(file, "x.jsonl"), file)},
		{[]string{"--trace", ""}, "--trace: empty value"},
		{[]string{"--counterexample", filepath.Join(ro, "cex")}, "--counterexample: cannot create"},
		{[]string{"--counterexample", ""}, "--counterexample: empty value"},
	} {
		for _, backend := range []string{"real", "sim"} {
			args := append([]string{"run", "--backend", backend, "--scenario", "pause-after-check", "--lock", "set-nx-cad", "--seed", "1"}, c.args...)
			code, stdout, stderr := cli(t, noHost(t), args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) || stdout != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d naming %q", args, code, stdout, stderr, exitUsage, c.want)
			}
		}
	}
	if ents, _ := os.ReadDir(ro); len(ents) > 0 {
		t.Errorf("the read-only folder holds %v", ents)
	}
}

// TestRealTempDir: a TMPDIR the real arm cannot make its folders in is an
// input error naming TMPDIR, before anything starts, in every command
// that runs the real arm (it used to be exit 70, "internal error", once the
// run had started).
func TestRealTempDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	out := filepath.Join(dir, "out")
	for _, c := range []struct{ tmp, want string }{
		{filepath.Join(dir, "missing"), fmt.Sprintf("TMPDIR=%q: no such file or directory", filepath.Join(dir, "missing"))},
		{file, fmt.Sprintf("TMPDIR=%q is not a folder", file)},
	} {
		t.Setenv("TMPDIR", c.tmp)
		for _, args := range [][]string{
			{"run", "--backend", "real", "--scenario", "pause-after-check", "--lock", "set-nx-cad", "--seed", "1"},
			{"parity", "--quick", "--out", out},
			{"parity", "--drivers", "../../drivers", "--out", out},
			{"sweep", "--backend", "real", "--scenario", "pause-after-check", "--locks", "set-nx-cad", "--seeds", "1", "--out", out},
		} {
			code, stdout, stderr := cli(t, noHost(t), args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "set TMPDIR") || stdout != "" {
				t.Errorf("TMPDIR=%s %v: exit %d, stdout %q, stderr %q; want %d naming %q", c.tmp, args, code, stdout, stderr, exitUsage, c.want)
			}
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s was created", out)
		}
	}
}

// TestRealDriverStderr: 'run --backend real --driver --json --trace' of a
// driver that crashes with a Python traceback gives its fatal frame in
// the error and each client's whole stderr (bounded) in the JSON
// (driver_stderr) and in a file beside the trace (driver_stderr_file).
func TestRealDriverStderr(t *testing.T) {
	if err := realredis.CheckBinaries(); err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("real-Redis arm skipped: %v", err)
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	dir := t.TempDir()
	src := "import json, sys\nsys.stdin.readline()\nprint(json.dumps({'re': 'start', 'result': 'ok'}), flush=True)\n" +
		"def acquire():\n    raise KeyError('no lock here')\nfor line in sys.stdin:\n    acquire()\n"
	if err := os.WriteFile(filepath.Join(dir, "driver.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "driver")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexec /usr/bin/python3 "+filepath.Join(dir, "driver.py")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "out", "run.jsonl")
	if err := os.Mkdir(filepath.Dir(trace), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, testHost(t), "run", "--backend", "real", "--driver", exe, "--ttl", "200ms", "--scenario", "no-faults", "--seed", "1", "--json", "--trace", trace)
	if code != exitUnknown {
		t.Fatalf("exit %d, want %d (unknown): %s", code, exitUnknown, stderr)
	}
	for _, want := range []string{`its stderr: KeyError: 'no lock here' (File \"` + filepath.Join(dir, "driver.py") + `\", line 5, in acquire)`,
		`"driver_stderr":[{"client":"c0","driver":"driver","bytes":`, `"fatal":"KeyError: 'no lock here' (File`, `Traceback (most recent call last):`,
		`"driver_stderr_file":"` + strings.TrimSuffix(trace, ".jsonl") + `.driver-stderr.txt"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the JSON lacks %s:\n%.3000s", want, stdout)
		}
	}
	b, err := os.ReadFile(realredis.DriverStderrPath(trace))
	if err != nil || !strings.Contains(string(b), "## client c0: ") || !strings.Contains(string(b), "KeyError: 'no lock here'") {
		t.Errorf("the stderr beside the trace: %v\n%s", err, b)
	}
}
