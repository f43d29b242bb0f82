package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/outfile"
)

// TestCounterexampleUnwritableRefusedUpFront: a
// --counterexample folder that cannot be written is refused before the
// run (exit 64, one line), as --trace is; it ran the whole run, then
// exited 70 with no summary. The folders are left as they were.
func TestCounterexampleUnwritableRefusedUpFront(t *testing.T) {
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	cases := []struct{ dir, want string }{
		{ro, `--counterexample: "` + ro + `" is read-only`},
		{filepath.Join(ro, "cex", "deeper"), `--counterexample: cannot create "` + filepath.Join(ro, "cex", "deeper") + `": ` + ro + ` is read-only`},
	}
	// Mode bits that allow a write the file system refuses (sysfs).
	if f, err := os.CreateTemp("/sys/kernel", ".probe-*"); err == nil {
		f.Close()
		os.Remove(f.Name())
	} else if st, serr := os.Stat("/sys/kernel"); serr == nil && st.Mode().Perm()&0o200 != 0 {
		cases = append(cases, struct{ dir, want string }{"/sys/kernel/locksim-cex", `--counterexample: cannot create "/sys/kernel/locksim-cex": `})
	}
	for _, c := range cases {
		code, stdout, stderr := cli(t, noHost(t), append([]string{"run", "--lock", "set-nx-cad", "--seed", "1", "--counterexample", c.dir}, short...)...)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "locksim: "+c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 64, one line starting %q", c.dir, code, stdout, stderr, c.want)
		}
	}
	if ents, err := os.ReadDir(ro); err != nil || len(ents) != 0 {
		t.Errorf("the read-only folder holds %v (%v)", ents, err)
	}
}

// TestTraceNotWrittenKeepsTheVerdict: a trace that
// cannot be written (a full disk; past --trace-max-mb) turned the verdict
// into exit 70 with no summary. The run's summary and exit code are the
// verdict's, as without --trace; the summary and stderr say the trace was
// not written and why; no file, and no temp file, is left.
func TestTraceNotWrittenKeepsTheVerdict(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	saved := outfile.Sink
	t.Cleanup(func() { outfile.Sink = saved })
	for _, c := range []struct {
		name  string
		args  []string
		sink  func(*os.File) io.Writer
		extra []string
		why   string
	}{
		{"full disk", append([]string{"run", "--lock", "set-nx-cad", "--seed", "3"}, short...), func(*os.File) io.Writer { return full }, nil,
			"no space left on device"},
		// The default world's trace passes 1 MiB.
		{"--trace-max-mb", []string{"run", "--lock", "redlock", "--seed", "1"}, saved, []string{"--trace-max-mb", "1"},
			"the trace passed the bound of 1 MiB (--trace-max-mb)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode, want, _ := cli(t, testHost(t), c.args...)
			if !strings.Contains(want, "trace sha256: ") {
				t.Fatalf("no summary: %q", want)
			}
			outfile.Sink = c.sink
			defer func() { outfile.Sink = saved }()
			dir := t.TempDir()
			args := append(append(slices.Clone(c.args), c.extra...), "--trace", filepath.Join(dir, "t.jsonl"))
			code, stdout, stderr := cli(t, testHost(t), args...)
			if code != wantCode {
				t.Errorf("exit %d, want the verdict's %d; stderr %q", code, wantCode, stderr)
			}
			line := "trace file:     not written: "
			if i := strings.Index(stdout, line); i < 0 || !strings.Contains(stdout[i:], c.why) {
				t.Errorf("the summary does not say the trace was not written (%s):\n%s", c.why, stdout)
			} else if j := strings.Index(stdout[i:], "\n"); stdout[:i]+stdout[i+j+1:] != want {
				t.Errorf("the summary differs from the run's without --trace:\n%s\nwant\n%s", stdout, want)
			}
			if !strings.HasPrefix(stderr, "locksim: --trace: not written: ") || !strings.Contains(stderr, c.why) || !strings.Contains(stderr, "the verdict") {
				t.Errorf("stderr %q", stderr)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left in the trace's folder: %v", ents)
			}
			// --json says it too.
			_, stdout, _ = cli(t, testHost(t), append(args, "--json")...)
			var r struct {
				Verdict    string  `json:"verdict"`
				TraceFile  *string `json:"trace_file"`
				TraceError string  `json:"trace_error"`
			}
			if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.Verdict == "" || r.TraceFile != nil || !strings.Contains(r.TraceError, c.why) {
				t.Errorf("--json: %+v, %v: %s", r, err, stdout)
			}
		})
	}
}
