package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// Files a sweep writes into its folder.
const (
	ResultsFile = "results.jsonl" // one line per job, in job order
	SpecFile    = "sweep.json"    // what was swept: a rerun must match it
	CSVFile     = "results.csv"   // the same lines as CSV, written when the sweep is complete
	LockFile    = ".locksim.lock" // the pid of the sweep writing the folder
)

// fsyncEvery is how often the results file is synced while a sweep runs.
const fsyncEvery = 2 * time.Second

// Sweep is a sweep to run into a results folder.
type Sweep struct {
	Spec Spec
	Dir  string
	// Workers is how many jobs run at once (at least 1).
	Workers int
	// Worker is the command line of a worker process (see NewRunners);
	// empty: every job runs in this process.
	Worker []string
	// Log receives notices (a torn line cut off) and the worker
	// processes' stderr; nil discards them.
	Log io.Writer
	// Progress, if set, is called with the jobs of this shard done so far
	// and their number, once before the first job and after each line.
	Progress func(done, total int)
	// Draw draws the rate charts when the sweep is complete.
	Draw bool
	// Summary receives the rate table when the sweep is complete (nil:
	// discarded).
	Summary io.Writer
	// NewRunner, if set, makes every worker's runner instead of NewRunners
	// (the real-Redis arm's, for Spec.Backend "real").
	NewRunner func() (Runner, error)
	// Store, if set, answers the jobs it holds and keeps the others'
	// outcomes (a result store: reports.Store); nil: every job runs. Only
	// for the simulator, whose runs a key decides.
	Store interface {
		Run(Runner, Request) (Outcome, error)
	}
}

// Status is how far a sweep got.
type Status struct {
	Mine, Done  int // jobs of this shard; jobs with a line
	Interrupted bool
}

// Prepare validates the spec, creates the folder, and checks that a sweep
// already in it is this one (writing sweep.json if there is none). It
// checks and writes under the folder's lock (LockDir), so a sweep running
// in the folder, or one starting into it at the same instant, never finds
// another's spec beside its results. Every error it returns is an
// *InputError.
func Prepare(dir string, spec Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &InputError{"out", fmt.Errorf("cannot create %q: %v", dir, run.UnwrapPathError(err))}
	}
	unlock, err := LockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	return checkSpec(dir, spec)
}

// checkSpec checks that the sweep in dir is spec, writing sweep.json if
// the folder has none; the caller holds the folder's lock.
func checkSpec(dir string, spec Spec) error {
	want := spec.encode()
	path := filepath.Join(dir, SpecFile)
	have, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, err := os.Stat(filepath.Join(dir, ResultsFile)); err == nil {
			return &InputError{"out", fmt.Errorf("%q has a %s but no %s: not a locksim sweep directory, or a damaged one", dir, ResultsFile, SpecFile)}
		}
		if err := run.WriteFileAtomic(path, want); err != nil {
			return &InputError{"out", fmt.Errorf("cannot write %q: %v", path, run.UnwrapPathError(err))}
		}
	case err != nil:
		return &InputError{"out", fmt.Errorf("cannot read %q: %v", path, run.UnwrapPathError(err))}
	case !bytes.Equal(have, want):
		var old Spec
		if json.Unmarshal(have, &old) == nil {
			if why := otherBuild(old, spec, "it", "this one"); why != "" {
				return &InputError{"out", fmt.Errorf("%q holds this sweep run by another build of locksim, whose results may differ (%s); finish it with that build, or use another directory", dir, why)}
			}
		}
		return &InputError{"out", fmt.Errorf("%q holds a different sweep (%s); use another directory, or rerun that sweep's command to resume it", dir, spec.differs(have))}
	}
	return nil
}

