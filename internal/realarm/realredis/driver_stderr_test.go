package realredis

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Node 20's and Python 3.11's stderr for a crash that follows a logged
// error, as the interpreters print them.
const (
	nodeCrash = `subscriber error: Error: connect ECONNREFUSED 127.0.0.1:1
    at Object.<anonymous> (/d/driver.js:1:36)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
/d/driver.js:2
function acquire() { throw new TypeError("cannot read lock of undefined"); }
                     ^

TypeError: cannot read lock of undefined
    at acquire (/d/driver.js:2:28)
    at Timeout._onTimeout (/d/driver.js:3:18)
    at listOnTimeout (node:internal/timers:581:17) {
  code: 'ELOCK'
}

Node.js v20.20.2
`
	pyCrash = `Traceback (most recent call last):
  File "/d/driver.py", line 3, in <module>
    raise ValueError("logged")
ValueError: logged
Traceback (most recent call last):
  File "/d/driver.py", line 10, in handle
    acquire()
  File "/d/driver.py", line 7, in acquire
    {}["x"]
    ~~^^^^^
KeyError: 'x'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/d/driver.py", line 13, in <module>
    handle()
  File "/d/driver.py", line 12, in handle
    raise RuntimeError("lock server said no") from e
RuntimeError: lock server said no
`
	goCrash = `2026/11/28 acquire: Error: timeout
panic: lock: nil lease

goroutine 1 [running]:
main.acquire(...)
	/d/main.go:12 +0x25
main.main()
	/d/main.go:20 +0x1d
exit status 2
`
)

// TestFatalFrame: the summary of a driver's stderr is its last exception
// or stack, with the frame that raised it, not a logged error before it
// nor the interpreter's trailer ("Node.js v20.20.2", which the old
// summary kept with the first line saying "Error").
func TestFatalFrame(t *testing.T) {
	for _, tc := range []struct{ name, stderr, want string }{
		{"node", nodeCrash, "TypeError: cannot read lock of undefined (at acquire (/d/driver.js:2:28))"},
		{"python", pyCrash, `RuntimeError: lock server said no (File "/d/driver.py", line 12, in handle)`},
		{"go", goCrash, "panic: lock: nil lease (main.acquire(...) at /d/main.go:12)"},
		{"python after node", nodeCrash + pyCrash, `RuntimeError: lock server said no (File "/d/driver.py", line 12, in handle)`},
		{"none", "cannot import lockmodule\n", ""},
	} {
		if got := FatalFrame(tc.stderr); got != tc.want {
			t.Errorf("%s: FatalFrame = %q, want %q", tc.name, got, tc.want)
		}
	}
	dp := &driverProc{stderr: newBoundedBuf(DriverStderrMax, DriverStderrHead)}
	fmt.Fprint(dp.stderr, nodeCrash)
	if n := dp.stderrNote(); n != "; its stderr: TypeError: cannot read lock of undefined (at acquire (/d/driver.js:2:28))" {
		t.Errorf("stderrNote = %q", n)
	}
}

// TestBoundedBuf: a driver's stderr is kept whole up to the bound; past
// it, the head and the tail are kept and the cut is marked between them,
// saying how much was cut; the memory held stays bounded.
func TestBoundedBuf(t *testing.T) {
	b := newBoundedBuf(100, 20)
	fmt.Fprint(b, strings.Repeat("a", 50))
	fmt.Fprint(b, strings.Repeat("b", 50))
	if s, n, cut := b.kept(); cut != 0 || n != 100 || s != strings.Repeat("a", 50)+strings.Repeat("b", 50) {
		t.Fatalf("under the bound: %q, %d bytes, %d cut", s, n, cut)
	}
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(b, "line %04d\n", i)
	}
	s, n, cut := b.kept()
	if n != 100+10000 || cut != n-100 {
		t.Errorf("%d bytes, %d cut: want 10100 and 10000", n, cut)
	}
	mark := fmt.Sprintf(stderrCutMark, 10000, 10100, 20, 80)
	want := strings.Repeat("a", 20) + "\n" + mark + "\n" + "line 0992\nline 0993\nline 0994\nline 0995\nline 0996\nline 0997\nline 0998\nline 0999\n"
	if s != want {
		t.Errorf("kept:\n%s\nwant:\n%s", s, want)
	}
	if len(b.end) > 2*80 {
		t.Errorf("holds %d bytes of tail, bound 160", len(b.end))
	}
}

