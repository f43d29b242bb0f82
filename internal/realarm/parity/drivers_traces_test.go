package parity

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/sim"
)

// fakeRuns is a stand-in for real runs: seed s gets verdicts[s], and each
// run writes a trace naming its seed where it is asked to.
func fakeRuns(verdicts map[uint64]checker.Verdict) func(context.Context, DriversOptions, *realredis.Job, string) (*childRun, error) {
	return func(_ context.Context, _ DriversOptions, job *realredis.Job, trace string) (*childRun, error) {
		v := verdicts[job.Spec.Seed]
		if v == "" {
			v = "safe"
		}
		if trace != "" {
			if err := os.WriteFile(trace, []byte(`{"seed":`+strings.Repeat("1", int(job.Spec.Seed))+"}\n"), 0o644); err != nil {
				return nil, err
			}
		}
		return &childRun{Verdict: v, Repro: job.Repro()}, nil
	}
}

// files lists every file under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func runFake(t *testing.T, out string, runs int, verdicts map[uint64]checker.Verdict) *DriversResult {
	t.Helper()
	opt := DriversOptions{Dir: "../../../drivers", Scenarios: []string{"no-faults"}, Arms: []Arm{shippedArm(t, DriverWorld, control)},
		SimRuns: 1, RealRuns: runs, RealJobs: 2, TracesIn: out, run: fakeRuns(verdicts)}
	res, err := RunDrivers(context.Background(), sim.Bubble(nil), opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Write(out); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDriversKeepOffVerdictTraces: in a no-faults cell (expected safe)
// where seed 3 is unsafe, seed 3's trace is kept under traces/, named by
// cell, arm and seed, and drivers.json and drivers.txt name it; nothing
// else is written, and the staging folder is gone.
func TestDriversKeepOffVerdictTraces(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the staging folder's parent
	out := filepath.Join(t.TempDir(), "p")
	res := runFake(t, out, 5, map[uint64]checker.Verdict{3: "unsafe"})
	want := []string{DriversJSONFile, DriversTableFile, "traces/no-faults_python-set-nx-cad_seed3.jsonl"}
	if got := files(t, out); !slices.Equal(got, want) {
		t.Errorf("wrote %v, want %v", got, want)
	}
	b, err := os.ReadFile(filepath.Join(out, "traces/no-faults_python-set-nx-cad_seed3.jsonl"))
	if err != nil || string(b) != `{"seed":111}`+"\n" {
		t.Errorf("kept trace %q, %v: want seed 3's", b, err)
	}
	c := res.Cell("no-faults", control)
	if len(c.Traces) != 1 || c.Traces[0].Seed != 3 || c.Traces[0].Verdict != "unsafe" {
		t.Errorf("cell's traces %+v, want seed 3 unsafe", c.Traces)
	}
	back, err := ReadDrivers(out)
	if err != nil || back.Cell("no-faults", control) == nil || len(back.Cell("no-faults", control).Traces) != 1 {
		t.Errorf("drivers.json does not name the trace: %+v, %v", back, err)
	}
	tb, _ := os.ReadFile(filepath.Join(out, DriversTableFile))
	if !strings.Contains(string(tb), "no-faults × python-set-nx-cad seed 3 (unsafe): traces/no-faults_python-set-nx-cad_seed3.jsonl") {
		t.Errorf("drivers.txt does not name the trace:\n%s", tb)
	}
	if left := files(t, tmp); len(left) != 0 {
		t.Errorf("left behind in the temp dir: %v", left)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left behind in the temp dir: %v", ents)
	}
}

// TestDriversKeepAtMostThree: a cell keeps the first MaxKeptTraces off
// runs by seed and counts the rest; a cell whose runs all agree with its
// expectation keeps none (no traces folder at all).
func TestDriversKeepAtMostThree(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	out := filepath.Join(t.TempDir(), "p")
	res := runFake(t, out, 10, map[uint64]checker.Verdict{2: "unsafe", 4: "unknown", 5: "unsafe", 7: "unsafe", 8: "unsafe"}) // 5 safe: most runs
	c := res.Cell("no-faults", control)
	var seeds []uint64
	for _, tr := range c.Traces {
		seeds = append(seeds, tr.Seed)
	}
	if !slices.Equal(seeds, []uint64{2, 4, 5}) || c.TracesNotKept != 2 {
		t.Errorf("kept seeds %v, %d not kept; want [2 4 5], 2", seeds, c.TracesNotKept)
	}
	if got := files(t, out); len(got) != 2+MaxKeptTraces {
		t.Errorf("wrote %v, want the table and %d traces", got, MaxKeptTraces)
	}

	clean := filepath.Join(t.TempDir(), "q")
	runFake(t, clean, 4, nil)
	if got := files(t, clean); !slices.Equal(got, []string{DriversJSONFile, DriversTableFile}) {
		t.Errorf("an all-safe no-faults cell wrote %v, want the table only", got)
	}
}

// TestDriversFailoverCell: set-nx-cad's table runs failover in
// primary-replica's world at ReplicatedTTL (the runs are built so, and
// the cell says so); node-redlock, which refuses a Sentinel world, is
// not run there and the cell says why.
func TestDriversFailoverCell(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var locks []string
	var ttls []time.Duration
	run := fakeRuns(nil)
	opt := DriversOptions{Dir: "../../../drivers", Scenarios: []string{"failover"}, Arms: []Arm{shippedArm(t, DriverWorld, control), shippedArm(t, DriverWorld, "node-redlock")},
		SimRuns: 1, RealRuns: 2, RealJobs: 1,
		run: func(ctx context.Context, o DriversOptions, job *realredis.Job, trace string) (*childRun, error) {
			locks, ttls = append(locks, job.Spec.Lock), append(ttls, job.TTL)
			return run(ctx, o, job, trace)
		}}
	res, err := RunDrivers(context.Background(), sim.Bubble(nil), opt)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cell("failover", control)
	if c.Lock != ReplicatedLock || time.Duration(c.TTLNS) != ReplicatedTTL || c.Runs != 2 {
		t.Errorf("control's failover cell: lock %q, TTL %v, %d runs; want %s, %v, 2", c.Lock, time.Duration(c.TTLNS), c.Runs, ReplicatedLock, ReplicatedTTL)
	}
	if !slices.Equal(locks, []string{ReplicatedLock, ReplicatedLock}) || !slices.Equal(ttls, []time.Duration{ReplicatedTTL, ReplicatedTTL}) {
		t.Errorf("runs built in %v at %v; want primary-replica at %v", locks, ttls, ReplicatedTTL)
	}
	if r := res.Cell("failover", "node-redlock"); r.NotSupported == "" || !strings.Contains(r.NotSupported, "independent nodes") || r.Runs != 0 {
		t.Errorf("node-redlock's failover cell: %+v; want not supported, naming independent nodes", r)
	}
}

// TestMoveTracesAllOrNothing: when one kept trace cannot be placed (its
// name is taken by a folder, or its staged file is gone), none is: the
// traces already placed and every temp file are removed, and the error
// names the trace.
func TestMoveTracesAllOrNothing(t *testing.T) {
	for _, broken := range []string{"the place is a folder", "the staged file is gone"} {
		stage, out := t.TempDir(), t.TempDir()
		r := &DriversResult{}
		for i, sc := range []string{"a", "b", "c"} {
			staged := filepath.Join(stage, sc)
			if err := os.WriteFile(staged, []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			c := DriverCell{Scenario: sc, Arm: "x", Traces: []KeptTrace{{Seed: uint64(i + 1), File: TracesFolder + "/" + sc + ".jsonl"}}, staged: []string{staged}}
			r.Cells = append(r.Cells, c)
		}
		if broken == "the place is a folder" {
			if err := os.MkdirAll(filepath.Join(out, TracesFolder, "c.jsonl", "x"), 0o755); err != nil {
				t.Fatal(err)
			}
		} else {
			os.Remove(filepath.Join(stage, "b"))
		}
		err := r.moveTraces(out)
		if err == nil {
			t.Fatalf("%s: no error", broken)
		}
		want := "seed 2"
		if broken == "the place is a folder" {
			want = "c.jsonl"
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not name the trace (%s)", broken, err, want)
		}
		if got := files(t, out); len(got) != 0 {
			t.Errorf("%s: left %v, want no file (no trace, no temp)", broken, got)
		}
	}
}

// TestKeepTracesSaysTheCut: a kept trace cut at its bound says so in the
// table, and a run that needed explaining but wrote no trace is counted.
func TestKeepTracesSaysTheCut(t *testing.T) {
	stage := t.TempDir()
	cutTrace := filepath.Join(stage, "s1")
	if err := os.WriteFile(cutTrace, []byte("{\"locksim_real_run\":{}}\n{}\n{\"locksim_trace_cut\":{\"kept_events\":1,\"not_kept\":9,\"max_bytes\":1048576}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &DriverCell{Scenario: "no-faults", Arm: "x", Expected: "safe", Verdicts: map[checker.Verdict]int{"safe": 8, "unsafe": 2}}
	c.keepTraces(DriverWorld, []uint64{1, 2}, []checker.Verdict{"unsafe", "unsafe"}, []string{cutTrace, filepath.Join(stage, "s2")})
	if len(c.Traces) != 1 || !strings.HasPrefix(c.Traces[0].Cut, "trace cut at 1 events: 9 not kept") || c.TracesNotKept != 1 {
		t.Fatalf("kept %+v, not kept %d; want seed 1's, cut, and seed 2 counted", c.Traces, c.TracesNotKept)
	}
	var b strings.Builder
	(&DriversResult{Cells: []DriverCell{*c}}).writeTraces(&b)
	if !strings.Contains(b.String(), "(trace cut at 1 events: 9 not kept") || !strings.Contains(b.String(), "1 more such runs, traces not kept") {
		t.Errorf("the table does not say the cut and the missing trace:\n%s", b.String())
	}
}

// TestMoveTracesTakesDriverStderr: the drivers' stderr written beside a
// staged trace (realredis.DriverStderrPath) is kept beside the kept trace.
func TestMoveTracesTakesDriverStderr(t *testing.T) {
	stage, out := t.TempDir(), t.TempDir()
	staged := filepath.Join(stage, "s1.jsonl")
	for path, body := range map[string]string{staged: "{}\n", realredis.DriverStderrPath(staged): "Traceback\n"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := TracesFolder + "/a.jsonl"
	r := &DriversResult{Cells: []DriverCell{{Scenario: "a", Arm: "x", Traces: []KeptTrace{{Seed: 1, File: file}}, staged: []string{staged}}}}
	if err := r.moveTraces(out); err != nil {
		t.Fatal(err)
	}
	kept := realredis.DriverStderrPath(filepath.Join(out, filepath.FromSlash(file)))
	if b, err := os.ReadFile(kept); err != nil || string(b) != "Traceback\n" {
		t.Errorf("the drivers' stderr beside the kept trace: %q, %v; want the staged one", b, err)
	}
}
