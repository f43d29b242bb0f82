package parity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/realarm/realredis"
)

// The drivers table keeps the trace of every real run that needs
// explaining: a run whose verdict differs from its cell's expectation or
// from the most common verdict of its cell, at most MaxKeptTraces a cell.
// Every real run writes its history (JSON Lines, bounded by
// TraceMaxBytes) into a staging folder in the system's temp dir; once a
// cell's runs are in, the traces it keeps are moved to DIR/traces/ (the
// table's folder) only when the whole table completes, and the staging
// folder is removed in every case (done, failed, interrupted).

// MaxKeptTraces is how many traces a cell keeps.
const MaxKeptTraces = 3

// TraceMaxBytes bounds one kept trace: the usual --trace bound
// (run --trace-max-mb's default, 1024 MiB). A longer history is cut
// (realredis.TraceCut), and the table says so beside the trace.
const TraceMaxBytes = 1024 << 20

// TracesFolder is where the kept traces go, under the table's folder.
const TracesFolder = "traces"

// KeptTrace is one kept trace: the run, its verdict, and its file
// relative to the table's folder.
type KeptTrace struct {
	Seed    uint64          `json:"seed"`
	Verdict checker.Verdict `json:"verdict"`
	File    string          `json:"file"`
	// Cut says the trace was cut at its bound ("": it is whole).
	Cut string `json:"cut,omitempty"`
}

// traceName is the kept trace's file name: world (when not the default),
// scenario, arm and seed.
func traceName(world, scenario, arm string, seed uint64) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
				return r
			}
			return '-'
		}, s)
	}
	name := fmt.Sprintf("%s_%s_seed%d.jsonl", clean(scenario), clean(arm), seed)
	if world != "" && world != DriverWorld {
		name = clean(world) + "_" + name
	}
	return name
}

// mostCommon is the verdict most of a cell's runs had (ties: the worse,
// in the parity rule's order: run.Tally.WorstVerdict, then error).
func mostCommon(counts map[checker.Verdict]int) checker.Verdict {
	best, n := checker.Verdict(""), 0
	for _, v := range []checker.Verdict{checker.VerdictUnsafe, checker.VerdictLiveness, checker.VerdictUnknown, VerdictError, checker.VerdictSafe} {
		if counts[v] > n {
			best, n = v, counts[v]
		}
	}
	return best
}

// needsExplaining: a run's verdict v is not its cell's expectation, or
// not what most of its cell's runs did.
func (c *DriverCell) needsExplaining(v checker.Verdict) bool {
	return v != mostCommon(c.Verdicts) || (c.Expected != "" && v != c.Expected)
}

// keepTraces picks, in seed order, the staged traces of the cell's runs
// that need explaining (at most MaxKeptTraces; the rest are counted) and
// removes every other staged trace of the cell.
func (c *DriverCell) keepTraces(world string, seeds []uint64, verdicts []checker.Verdict, staged []string) {
	for i, path := range staged {
		if path == "" {
			continue
		}
		if verdicts[i] == "" || !c.needsExplaining(verdicts[i]) {
			_ = os.Remove(path)
			continue
		}
		if _, err := os.Stat(path); err != nil || len(c.Traces) >= MaxKeptTraces {
			c.TracesNotKept++ // past the few kept, or the run could not write it
			_ = os.Remove(path)
			continue
		}
		kt := KeptTrace{Seed: seeds[i], Verdict: verdicts[i], File: TracesFolder + "/" + traceName(world, c.Scenario, c.Arm, seeds[i])}
		if cut := realredis.ReadTraceCut(path); cut != nil {
			kt.Cut = cut.String()
		}
		c.Traces = append(c.Traces, kt)
		c.staged = append(c.staged, path)
	}
}

