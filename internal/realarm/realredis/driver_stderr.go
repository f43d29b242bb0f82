package realredis

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/locksim/locksim/internal/outfile"
)

// A driver's stderr is kept whole up to DriverStderrMax bytes: its first
// DriverStderrHead bytes and its last DriverStderrMax-DriverStderrHead.
// Past the bound the middle is cut, and the kept text says so on a line of
// its own where it was cut (stderrCutMark): the head says how the driver
// started, the tail how it ended (a crash's stack is last).
const DriverStderrHead = 4 << 10

// stderrCutMark marks the cut in a driver's kept stderr.
const stderrCutMark = "[locksim: %d bytes of stderr cut here: the driver wrote %d bytes; the first %d and the last %d are kept]"

// DriverStderr is one client's driver's stderr, as a run keeps it (Info.Drivers).
type DriverStderr struct {
	Client string `json:"client"`
	Driver string `json:"driver"`
	// Bytes is how much the driver wrote to stderr in all; Cut how much
	// of it was not kept (the middle, marked in Text; 0: Text is whole).
	Bytes int64 `json:"bytes"`
	Cut   int64 `json:"cut_bytes,omitempty"`
	// Fatal is the last exception or stack in it (FatalFrame), "" if none.
	Fatal string `json:"fatal,omitempty"`
	Text  string `json:"text"`
}

// boundedBuf keeps the first head bytes written to it and the last
// max-head, and counts them all.
type boundedBuf struct {
	mu         sync.Mutex
	max, head  int
	first, end []byte
	n          int64
}

func newBoundedBuf(max, head int) *boundedBuf { return &boundedBuf{max: max, head: head} }

func (b *boundedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(len(p))
	rest := p
	if k := min(b.head-len(b.first), len(rest)); k > 0 {
		b.first = append(b.first, rest[:k]...)
		rest = rest[k:]
	}
	tail := b.max - b.head
	b.end = append(b.end, rest...)
	if len(b.end) > 2*tail { // trimmed in steps: at most 2 × the tail held
		b.end = append([]byte(nil), b.end[len(b.end)-tail:]...)
	}
	return len(p), nil
}

// kept is the text kept (the cut marked) and how many bytes were cut.
func (b *boundedBuf) kept() (string, int64, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.max - b.head
	end := b.end
	if len(end) > tail {
		end = end[len(end)-tail:]
	}
	cut := b.n - int64(len(b.first)) - int64(len(end))
	if cut == 0 {
		return string(b.first) + string(end), b.n, 0
	}
	first := string(b.first)
	if !strings.HasSuffix(first, "\n") {
		first += "\n"
	}
	return first + fmt.Sprintf(stderrCutMark, cut, b.n, len(b.first), len(end)) + "\n" + string(end), b.n, cut
}

func (b *boundedBuf) String() string {
	s, _, _ := b.kept()
	return s
}

// snapshot is dp's stderr as the run keeps it.
func (dp *driverProc) snapshot() DriverStderr {
	text, n, cut := dp.stderr.kept()
	return DriverStderr{Client: dp.p.name, Driver: dp.d.Name, Bytes: n, Cut: cut, Fatal: FatalFrame(text), Text: text}
}

// driverStderrs is every client's driver's stderr (clients whose driver
// wrote none are left out), in client order. Called once the clients
// returned: a driver's stderr is whole once its process was waited for.
func (w *world) driverStderrs() []DriverStderr {
	var out []DriverStderr
	for _, p := range w.procs {
		if p.drv == nil || p.drv.dp == nil {
			continue
		}
		if s := p.drv.dp.snapshot(); s.Bytes > 0 {
			out = append(out, s)
		}
	}
	return out
}

// stderrNote is the end of a driver's error message: its fatal frame
// (FatalFrame) if its stderr has one, else its last three lines; at most
// 600 bytes. The whole stderr (bounded) is in the run's output
// (Info.Drivers: --json's driver_stderr, the file beside --trace).
func (dp *driverProc) stderrNote() string {
	s := strings.TrimSpace(dp.stderr.String())
	if s == "" {
		return ""
	}
	if f := FatalFrame(s); f != "" {
		s = f
	} else {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" && !nodeVersionRE.MatchString(l) {
				lines = append(lines, l)
			}
		}
		if len(lines) > 3 {
			lines = lines[len(lines)-3:]
		}
		s = strings.Join(lines, " | ")
	}
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return "; its stderr: " + s
}

var (
	nodeVersionRE = regexp.MustCompile(`^Node\.js v\d+`)
	// Python: a traceback's frame line and an exception line
	// ("pkg.XError: msg", "KeyError: 'x'", "StopIteration").
	pyFrameRE = regexp.MustCompile(`^\s+File "[^"]*", line \d+`)
	pyExcRE   = regexp.MustCompile(`^[A-Za-z_][\w.]*(:|$)`)
	// Node: a stack frame, and a line that starts an error's message.
	nodeAtRE  = regexp.MustCompile(`^\s+at \S`)
	nodeErrRE = regexp.MustCompile(`(^|\s|\[)([A-Za-z_$][\w$.]*)?(Error|Exception)\b`)
	// Go: a panic's first line, and a frame's file line.
	goPanicRE = regexp.MustCompile(`^(panic: |fatal error: )`)
	goFileRE  = regexp.MustCompile(`^\t(\S+\.go:\d+)`)
)

