// Package reap makes sure no process a real run starts outlives it, and
// that what a killed run left in the temp folder is removed by the next.
//
// Every process locksim starts for a run (redis-server, redis-sentinel,
// ZooKeeper and etcd members, lock drivers, worker processes) goes
// through Start, which
//
//   - starts it from one goroutine locked to one OS thread that never
//     exits, with a parent-death signal (Pdeathsig SIGKILL): the kernel
//     sends it when the thread that forked the child ends, so a spawn
//     from an ordinary goroutine could be killed when the Go runtime
//     retires that thread, and a spawn from a thread that lives as long
//     as locksim is killed exactly when locksim dies, SIGKILL included;
//   - marks it with an environment variable (LOCKSIM_RUN_<owner>=<n>) that
//     its descendants inherit, setsid or not: Kill(mark) ends every live
//     process carrying it (a driver's grandchild that left the driver's
//     process group too), and a watchdog process ends every process
//     carrying the owner's mark when locksim dies.
//
// The watchdog is this same executable started again (its init sees
// LOCKSIM_INTERNAL_REAPER): it waits on a pipe whose other end only
// locksim holds, so it reads EOF when locksim exits however it exits,
// then kills every process with the owner's mark and exits.
//
// Why not PR_SET_CHILD_SUBREAPER: it makes orphans locksim's children,
// but when locksim itself is SIGKILLed they pass on to init and live on.
// A cgroup would hold them all, but needs a delegated cgroup v2 subtree
// that most machines (containers, CI runners) do not give a user. A PID
// namespace would end them all with its first process, but renumbers
// every driver's pid (several drivers as pid 1: a library that builds
// lock values from the pid would collide). The environment mark needs
// nothing; its limit: a descendant that clears its environment before it
// execs is not found (none of the drivers here does).
package reap

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// envPrefix starts every mark's variable name.
const envPrefix = "LOCKSIM_RUN_"

// reaperEnv, set to the owner's token, makes this executable a watchdog.
const reaperEnv = "LOCKSIM_INTERNAL_REAPER"

var (
	owner     = newToken()
	spawnOnce sync.Once
	spawnCh   chan spawnReq
	mu        sync.Mutex
	counter   int
	// watchdogPipe is the write end of the watchdog's stdin, held open
	// (and reachable, so no finalizer closes it) for locksim's life.
	watchdogPipe *os.File
	watchdogErr  error
)

func newToken() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return strconv.Itoa(os.Getpid()) + "_" + hex.EncodeToString(b)
}

func init() {
	if tok := os.Getenv(reaperEnv); tok != "" {
		watchdog(tok)
		os.Exit(0)
	}
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// spawner starts every process from one locked thread that lives as long
// as the process (the goroutine never returns, so the thread never exits):
// a child's Pdeathsig then fires only when locksim dies.
func spawner() {
	runtime.LockOSThread()
	for r := range spawnCh {
		r.done <- r.cmd.Start()
	}
}

// Mark names the processes of one Start: Kill(mark) ends them all.
type Mark string

// Start starts cmd with a parent-death signal (SIGKILL), from the spawning
// thread, marked as this run's, and starts the watchdog if it is not
// running yet. It keeps cmd's own SysProcAttr settings (a process group,
// Setpgid, stays the caller's choice). The returned mark finds cmd's
// process and every descendant of it.
func Start(cmd *exec.Cmd) (Mark, error) {
	mu.Lock()
	counter++
	n := counter
	mu.Unlock()
	startWatchdog()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, envPrefix+owner+"="+strconv.Itoa(n))
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go spawner()
	})
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnCh <- r
	return Mark(envPrefix + owner + "=" + strconv.Itoa(n)), <-r.done
}

// startWatchdog starts the watchdog once. A watchdog that cannot start
// (the executable gone) leaves the parent-death signal alone to end the
// direct children: Start does not fail for it (WatchdogErr says why).
func startWatchdog() {
	mu.Lock()
	defer mu.Unlock()
	if watchdogPipe != nil || watchdogErr != nil {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		watchdogErr = err
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		watchdogErr = err
		return
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), reaperEnv+"="+owner)
	cmd.Stdin = r
	// Its own process group: a Ctrl-C on the terminal is locksim's to
	// handle, not the watchdog's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		watchdogErr = err
		return
	}
	watchdogPipe = w
	go func() { _ = cmd.Wait() }() // it exits after locksim; reaped if it ends first
}

// WatchdogErr is why the watchdog could not start (nil: it runs, or no
// process was started yet).
func WatchdogErr() error {
	mu.Lock()
	defer mu.Unlock()
	return watchdogErr
}

// watchdog waits for EOF on stdin (locksim exited), then kills every
// process carrying owner tok's mark.
func watchdog(tok string) {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	buf := make([]byte, 64)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			break
		}
	}
	killAll(envPrefix + tok + "=")
}

// Kill ends (SIGKILL) every live process carrying m, however far it
// moved from the process Start started (another process group, another
// session), and returns how many it signalled.
func Kill(m Mark) int {
	return killAll(string(m))
}

// killAll kills every process whose environment holds an entry starting
// with prefix (a whole entry when prefix ends in a digit: the mark
// "…=1" must not match "…=12"), in rounds until a round finds none
// twice (a process forking as it dies), at most 50 rounds.
func killAll(prefix string) int {
	total, empty := 0, 0
	for round := 0; round < 50 && empty < 2; round++ {
		n := 0
		for _, pid := range Marked(prefix) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
		total += n
		if n == 0 {
			empty++
		} else {
			empty = 0
			time.Sleep(5 * time.Millisecond) // let a dying parent's last fork show up
		}
	}
	return total
}

// Marked lists the pids (not this process's) whose environment holds an
// entry matching prefix as killAll reads it. Zombies, and processes of
// other users when locksim is not root, have no readable environment and
// are never listed; as root every process is read, and only a mark (the
// owner's pid and four random bytes) tells them apart.
func Marked(prefix string) []int {
	whole := prefix != "" && prefix[len(prefix)-1] != '='
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			if whole && string(kv) == prefix || !whole && strings.HasPrefix(string(kv), prefix) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// String is the mark for messages.
func (m Mark) String() string { return fmt.Sprintf("%q", string(m)) }
