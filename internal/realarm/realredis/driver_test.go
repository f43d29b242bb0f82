package realredis

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/run"
)

// script writes an executable shell script into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// gone fails if the process whose pid is in file is still alive, or if a
// process still runs with marker in its command line.
func gone(t *testing.T, pidFile, marker string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the driver never wrote its pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("driver process %d is still alive after the run", pid)
	}
	if out, err := exec.Command("pgrep", "-f", marker).Output(); err == nil && len(out) > 0 {
		t.Errorf("a child of the driver (%q) is still alive after the run: pids %s", marker, strings.TrimSpace(string(out)))
	}
}

// TestBadDrivers: a driver that exits at once, prints garbage, answers an
// unknown request or hangs gives an error naming the driver, the request
// and the line, the verdict unknown, and leaves no process or temp dir.
func TestBadDrivers(t *testing.T) {
	requireRedis(t)
	bin := t.TempDir()
	cases := []struct {
		name, body string
		want       []string
	}{
		{"exits", "echo $$ > PIDFILE\necho 'cannot import lockmodule' >&2\nexit 3\n",
			[]string{"driver exits", "request start", "exited (exit status 3)", "cannot import lockmodule"}},
		{"garbage", "echo $$ > PIDFILE\nread l\necho 'hello, not json'\nsleep 1001.25\n",
			[]string{"driver garbage", "request start", "not a JSON object", `"hello, not json"`}},
		{"unknown", "echo $$ > PIDFILE\nread l\necho '{\"re\":\"start\",\"result\":\"ok\"}'\nread l\necho '{\"re\":\"frobnicate\",\"result\":\"ok\"}'\nsleep 1001.5\n",
			[]string{"driver unknown", "request acquire", `unknown request "frobnicate"`}},
		{"hangs", "echo $$ > PIDFILE\nread l\nsleep 1001.75\n",
			[]string{"driver hangs", "request start", "no reply within 1s"}},
		// A 100 MB line: named by its length, never decoded from its start.
		{"long", "echo $$ > PIDFILE\nread l\nprintf '{\"re\":\"start\",\"result\":\"ok\",\"library\":\"'\nhead -c 100000000 /dev/zero | tr '\\0' x\necho '\"}'\n",
			[]string{"driver long", "request start", "a line longer than 65,536 bytes", `starting "{\"re\":\"start\"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			pidFile := filepath.Join(bin, c.name+".pid")
			marker := ""
			if i := strings.Index(c.body, "sleep 100"); i >= 0 {
				marker = strings.SplitN(c.body[i:], "\n", 2)[0]
			}
			exe := script(t, bin, "driver-"+c.name, strings.ReplaceAll(c.body, "PIDFILE", pidFile))
			d, err := ResolveDriver(exe)
			if err != nil {
				t.Fatal(err)
			}
			d.Name, d.Bound = "driver "+c.name, time.Second
			j := short(t, "no-faults", "set-nx-cad", 1)
			if err := j.WithDriver(d); err != nil {
				t.Fatal(err)
			}
			jd, err := j.RunAndJudge(context.Background(), tmp)
			if err != nil {
				t.Fatal(err)
			}
			if jd.Check.Verdict != checker.VerdictUnknown {
				t.Errorf("verdict %s, want unknown", jd.Check.Verdict)
			}
			if jd.Err == nil {
				t.Fatal("no error")
			}
			t.Logf("%s: %v", c.name, jd.Err)
			for _, w := range c.want {
				if !strings.Contains(jd.Err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, jd.Err)
				}
			}
			if marker != "" {
				gone(t, pidFile, marker)
			} else {
				gone(t, pidFile, "no-such-marker-locksim")
			}
			empty(t, tmp)
		})
	}
}

// TestDriverInterrupted: a run interrupted while its drivers hang ends
// them and removes every temp dir.
func TestDriverInterrupted(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	pidFile := filepath.Join(t.TempDir(), "pid")
	exe := script(t, t.TempDir(), "driver", "echo $$ > "+pidFile+"\nsleep 1002.5\n")
	d, err := ResolveDriver(exe)
	if err != nil {
		t.Fatal(err)
	}
	j := short(t, "no-faults", "set-nx-cad", 1)
	if err := j.WithDriver(d); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	_, err = j.RunAndJudge(ctx, tmp)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err %v, want interrupted", err)
	}
	gone(t, pidFile, "sleep 1002.5")
	empty(t, tmp)
}

// TestWithDriverRefuses: Redlock's independent nodes, a Sentinel-managed
// primary, a fenced storage and a renewing lock's world are handed to a
// driver; version-cas (no lock at all) is refused, naming why.
func TestWithDriverRefuses(t *testing.T) {
	for _, lock := range []string{"redlock", "primary-replica", "fencing", "watchdog"} {
		if err := short(t, "no-faults", lock, 1).WithDriver(&Driver{Name: "x", Argv: []string{"/bin/true"}}); err != nil {
			t.Errorf("%s's world: %v, want it accepted", lock, err)
		}
	}
	for _, tc := range []struct {
		lock, want string
		ttl        time.Duration
	}{{"version-cas", "is no lock", 200 * time.Millisecond}} {
		j, err := Build(run.Spec{Scenario: "no-faults", Lock: tc.lock, Seed: 1}, tc.ttl)
		if err != nil {
			t.Fatal(err)
		}
		err = j.WithDriver(&Driver{Name: "x", Argv: []string{"/bin/true"}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s's world: err %v, want a refusal naming %q", tc.lock, err, tc.want)
		}
	}
}

// TestDriverDetachedChild: a driver whose child leaves its process group
// and session (setsid) and keeps the driver's stdout open leaves nothing
// after a run that ends normally: the child is found by its mark
// (reap.Kill), not by the group. The run first removes what killed runs
// left in the temp folder (a run's dir with an etcd WAL, a driver's dir),
// and nothing else of the folder's (empty checks both).
func TestDriverDetachedChild(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"locksim-real-%d-1/etcd/data/member/wal", "locksim-driver-%d-2"} {
		if err := os.MkdirAll(filepath.Join(tmp, fmt.Sprintf(d, dead.Process.Pid)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	marker := "sleep 1007." + strconv.Itoa(os.Getpid())
	exe := script(t, t.TempDir(), "driver", "echo $$ > "+pidFile+"\nread l\nsetsid sh -c 'exec "+marker+"' &\n"+
		"echo '{\"re\":\"start\",\"result\":\"ok\",\"library\":\"detacher\"}'\n"+
		"while read l; do echo '{\"re\":\"acquire\",\"result\":\"fail\",\"error\":\"never\"}'; done\n")
	d, err := ResolveDriver(exe)
	if err != nil {
		t.Fatal(err)
	}
	j := short(t, "no-faults", "set-nx-cad", 1)
	if err := j.WithDriver(d); err != nil {
		t.Fatal(err)
	}
	if _, err := j.RunAndJudge(context.Background(), tmp); err != nil {
		t.Fatal(err)
	}
	gone(t, pidFile, marker)
	empty(t, tmp)
}
