package realredis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/realarm/driver"
	"github.com/locksim/locksim/internal/reap"
	"github.com/locksim/locksim/locks"
)

// Driver is a lock driver a real run's clients run instead of Go lock
// code (docs/DRIVERS.md): a program wrapping one lock library, spoken to
// in JSON lines on its stdin and stdout.
type Driver struct {
	Name string   // for messages and the report: the folder's or file's name
	Path string   // as given to ResolveDriver (--driver)
	Argv []string // the program and its arguments
	// Bound is how long a driver may take to answer start, and the most
	// it may take to answer any later request, not counting the time it
	// was stopped by a pause (0: DriverBound). Within a run the bound is
	// also tied to the run's length (requestBound).
	Bound time.Duration
}

// DriverBound is Driver.Bound's default: a request's own timeouts are a
// few TTLs at most.
const DriverBound = 10 * time.Second

// requestBound is how long a driver may take to answer a request of a run
// (every request but start, and every write to its stdin): Driver.Bound,
// at most half the run's liveness phase and at least two TTLs. A
// request's own timeouts (the socket timeout and the tries the start
// request hands it) end well within two TTLs; half the liveness phase
// means a driver that stops answering is named, and the run unknown,
// before the liveness checker could read its silence as a deadlock (a
// deadlock needs no progress through the whole phase). In the built-in
// scenarios (liveness: 10 TTLs) that is 5 TTLs: 2.5 s at the real arm's
// TTL of 500 ms.
func requestBound(d *Driver, ttl, liveness time.Duration) time.Duration {
	return min(d.Bound, max(2*ttl, liveness/2))
}

// DriverStderrMax bounds the stderr kept of a driver's process, for its
// messages and the run's output (driver_stderr.go: the head and the tail,
// the cut marked).
const DriverStderrMax = 16 << 10

// faketimeLib is libfaketime, preloaded into a driver whose clock a
// scenario moves (Debian's faketime package).
var faketimeLibs = []string{
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
}

// ResolveDriver turns --driver's argument into a Driver: a folder holding
// one executable file named "driver*" (drivers/python-redis-py/driver.py),
// or an executable file.
func ResolveDriver(path string) (*Driver, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(abs)
	if st.IsDir() {
		ms, _ := filepath.Glob(filepath.Join(abs, "driver*"))
		var exe []string
		for _, m := range ms {
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				exe = append(exe, m)
			}
		}
		if len(exe) != 1 {
			return nil, fmt.Errorf("driver %s: want one executable file named driver* in the folder, found %d", path, len(exe))
		}
		return &Driver{Name: name, Path: path, Argv: exe}, nil
	}
	if st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("driver %s: not executable (chmod +x, and a #! line)", path)
	}
	return &Driver{Name: strings.TrimSuffix(name, filepath.Ext(name)), Path: path, Argv: []string{abs}}, nil
}