// crashDriver writes a driver that logs an error at start, then more than
// DriverStderrMax of stderr, and crashes at its first acquire with a
// stack: Python's traceback or Node's uncaught TypeError.
func crashDriver(t *testing.T, lang string) string {
	t.Helper()
	dir := t.TempDir()
	var src, run string
	switch lang {
	case "python":
		src = `import json, sys
start = json.loads(sys.stdin.readline())
sys.stderr.write("subscriber Error: connection refused, retrying\n")
for i in range(1000):
    sys.stderr.write("log line %04d of a chatty library\n" % i)
sys.stderr.flush()
print(json.dumps({"re": "start", "result": "ok"}), flush=True)
def acquire():
    raise RuntimeError("lock server said no")
def handle(req):
    return acquire()
for line in sys.stdin:
    handle(json.loads(line))
`
		run = "exec /usr/bin/python3 " + filepath.Join(dir, "driver.py") + "\n"
	case "node":
		src = `const rl = require("readline").createInterface({ input: process.stdin });
let started = false;
function acquire() { throw new TypeError("cannot read lock of undefined"); }
rl.on("line", () => {
  if (!started) {
    started = true;
    console.error("subscriber error:", new Error("connect ECONNREFUSED 127.0.0.1:1"));
    for (let i = 0; i < 1000; i++) process.stderr.write("log line " + String(i).padStart(4, "0") + " of a chatty library\n");
    process.stdout.write(JSON.stringify({ re: "start", result: "ok" }) + "\n");
    return;
  }
  setTimeout(() => acquire(), 1);
});
`
		run = "exec node " + filepath.Join(dir, "driver.js") + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "driver."+map[string]string{"python": "py", "node": "js"}[lang]), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return script(t, dir, "crash-"+lang, run)
}

// TestDriverCrashStack: a driver that crashes with a stack trace ends its
// client with an error whose summary is the trace's fatal frame (the
// exception and the frame that raised it), not the error it logged at
// start nor Node's version trailer; the run keeps each driver's whole
// stderr, bounded (its head with the logged error, the cut marked, its
// tail with the whole trace), in --json's driver_stderr and in a file
// beside the trace.
func TestDriverCrashStack(t *testing.T) {
	requireRedis(t)
	for _, tc := range []struct {
		lang, fatal, frame string
		tail               []string
	}{
		{"python", "RuntimeError: lock server said no", `driver.py", line 9, in acquire`,
			[]string{"Traceback (most recent call last):", `driver.py", line 13, in <module>`, `driver.py", line 11, in handle`}},
		{"node", "TypeError: cannot read lock of undefined", "at acquire (", []string{"driver.js:3", "Node.js v"}},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			if tc.lang == "node" {
				if _, err := exec.LookPath("node"); err != nil {
					t.Skipf("no node: %v", err)
				}
			} else if _, err := os.Stat("/usr/bin/python3"); err != nil {
				t.Skip("no /usr/bin/python3")
			}
			d, err := ResolveDriver(crashDriver(t, tc.lang))
			if err != nil {
				t.Fatal(err)
			}
			j := short(t, "no-faults", "set-nx-cad", 1)
			if err := j.WithDriver(d); err != nil {
				t.Fatal(err)
			}
			jd, err := j.RunAndJudge(context.Background(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %v", tc.lang, jd.Err)
			wantNamed(t, jd, "request acquire", "the driver exited (exit status 1); its stderr: "+tc.fatal+" (", tc.frame)
			if strings.Contains(jd.Err.Error(), "ECONNREFUSED") || strings.Contains(jd.Err.Error(), "subscriber") || strings.Contains(jd.Err.Error(), "Node.js v") {
				t.Errorf("the summary keeps the logged error or the trailer: %v", jd.Err)
			}
			if len(jd.Info.Drivers) == 0 {
				t.Fatal("no driver's stderr kept")
			}
			for _, s := range jd.Info.Drivers {
				if s.Cut == 0 || s.Bytes <= DriverStderrMax || len(s.Text) > DriverStderrMax+200 {
					t.Errorf("client %s: %d bytes, %d cut, %d kept: want more than the bound written, the middle cut", s.Client, s.Bytes, s.Cut, len(s.Text))
				}
				if !strings.Contains(s.Fatal, tc.fatal) || !strings.Contains(s.Fatal, tc.frame) {
					t.Errorf("client %s: fatal %q, want %q at %q", s.Client, s.Fatal, tc.fatal, tc.frame)
				}
				for _, w := range append([]string{"subscriber", "bytes of stderr cut here", tc.fatal, "log line 0999"}, tc.tail...) {
					if !strings.Contains(s.Text, w) {
						t.Errorf("client %s: kept stderr lacks %q:\n%s", s.Client, w, s.Text)
					}
				}
			}
			b, err := json.Marshal(jd.JSONFields())
			if err != nil || !strings.Contains(string(b), `"driver_stderr":[{"client":"c`) || !strings.Contains(string(b), "bytes of stderr cut here") {
				t.Errorf("--json's fields lack driver_stderr (%v): %.300s", err, b)
			}
			trace := filepath.Join(t.TempDir(), "run.jsonl")
			if err := jd.WriteHistory(trace); err != nil {
				t.Fatal(err)
			}
			f, err := os.ReadFile(DriverStderrPath(trace))
			if err != nil {
				t.Fatalf("no stderr beside the trace: %v", err)
			}
			if !strings.Contains(string(f), "## client "+jd.Info.Drivers[0].Client) || !strings.Contains(string(f), tc.fatal) || !strings.Contains(string(f), "bytes of stderr cut here") {
				t.Errorf("%s:\n%.2000s", DriverStderrPath(trace), f)
			}
		})
	}
}
