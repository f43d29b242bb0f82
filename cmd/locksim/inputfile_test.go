//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// specialFiles are paths that name no regular file, each with what the
// error says it is: before internal/inputfile, --scenario /dev/zero and --faults
// /dev/zero read forever (650 MB after 25 s) and a FIFO blocked forever.
func specialFiles(t *testing.T) (dir string, files [][2]string) {
	dir = t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	return dir, [][2]string{{"/dev/zero", "is a device"}, {fifo, "is a named pipe (FIFO)"}, {link, "is a device"}, {dir, "is a directory"}}
}

// specialCases are the command lines that read a user's file, for each
// special file.
func specialCases(files [][2]string) (cases []struct {
	args []string
	want string
}) {
	for _, f := range files {
		p, what := f[0], f[1]
		cases = append(cases,
			struct {
				args []string
				want string
			}{[]string{"run", "--scenario", p, "--lock", "redlock", "--seed", "1"}, p + ": " + what + ", not a scenario file"},
			struct {
				args []string
				want string
			}{[]string{"run", "--faults", p, "--lock", "redlock", "--seed", "1"}, "--faults: \"" + p + "\" " + what + ", not a faults file"},
			struct {
				args []string
				want string
			}{[]string{"replay", p}, "replay: cannot read \"" + p + "\": " + what})
	}
	return cases
}

// TestSpecialInputFiles: a device, a FIFO, a link to a device or a
// directory given as --scenario, --faults or replay's trace is refused at
// once: exit 64 and one line naming the file and what it is.
func TestSpecialInputFiles(t *testing.T) {
	_, files := specialFiles(t)
	for _, c := range specialCases(files) {
		code, _, stderr := cli(t, testHost(t), c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line containing %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}

// TestSpecialInputFilesProcess is TestSpecialInputFiles on the built
// binary: each command ends on its own with the error. (A process that has
// not ended after a minute is killed, so that the old code's endless read
// fails the test rather than hanging it.)
func TestSpecialInputFilesProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildBinary(t)
	_, files := specialFiles(t)
	for _, c := range specialCases(files) {
		cmd := exec.Command(bin, c.args...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done, killed := make(chan struct{}), make(chan bool, 1)
		go func() {
			select {
			case <-done:
				killed <- false
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				killed <- true
			}
		}()
		cmd.Wait()
		close(done)
		if <-killed {
			t.Errorf("%v: still running after a minute (killed)", c.args)
			continue
		}
		if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(out.String(), c.want) {
			t.Errorf("%v: exit %d, output %q; want %d and %q", c.args, code, out.String(), exitUsage, c.want)
		}
	}
}