// Run runs the jobs not yet in the results file (the folder must have
// been prepared; its spec is checked again under the folder's lock),
// appending their lines in job order; when all are there it writes the
// CSV, the summary and the charts (Finish). Cancelling ctx
// stops it after the running jobs, their lines written: Status says so.
// Errors about the folder's contents are *InputError; others are
// failures (a worker process died, a disk error).
func (sw *Sweep) Run(ctx context.Context, b sim.Bubble) (Status, error) {
	log := sw.Log
	if log == nil {
		log = io.Discard
	}
	unlock, err := LockDir(sw.Dir)
	if err != nil {
		return Status{}, err
	}
	defer unlock()
	s := &sw.Spec
	// Checked again under the lock: the folder may have changed hands
	// since Prepare released it.
	if err := checkSpec(sw.Dir, *s); err != nil {
		return Status{}, err
	}
	path := filepath.Join(sw.Dir, ResultsFile)
	have, sorted, err := loadExisting(path, s, log)
	if err != nil {
		return Status{}, err
	}
	var todo []int
	mine := 0
	for i := 0; i < s.Total(); i++ {
		if !s.Mine(i) {
			continue
		}
		mine++
		if !have[i] {
			todo = append(todo, i)
		}
	}
	st := Status{Mine: mine, Done: mine - len(todo)}
	if mine == 0 {
		// An empty shard (more shards than jobs) is a complete, empty
		// result: an empty results file that merge accepts.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return st, fmt.Errorf("cannot write %q: %v", path, run.UnwrapPathError(err))
		}
		if err := f.Close(); err != nil {
			return st, fmt.Errorf("cannot write %q: %v", path, err)
		}
	}
	if len(todo) > 0 {
		file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return st, fmt.Errorf("cannot write %q: %v", path, run.UnwrapPathError(err))
		}
		w := newLineWriter(file)
		if sw.Progress != nil {
			sw.Progress(st.Done, mine)
		}
		workers := min(max(1, sw.Workers), len(todo))
		var runners []Runner
		if sw.NewRunner != nil {
			for range workers {
				r, err := sw.NewRunner()
				if err != nil {
					file.Close()
					return st, err
				}
				runners = append(runners, r)
			}
		} else if runners, err = NewRunners(workers, b, sw.Worker, log); err != nil {
			file.Close()
			return st, err
		}
		n, runErr := RunOrdered(ctx, workers, Window, len(todo), func(w, k int) (Line, error) {
			j := s.Job(todo[k])
			req := Request{Spec: s.Run(j)}
			var out Outcome
			var err error
			if sw.Store != nil {
				out, err = sw.Store.Run(runners[w], req)
			} else {
				out, err = runners[w].Run(req)
			}
			if err != nil {
				return Line{}, err
			}
			return s.Line(j, out), nil
		}, func(k int, l Line) error {
			if err := w.add(l); err != nil {
				return err
			}
			if sw.Progress != nil {
				sw.Progress(st.Done+k+1, mine)
			}
			return nil
		})
		closeErr := w.close()
		if err := CloseRunners(runners); err != nil && runErr == nil {
			runErr = fmt.Errorf("a worker process failed: %v", err)
		}
		st.Done += n
		if runErr == nil && closeErr != nil {
			runErr = fmt.Errorf("writing %q: %v", path, closeErr)
		}
		if runErr != nil {
			return st, runErr
		}
		if n < len(todo) {
			st.Interrupted = true
			return st, nil
		}
	}
	if !sorted {
		if err := sortResults(path); err != nil {
			return st, err
		}
	}
	lines, err := ReadLines(path)
	if err != nil {
		return st, err
	}
	return st, Finish(sw.Dir, s, lines, sw.Summary, sw.Draw)
}

// loadExisting reads the lines a previous run left: a torn last line (no
// newline: the process died mid-write) is cut off; any other line must be
// one of this sweep's jobs. sorted is false when the lines are not in job
// order (the file was written by hand or joined by cat).
func loadExisting(path string, s *Spec, log io.Writer) (have map[int]bool, sorted bool, err error) {
	have = map[int]bool{}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return have, true, nil
	}
	if err != nil {
		return nil, false, &InputError{"out", fmt.Errorf("cannot read %q: %v", path, run.UnwrapPathError(err))}
	}
	if n := bytes.LastIndexByte(data, '\n') + 1; n < len(data) {
		if err := os.Truncate(path, int64(n)); err != nil {
			return nil, false, fmt.Errorf("cutting the torn last line of %q: %v", path, run.UnwrapPathError(err))
		}
		fmt.Fprintf(log, "locksim: %s: discarded a torn last line (%d bytes); that job runs again\n", path, len(data)-n)
		data = data[:n]
	}
	sorted = true
	last := -1
	for i, raw := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var l Line
		if err := json.Unmarshal(raw, &l); err != nil || !s.Matches(l) {
			return nil, false, &InputError{"out", fmt.Errorf("%s line %d is not a result of this sweep; use another directory", path, i+1)}
		}
		if have[l.Job] {
			return nil, false, &InputError{"out", fmt.Errorf("%s line %d repeats job %d", path, i+1, l.Job)}
		}
		have[l.Job] = true
		if l.Job < last {
			sorted = false
		}
		last = l.Job
	}
	return have, sorted, nil
}