// WithDriver makes j's clients run d instead of the lock's Go code. The
// world stays the one built for j's lock (its TTL, nodes, faults and
// storage): it must have one Redis node, independent ones or a
// Sentinel-managed primary, and a workload a driver can carry out. A lock
// that renews (watchdog) has the driver's lease renewed if the driver
// declares renew; a storage that fences on a token (fencing) needs the
// driver's acquire to give one.
func (j *Job) WithDriver(d *Driver) error {
	p := j.Parts
	sentinel := p.Config.Topology.Replicated && p.Config.Topology.Groups <= 1 && (p.Lock.Topology == locks.Single || p.Lock.Topology == locks.Replicated)
	switch {
	case !sentinel && (p.Config.Topology.Replicated || !(p.Lock.Topology == locks.Single && len(p.Config.Nodes) == 1 || p.Lock.Topology == locks.Independent)):
		return fmt.Errorf("driver %s: the world of lock %s has %d nodes (%s topology): a driver runs against one Redis node, independent ones (Redlock's) or one Sentinel-managed primary, not several groups (use e.g. --lock set-nx-cad, redlock or primary-replica)", d.Name, p.Lock.ID, len(p.Config.Nodes), p.Lock.Topology)
	case p.Lock.Fencing == locks.FenceVersion:
		return fmt.Errorf("driver %s: lock %s is no lock (the storage's version check alone); a driver wraps a lock", d.Name, p.Lock.ID)
	case p.Workload.Section != nil:
		return fmt.Errorf("driver %s: Go sections are not carried out by drivers", d.Name)
	}
	if d.Bound == 0 {
		d.Bound = DriverBound
	}
	j.Driver = d
	// The report and the history name the driver; the world stays the
	// lock's (its id is in the repro's --lock).
	world := p.Lock.ID
	j.Job.Lock.ID = d.Name
	nodes := "one node"
	if n := len(p.Config.Nodes); sentinel {
		nodes = fmt.Sprintf("a primary and %d replicas, through Sentinel", n-1)
	} else if n > 1 {
		nodes = fmt.Sprintf("%d independent nodes", n)
	}
	extra := ""
	if p.Lock.Renews {
		extra += "; renewed every TTL/3 if the driver declares renew"
	}
	if fencesOnToken(p.Lock.Fencing) {
		extra += fmt.Sprintf("; the storage fences on the acquire's token (%s)", p.Lock.Fencing)
	}
	j.Job.Lock.Source = fmt.Sprintf("driver %s, in %s's world (%s, its TTL; 3 tries, a retry delay of TTL/3%s)", d.Path, world, nodes, extra)
	return nil
}

// driverProc is one running driver process of a client.
type driverProc struct {
	d     *Driver
	p     *proc
	cmd   *exec.Cmd
	stdin *os.File // the pipe's write end: writes have deadlines
	// bound is how long a request may wait for its reply, and a write
	// for the driver to read: d.Bound for start, then requestBound.
	bound time.Duration
	// cancels: the driver declared cancel in its start reply, so a
	// cancellable request unanswered for driver.CancelAfter(bound) is
	// sent cancel (request).
	cancels bool
	lines   chan stamped // closed at EOF or a read error
	rdErr   error        // why lines closed (read after it is)
	eofAt   time.Time    // when stdout closed (the process ended or closed it), under mu
	done    chan struct{}

	stderr  *boundedBuf
	tmp     string // temp dir (the faketime file), removed at close
	release func() // tmp's owner lock (reap.TempDir)
	mark    reap.Mark
	ftFile  string // FAKETIME_TIMESTAMP_FILE, "" without libfaketime

	waitOnce sync.Once
	exitCh   chan struct{} // closed when the process has been waited for

	mu       sync.Mutex
	stopped  bool  // SIGSTOPped by the harness
	lastCont int64 // true time of the latest SIGCONT
	offset   time.Duration
	lastLine []byte // the latest line received, for messages
	closed   bool
}

// needsFaketime reports whether the scenario moves client i's clock.
func (w *world) needsFaketime(i int, name string) bool {
	if w.cfg.ClientClockOffset(i) != 0 || w.cfg.ClientDriftPPM(i) != 0 {
		return true
	}
	for _, f := range w.cfg.Faults {
		if (f.Kind == faults.ClockJump || f.Kind == faults.ClockDrift) && slices.Contains(f.Targets, name) {
			return true
		}
	}
	return false
}