// moveTraces moves every cell's kept traces from the staging folder to
// dir/traces/, all or none: each is first moved to a temp file beside its
// place, then the temps are renamed into place; on any error every temp
// and every trace this call placed is removed (a trace an earlier table
// left at the same name is then gone too), and the error names the trace.
func (r *DriversResult) moveTraces(dir string) (err error) {
	type move struct{ tmp, dst string }
	var moves []move
	placed := 0
	defer func() {
		if err == nil {
			return
		}
		for k, m := range moves {
			if k < placed {
				os.Remove(m.dst)
			} else {
				os.Remove(m.tmp)
			}
		}
	}()
	for i := range r.Cells {
		c := &r.Cells[i]
		for k, t := range c.Traces {
			dst := filepath.Join(dir, filepath.FromSlash(t.File))
			what := fmt.Sprintf("keeping the trace of %s × %s seed %d", c.Scenario, c.Arm, t.Seed)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			// The drivers' stderr, written beside the trace
			// (realredis.DriverStderrPath), goes with it.
			files := [][2]string{{c.staged[k], dst}}
			if errSrc := realredis.DriverStderrPath(c.staged[k]); fileExists(errSrc) {
				files = append(files, [2]string{errSrc, realredis.DriverStderrPath(dst)})
			}
			for _, f := range files {
				tmp, err := os.CreateTemp(filepath.Dir(f[1]), "."+filepath.Base(f[1])+".tmp-*")
				if err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
				tmp.Close()
				moves = append(moves, move{tmp.Name(), f[1]})
				if err := moveFile(f[0], tmp.Name()); err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
			}
		}
	}
	for _, m := range moves {
		if err := os.Rename(m.tmp, m.dst); err != nil {
			return fmt.Errorf("keeping the trace %s: %w", m.dst, err)
		}
		placed++
	}
	for i := range r.Cells {
		r.Cells[i].staged = nil
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// moveFile renames src to dst, or copies it through a temp file beside
// dst when they are on different file systems.
func moveFile(src, dst string) error {
	err := os.Rename(src, dst)
	if err == nil {
		return nil
	}
	var le *os.LinkError
	if !errors.As(err, &le) {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Remove(src)
}

// runOne runs job, its history into trace ("": none): as its own
// process (opt.Exe) or in this one.
func runOne(ctx context.Context, opt DriversOptions, job *realredis.Job, trace string) (*childRun, error) {
	if opt.Exe != "" {
		return runChild(ctx, opt.Exe, job, trace)
	}
	jd, err := job.RunAndJudge(ctx, "")
	if jd == nil {
		return nil, err
	}
	o := jd.Outcome()
	c := &childRun{Verdict: o.Verdict, Repro: jd.Real.Repro(), StallMS: o.StallMaxMS, Machine: o.Machine, Fenced: o.FencedRejections,
		Injected: o.Injected, Bit: o.Bit, ClockUnreached: o.ClockUnreached}
	if len(jd.Check.Reasons) > 0 {
		c.Reason = jd.Check.Reasons[0]
	}
	if jd.Err != nil {
		c.Err = jd.Err.Error()
	}
	if trace != "" {
		_ = jd.WriteHistoryMax(trace, TraceMaxBytes) // past the bound: none kept
	}
	return c, nil
}

// writeTraces lists the kept traces under the table.
func (r *DriversResult) writeTraces(w io.Writer) {
	head := false
	for _, c := range r.Cells {
		if len(c.Traces) == 0 && c.TracesNotKept == 0 {
			continue
		}
		if !head {
			fmt.Fprintf(w, "\ntraces kept (runs whose verdict is not the expectation or not most of the cell's, at most %d a cell):\n", MaxKeptTraces)
			head = true
		}
		for _, t := range c.Traces {
			cut := ""
			if t.Cut != "" {
				cut = " (" + t.Cut + ")"
			}
			fmt.Fprintf(w, "  %s × %s seed %d (%s): %s%s\n", c.Scenario, c.Arm, t.Seed, t.Verdict, t.File, cut)
		}
		if c.TracesNotKept > 0 {
			fmt.Fprintf(w, "  %s × %s: %d more such runs, traces not kept (past %d a cell, or not written)\n", c.Scenario, c.Arm, c.TracesNotKept, MaxKeptTraces)
		}
	}
}