// lineWriter appends whole JSON lines to the results file through one
// buffer, flushing after every line and syncing the file every fsyncEvery.
// Only the pool's emitter goroutine uses it.
type lineWriter struct {
	f        *os.File
	w        *bufio.Writer
	lastSync time.Time
}

func newLineWriter(f *os.File) *lineWriter {
	return &lineWriter{f: f, w: bufio.NewWriterSize(f, 64<<10), lastSync: time.Now()}
}

func (lw *lineWriter) add(l Line) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := lw.w.Write(b); err != nil {
		return err
	}
	// One flush per line: the file only ever ends in a whole line (a
	// single write of at most the buffer), unless the process dies inside
	// that write.
	if err := lw.w.Flush(); err != nil {
		return err
	}
	if time.Since(lw.lastSync) >= fsyncEvery {
		lw.lastSync = time.Now()
		return lw.f.Sync()
	}
	return nil
}

func (lw *lineWriter) close() error {
	err := lw.w.Flush()
	if serr := lw.f.Sync(); err == nil {
		err = serr
	}
	if cerr := lw.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadLines reads a complete results file.
func ReadLines(path string) ([]Line, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Line
	for i, raw := range bytes.Split(data, []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var l Line
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", path, i+1, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// EncodeLines renders lines as results.jsonl bytes.
func EncodeLines(lines []Line) ([]byte, error) {
	var buf bytes.Buffer
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// sortResults rewrites a results file in job order.
func sortResults(path string) error {
	lines, err := ReadLines(path)
	if err != nil {
		return err
	}
	slices.SortStableFunc(lines, func(a, b Line) int { return a.Job - b.Job })
	data, err := EncodeLines(lines)
	if err != nil {
		return err
	}
	return run.WriteFileAtomic(path, data)
}

// WriteCSV writes the lines as CSV, one row per job, the same columns.
func WriteCSV(path string, lines []Line) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"job", "scenario", "lock", "seed", "param", "value", "verdict", "claim", "lease_overlaps",
		"resource_violations", "porcupine", "ownership_violations", "stale_sections", "stale_accepted", "fenced_rejections", "starved", "trace_sha256", "error", "pause_short"})
	for _, l := range lines {
		v := ""
		if l.Value != nil {
			v = run.FormatValue(*l.Value)
		}
		w.Write([]string{strconv.Itoa(l.Job), l.Scenario, l.Lock, strconv.FormatUint(l.Seed, 10), l.Param, v, string(l.Verdict), l.Claim,
			strconv.Itoa(l.LeaseOverlaps), strconv.Itoa(l.ResourceViolations), l.Porcupine, strconv.Itoa(l.OwnershipViolations),
			strconv.Itoa(l.StaleSections), strconv.Itoa(l.StaleAccepted), strconv.Itoa(l.FencedRejections), strconv.Itoa(l.Starved),
			l.TraceSHA256, l.Error, strconv.FormatBool(l.PauseShort)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return run.WriteFileAtomic(path, buf.Bytes())
}

// LockDir takes the folder's advisory lock (flock on DIR/.locksim.lock,
// which holds the owner's pid), so two sweeps never append to one results
// file at once; the kernel drops the lock when its process ends, however
// it ends. A folder in use is an *InputError naming the pid.
func LockDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, &InputError{"out", fmt.Errorf("cannot lock %q: %v", dir, run.UnwrapPathError(err))}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			owner := strings.TrimSpace(string(pid))
			if owner == "" {
				owner = "unknown"
			}
			return nil, &InputError{"out", fmt.Errorf("%q is in use by another locksim sweep (pid %s); wait for it to finish, or write to another folder", dir, owner)}
		}
		return nil, &InputError{"out", fmt.Errorf("cannot lock %q: %v", dir, err)}
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		f.Truncate(0)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