// startDriver starts p's driver process: its own process group, killed
// with locksim and found with its descendants by its mark (reap.Start),
// pipes, stderr kept (bounded), libfaketime preloaded when its clock
// moves.
func startDriver(p *proc, d *Driver) (dp *driverProc, err error) {
	tmp, release, err := reap.TempDir("", "locksim-driver")
	if err != nil {
		return nil, fmt.Errorf("driver %s: temp dir: %w", d.Name, err)
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	dp = &driverProc{d: d, p: p, tmp: tmp, release: release, bound: d.Bound, lines: make(chan stamped, 16), done: make(chan struct{}), stderr: newBoundedBuf(DriverStderrMax, DriverStderrHead)}
	cmd := exec.Command(d.Argv[0], d.Argv[1:]...)
	cmd.Dir = filepath.Dir(d.Argv[0])
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "LOCKSIM_DRIVER_PROTOCOL=1")
	if p.w.needsFaketime(p.id, p.name) {
		lib := ""
		for _, l := range faketimeLibs {
			if _, err := os.Stat(l); err == nil {
				lib = l
				break
			}
		}
		if lib == "" {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("driver %s: client %s's clock moves in this scenario and libfaketime is not installed (apt-get install -y faketime)", d.Name, p.name)
		}
		dp.ftFile = filepath.Join(tmp, "faketime")
		p.w.mu.Lock()
		dp.offset = time.Duration(p.clk.Local(p.w.now()) - p.w.now())
		p.w.mu.Unlock()
		if err := writeFaketime(dp.ftFile, dp.offset); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+lib, "FAKETIME_TIMESTAMP_FILE="+dp.ftFile, "FAKETIME_NO_CACHE=1")
	}
	cmd.Stderr = dp.stderr
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	// An os.Pipe of our own, not StdinPipe: its write end takes deadlines,
	// so a driver that reads nothing cannot block the harness.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	cmd.Stdin, dp.stdin = stdinR, stdinW
	dp.mark, err = reap.Start(cmd)
	stdinR.Close()
	if err != nil {
		stdinW.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("driver %s: start %s: %w", d.Name, d.Argv[0], err)
	}
	dp.cmd = cmd
	dp.lastCont = p.w.now()
	go dp.read(stdout)
	return dp, nil
}

func writeFaketime(path string, off time.Duration) error {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%+.6fs\n", off.Seconds())), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path) // a reader sees the old file or the new one
}

// stamped is a line from a driver and the run's true time it was read.
type stamped struct {
	b  []byte
	at time.Time // read as true time by the waiting goroutine (w.start moves at true time 0)
}

// read sends stdout's lines to dp.lines, each stamped with true time on
// receipt; a line over driver.MaxLine ends it.
func (dp *driverProc) read(r io.Reader) {
	defer close(dp.lines)
	br := bufio.NewReaderSize(r, 4096)
	for {
		line, err := readBoundedLine(br, driver.MaxLine)
		if errors.Is(err, driver.ErrTooLong) {
			// Never decoded: its start is kept for the message only.
			dp.mu.Lock()
			dp.lastLine = line
			dp.mu.Unlock()
		} else if len(line) > 0 || err == nil {
			select {
			case dp.lines <- stamped{line, time.Now()}:
			case <-dp.done:
				return
			}
		}
		if err != nil {
			dp.rdErr = err
			dp.mu.Lock()
			dp.eofAt = time.Now()
			dp.mu.Unlock()
			return
		}
	}
}

