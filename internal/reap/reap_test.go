package reap

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// detaching is a driver-like script whose child leaves its session
// (setsid) and keeps the script's stdout open; both sleep with marker in
// their command line, and write their pids into dir.
func detaching(dir, marker string) *exec.Cmd {
	body := fmt.Sprintf("setsid sh -c 'echo $$ > %s/grandchild; exec sleep %s' &\necho $$ > %s/driver\nexec sleep %s\n",
		dir, marker, dir, marker)
	cmd := exec.Command("/bin/sh", "-c", body)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// waitFor polls cond every 10 ms until it holds or bound passes.
func waitFor(bound time.Duration, cond func() bool) bool {
	for end := time.Now().Add(bound); ; {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func marker() string {
	return fmt.Sprintf("1000.%d%d", os.Getpid(), time.Now().UnixNano()%1e6)
}

// TestKillFindsDetached: Kill(mark) ends the process Start started and its
// child that left the process group and the session (setsid).
func TestKillFindsDetached(t *testing.T) {
	dir, m := t.TempDir(), marker()
	cmd := detaching(dir, m)
	mark, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool {
		_, e1 := os.Stat(filepath.Join(dir, "driver"))
		_, e2 := os.Stat(filepath.Join(dir, "grandchild"))
		return e1 == nil && e2 == nil && running(t, dir, "driver", m) && running(t, dir, "grandchild", m)
	}) {
		t.Fatal("the script and its detached child did not both start")
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what a driver's close does first
	_ = cmd.Wait()
	if !running(t, dir, "grandchild", m) {
		t.Fatal("the detached child died with its process group: the test does not test Kill")
	}
	if n := Kill(mark); n != 1 {
		t.Errorf("Kill signalled %d processes, want 1 (the detached child)", n)
	}
	if !waitFor(5*time.Second, func() bool { return !running(t, dir, "grandchild", m) }) {
		t.Error("the detached child is still alive after Kill")
	}
}

// running reports whether the pid in dir/name is alive with marker in its
// command line (a zombie has none; a reused pid has another).
func running(t *testing.T, dir, name, marker string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("no %s pid file: %v", name, err)
	}
	cl, err := os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/cmdline")
	return err == nil && strings.Contains(string(cl), marker)
}

// ownerRun starts a locksim-like process (this test binary, again) that
// starts a driver-like script through Start whose child detaches (setsid),
// SIGKILLs it once both run, and returns the helper's owner token.
func ownerRun(t *testing.T, dir, m string, watchdog bool) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOwner$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("LOCKSIM_TEST_OWNER=%s %s %v", dir, m, watchdog))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if tok, ok := strings.CutPrefix(sc.Text(), "owner "); ok {
				lines <- tok
				return
			}
		}
		close(lines)
	}()
	var owner string
	select {
	case owner = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not start its driver within 30s")
	}
	if owner == "" {
		t.Fatal("the helper ended before starting its driver")
	}
	for _, f := range []string{"driver", "grandchild"} {
		if !running(t, dir, f, m) {
			t.Fatalf("the %s is not running before the kill", f)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return owner
}

// TestOwnerKilled: a locksim-like process is SIGKILLed while its driver's
// detached child runs: no process of it is left, the driver ended by its
// parent-death signal and the watchdog (which exits after), the detached
// child by the watchdog.
func TestOwnerKilled(t *testing.T) {
	dir, m := t.TempDir(), marker()
	owner := ownerRun(t, dir, m, true)
	for _, f := range []string{"driver", "grandchild"} {
		if !waitFor(10*time.Second, func() bool { return !running(t, dir, f, m) }) {
			t.Errorf("the killed owner's %s is still alive", f)
		}
	}
	if !waitFor(10*time.Second, func() bool { return len(Marked(reaperEnv+"="+owner)) == 0 }) {
		t.Errorf("the watchdog did not exit: %v", Marked(reaperEnv+"="+owner))
	}
}

// TestParentDeathSignal: without the watchdog, the parent-death signal
// alone ends the driver (Start forks from a thread that lives as long as
// its process); its detached child is the watchdog's to end.
func TestParentDeathSignal(t *testing.T) {
	dir, m := t.TempDir(), marker()
	ownerRun(t, dir, m, false)
	if !waitFor(10*time.Second, func() bool { return !running(t, dir, "driver", m) }) {
		t.Errorf("the killed owner's driver is still alive: no parent-death signal")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "grandchild"))
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && running(t, dir, "grandchild", m) {
		_ = syscall.Kill(pid, syscall.SIGKILL) // ours: this test's own cleanup
	}
}

// TestHelperOwner is ownerRun's locksim: it runs only in the child process
// ownerRun starts.
func TestHelperOwner(t *testing.T) {
	arg := os.Getenv("LOCKSIM_TEST_OWNER")
	if arg == "" {
		t.Skip("the child process of TestOwnerKilled")
	}
	f := strings.Fields(arg)
	dir, m := f[0], f[1]
	if f[2] == "false" {
		mu.Lock()
		watchdogErr = fmt.Errorf("off for this test")
		mu.Unlock()
	}
	if _, err := Start(detaching(dir, m)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"driver", "grandchild"} {
		if !waitFor(20*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(dir, f))
			return err == nil && running(t, dir, f, m)
		}) {
			t.Fatalf("the %s does not run", f)
		}
	}
	if err := WatchdogErr(); err != nil && f[2] == "true" {
		t.Fatalf("watchdog: %v", err)
	}
	fmt.Printf("owner %s\n", owner)
	select {} // until SIGKILLed
}

// TestSweepTemp: SweepTemp removes the dirs of dead owners and nothing
// else: not a live owner's (this process's, or a dead pid's whose lock is
// still held, as by an owner in another PID namespace), not a file, a
// link, another prefix or a name that is not prefix-<pid>-<digits>.
func TestSweepTemp(t *testing.T) {
	parent := t.TempDir()
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dp := strconv.Itoa(dead.Process.Pid)
	mk := func(name string) string {
		p := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(p, "etcd", "wal"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk("locksim-real-" + dp + "-123")
	staleLocked := mk("locksim-real-" + dp + "-124") // its unlocked owner file: dead
	if err := os.WriteFile(filepath.Join(staleLocked, ownerFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	held := mk("locksim-real-" + dp + "-125") // a live owner elsewhere holds its lock
	hf, err := os.OpenFile(filepath.Join(held, ownerFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	if err := syscall.Flock(int(hf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	mine, release, err := TempDir(parent, "locksim-real")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	keep := []string{mine, held, mk("locksim-real-notapid"), mk("locksim-real-" + dp), mk("locksim-driver-" + dp + "-1"),
		mk("other-" + dp + "-1"), mk("locksim-real-" + dp + "-12x")}
	file := filepath.Join(parent, "locksim-real-"+dp+"-7")
	if err := os.WriteFile(file, []byte("user data"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := mk("target")
	if err := os.Symlink(target, filepath.Join(parent, "locksim-real-"+dp+"-8")); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, file, target, filepath.Join(parent, "locksim-real-"+dp+"-8"), filepath.Join(target, "etcd", "wal"))

	removed, err := SweepTemp(parent, "locksim-real")
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || removed[0] != stale || removed[1] != staleLocked {
		t.Errorf("removed %q, want %q and %q", removed, stale, staleLocked)
	}
	for _, p := range []string{stale, staleLocked} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	for _, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}