// FatalFrame is the last exception or stack in a driver's stderr, on one
// line: Python's last traceback as its exception line and its last
// frame ("RuntimeError: no (File "driver.py", line 12, in acquire)");
// Node's last stack as its error line and its first frame ("TypeError: x
// (at acquire (/d/driver.js:2:28))"); a Go panic as its line and its
// first frame's function and file. Of several, the one that starts last
// wins; "" when there is none.
func FatalFrame(stderr string) string {
	lines := strings.Split(strings.ReplaceAll(stderr, "\r\n", "\n"), "\n")
	best, at := "", -1
	for _, f := range []func([]string) (string, int){pyFatal, nodeFatal, goFatal} {
		if s, i := f(lines); s != "" && i > at {
			best, at = s, i
		}
	}
	return best
}

// pyFatal finds the last "Traceback (most recent call last):".
func pyFatal(lines []string) (string, int) {
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "Traceback (most recent call last):") {
			start = i
		}
	}
	if start < 0 {
		return "", -1
	}
	frame, exc := "", ""
	indent := len(lines[start]) - len(strings.TrimLeft(lines[start], " "))
	for _, l := range lines[start+1:] {
		switch {
		case pyFrameRE.MatchString(l):
			frame = strings.TrimSpace(l)
		case len(l)-len(strings.TrimLeft(l, " ")) == indent && pyExcRE.MatchString(l[indent:]):
			exc = strings.TrimSpace(l)
		}
		if exc != "" {
			break
		}
	}
	if exc == "" {
		exc = "a Python traceback with no exception line"
	}
	if frame != "" {
		exc += " (" + frame + ")"
	}
	return exc, start
}

// nodeFatal finds the last block of "    at ..." lines and the error line
// before it (within its paragraph).
func nodeFatal(lines []string) (string, int) {
	first := -1 // the last block's first frame
	for i := len(lines) - 1; i >= 0; i-- {
		if nodeAtRE.MatchString(lines[i]) {
			first = i
			for first > 0 && nodeAtRE.MatchString(lines[first-1]) {
				first--
			}
			break
		}
	}
	if first < 0 {
		return "", -1
	}
	errAt := -1
	for i := first - 1; i >= 0 && strings.TrimSpace(lines[i]) != ""; i-- {
		if nodeErrRE.MatchString(lines[i]) {
			errAt = i
			break
		}
	}
	if errAt < 0 {
		errAt = max(first-1, 0)
	}
	msg := strings.TrimSpace(lines[errAt])
	if errAt == first {
		msg = "a stack"
	}
	return msg + " (" + strings.TrimSuffix(strings.TrimSpace(lines[first]), " {") + ")", errAt
}

// goFatal finds the last "panic: " or "fatal error: " line and the first
// frame of the goroutine after it.
func goFatal(lines []string) (string, int) {
	start := -1
	for i, l := range lines {
		if goPanicRE.MatchString(l) {
			start = i
		}
	}
	if start < 0 {
		return "", -1
	}
	msg := strings.TrimSpace(lines[start])
	for i := start + 1; i+2 < len(lines); i++ {
		if strings.HasPrefix(lines[i], "goroutine ") {
			if m := goFileRE.FindStringSubmatch(lines[i+2]); m != nil {
				return msg + " (" + strings.TrimSpace(lines[i+1]) + " at " + m[1] + ")", start
			}
			break
		}
	}
	return msg, start
}

// DriverStderrPath is where a run whose trace is written to trace keeps
// its drivers' stderr: beside it, "x.jsonl" → "x.driver-stderr.txt".
func DriverStderrPath(trace string) string {
	return strings.TrimSuffix(trace, ".jsonl") + ".driver-stderr.txt"
}

// WriteDriverStderr writes every client's driver's stderr, as the run
// kept it (bounded: DriverStderrMax a client, the cut marked), to path
// (atomically), each after a header line naming the client, the driver,
// its bytes and its fatal frame. A run without a driver writes nothing.
func (jd *Judged) WriteDriverStderr(path string) error {
	if jd.Real == nil || jd.Real.Driver == nil || jd.Info == nil {
		return nil
	}
	f, err := outfile.Create(path, 0)
	if err != nil {
		return err
	}
	w := f.Raw()
	fmt.Fprintf(w, "# locksim: the stderr of each client's driver (%s), at most %d bytes each (the first %d and the last %d; a cut is marked where it is); clients whose driver wrote nothing are not listed\n",
		jd.Real.Driver.Path, DriverStderrMax, DriverStderrHead, DriverStderrMax-DriverStderrHead)
	for _, s := range jd.Info.Drivers {
		fatal := "none found"
		if s.Fatal != "" {
			fatal = s.Fatal
		}
		fmt.Fprintf(w, "\n## client %s: %d bytes, %d cut; fatal: %s\n%s", s.Client, s.Bytes, s.Cut, fatal, s.Text)
		if !strings.HasSuffix(s.Text, "\n") {
			fmt.Fprintln(w)
		}
	}
	return f.Commit()
}