func readBoundedLine(br *bufio.Reader, max int) ([]byte, error) {
	var out []byte
	for {
		frag, err := br.ReadSlice('\n')
		out = append(out, frag...)
		if len(out) > max {
			return out[:200], driver.ErrTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return out, err
	}
}

// watch (started with the client, after true time 0) carries the client's faults to the process every few
// milliseconds: SIGSTOP while the client is paused, SIGCONT after, and the
// client's clock (offset from true time) into libfaketime's file.
func (dp *driverProc) watch() {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	stop := dp.p.w.stop
	for {
		select {
		case <-dp.done:
			return
		case <-stop: // a write blocked on a driver that reads nothing gives up now
			_ = dp.stdin.SetWriteDeadline(time.Unix(1, 0))
			stop = nil
			continue
		case <-t.C:
		}
		w, p := dp.p.w, dp.p
		w.mu.Lock()
		now := w.now()
		paused := p.paused > now && !w.stopped
		off := time.Duration(p.clk.Local(now) - now)
		w.mu.Unlock()
		dp.mu.Lock()
		if dp.closed {
			dp.mu.Unlock()
			return
		}
		if paused != dp.stopped {
			sig := syscall.SIGCONT
			if paused {
				sig = syscall.SIGSTOP
			} else {
				dp.lastCont = now
			}
			if err := syscall.Kill(-dp.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				w.harnessError(fmt.Errorf("driver %s (client %s): %v: %w", dp.d.Name, p.name, sig, err))
			}
			dp.stopped = paused
		}
		if dp.ftFile != "" && (off-dp.offset > time.Millisecond || dp.offset-off > time.Millisecond) {
			if err := writeFaketime(dp.ftFile, off); err != nil {
				w.harnessError(fmt.Errorf("driver %s (client %s): faketime: %w", dp.d.Name, p.name, err))
			}
			dp.offset = off
		}
		dp.mu.Unlock()
	}
}

// errDriverStop is request's answer when the run stopped while waiting.
var errDriverStop = errors.New("the run stopped")

// request sends req and waits for its reply, answering pause points on
// the way (p.Point, then continue). A driver that exits, stays silent past
// its bound (time it was stopped by a pause not counted), or writes a line
// that is not its reply is an error naming the driver, the request and
// the line.
//
// A driver that declared cancel is sent cancel once a cancellable request
// (driver.Cancellable) has gone unanswered for driver.CancelAfter of the
// bound, counted as the bound is: a library that never gives up (its
// acquire retries until it gets the lock) is then answered for within
// the bound, and a reply that is not ok says, in its error, that it was
// cancelled. The client is recorded as waiting (an acquire that returned
// unknown, and the next one), not as a driver that hangs.
func (dp *driverProc) request(req driver.Request) (driver.Line, error) {
	p, name := dp.p, dp.d.Name
	fail := func(format string, a ...any) (driver.Line, error) {
		return driver.Line{}, fmt.Errorf("driver %s (client %s), request %s: %s", name, p.name, req.Type, fmt.Sprintf(format, a...))
	}
	if err := dp.write(req); err != nil {
		if errors.Is(err, errDriverStop) {
			return driver.Line{}, err
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fail("the driver read nothing of its stdin for %v: writing the request blocked (the driver hangs or does not read)%s", dp.bound, dp.stderrNote())
		}
		if s := dp.exitNote(); s != "" {
			return fail("%s", s)
		}
		return fail("writing the request: %v", err)
	}
	sent := p.w.now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	cancelAt := time.Duration(-1) // running time when cancel was sent (-1: not sent)
	for {
		select {
		case <-p.w.stop:
			return driver.Line{}, errDriverStop
		case <-p.w.ctx.Done(): // interrupted (before true time 0 too)
			return driver.Line{}, errDriverStop
		case <-tick.C:
			dp.mu.Lock()
			stopped, from := dp.stopped, max(sent, dp.lastCont)
			dp.mu.Unlock()
			ran := time.Duration(p.w.now() - from)
			if !stopped && ran > dp.bound {
				cancelled := ""
				if cancelAt >= 0 {
					cancelled = fmt.Sprintf(", nor to the cancel sent at %v", cancelAt.Round(time.Millisecond))
				}
				return fail("no reply within %v%s (the driver hangs)%s", dp.bound, cancelled, dp.stderrNote())
			}
			if !stopped && dp.cancels && cancelAt < 0 && driver.Cancellable(req.Type) && ran > driver.CancelAfter(dp.bound) {
				cancelAt = ran
				if err := dp.write(driver.Request{Type: driver.Cancel}); err != nil {
					if errors.Is(err, errDriverStop) {
						return driver.Line{}, err
					}
					if errors.Is(err, os.ErrDeadlineExceeded) {
						return fail("the driver read nothing of its stdin for %v: writing cancel blocked (a driver that declares cancel reads its stdin while a request is outstanding)%s", dp.bound, dp.stderrNote())
					}
					if s := dp.exitNote(); s != "" {
						return fail("writing cancel: %s", s)
					}
					return fail("writing cancel: %v", err)
				}
			}
		case sl, ok := <-dp.lines:
			line := sl.b
			if !ok {
				if errors.Is(dp.rdErr, driver.ErrTooLong) {
					return fail("a line longer than %s bytes (the protocol's bound), starting %s", driver.MaxLineText, driver.Quote(dp.last()))
				}
				return fail("%s", dp.exitNote())
			}
			dp.mu.Lock()
			dp.lastLine = line
			dp.mu.Unlock()
			l, err := driver.Decode(line)
			if err != nil {
				return fail("%v%s", err, dp.stderrNote())
			}
			if l.Point != "" {
				if req.Type == driver.Start || req.Type == driver.Read || req.Type == driver.Write {
					return fail("pause point %q during %s: %s", l.Point, req.Type, driver.Quote(line))
				}
				p.Point(l.Point) // records the pause and waits it out, if one is armed here
				if err := dp.write(driver.Request{Type: driver.Continue}); err != nil {
					if errors.Is(err, errDriverStop) {
						return driver.Line{}, err
					}
					if errors.Is(err, os.ErrDeadlineExceeded) {
						return fail("the driver read nothing of its stdin for %v: writing continue after its pause point %q blocked (a driver must read continue before going on)%s", dp.bound, l.Point, dp.stderrNote())
					}
					return fail("writing continue: %v", err)
				}
				continue
			}
			if l.Re != req.Type {
				return fail("a reply to %q while waiting for %q's: %s", l.Re, req.Type, driver.Quote(line))
			}
			l.At = int64(sl.at.Sub(p.w.start))
			if cancelAt >= 0 && l.Result != driver.OK {
				// the same words for every cancel of the run: the liveness
				// checker's blockers group by them
				l.Error = strings.TrimSuffix(fmt.Sprintf("cancelled by the harness at %v of its %v bound (the library was still waiting): %s", driver.CancelAfter(dp.bound), dp.bound, l.Error), ": ")
			}
			return l, nil
		}
	}
}

// write sends r on the driver's stdin, waiting at most dp.bound for the
// driver to read it (os.ErrDeadlineExceeded past it); at the run's stop
// it gives up (errDriverStop).
func (dp *driverProc) write(r driver.Request) error {
	if dp.p.w.stopping() {
		return errDriverStop
	}
	if err := dp.stdin.SetWriteDeadline(time.Now().Add(dp.bound)); err != nil {
		return err
	}
	_, err := dp.stdin.Write(driver.Encode(r))
	if err != nil && dp.p.w.stopping() {
		return errDriverStop
	}
	return err
}

func (dp *driverProc) last() []byte {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	return dp.lastLine
}

// exitNote says how the process ended (it waits for it briefly).
func (dp *driverProc) exitNote() string {
	select {
	case <-dp.exited():
	case <-time.After(time.Second):
		return "its stdout closed" + dp.stderrNote()
	}
	return fmt.Sprintf("the driver exited (%v)%s", dp.cmd.ProcessState, dp.stderrNote())
}

// exited returns a channel closed once the process has been waited for
// (the first call starts the wait).
func (dp *driverProc) exited() <-chan struct{} {
	dp.waitOnce.Do(func() {
		dp.exitCh = make(chan struct{})
		go func() {
			// Wait needs stdout read to the end: drain what is left.
			for range dp.lines {
			}
			_ = dp.cmd.Wait()
			close(dp.exitCh)
		}()
	})
	return dp.exitCh
}

// close ends the process group (SIGCONT, SIGKILL), waits for it and
// removes the temp dir. It is safe to call twice.
func (dp *driverProc) close() {
	dp.mu.Lock()
	if dp.closed {
		dp.mu.Unlock()
		return
	}
	dp.closed = true
	dp.mu.Unlock()
	pg := -dp.cmd.Process.Pid
	_ = syscall.Kill(pg, syscall.SIGCONT)
	_ = syscall.Kill(pg, syscall.SIGKILL)
	// and every descendant that left the group (setsid): one that kept
	// stdout open would also hold back the EOF the wait below needs
	reap.Kill(dp.mark)
	_ = dp.stdin.Close()
	select {
	case <-dp.exited():
	case <-time.After(5 * time.Second):
	}
	close(dp.done)
	dp.release()
	_ = os.RemoveAll(dp.tmp)
}
