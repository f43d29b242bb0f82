package realredis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

func traceJudged(t *testing.T, n int) *Judged {
	t.Helper()
	job, err := BuildScaled(run.Spec{Scenario: "pause-after-check", Lock: "set-nx-cad", Seed: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var evs []sim.Event
	for i := range n {
		evs = append(evs, sim.Event{T: int64(i) * 1e6, Proc: fmt.Sprintf("c%d", i%3), Kind: event.KindCall, Op: event.OpRead, OpID: int64(i)})
	}
	return &Judged{Judged: &run.Judged{Job: job.Job, Result: &sim.Result{History: evs}}, Real: job, Info: &Info{}}
}

// oldTrace is the trace as it was built before it was streamed: the
// header, then each event's JSON, in memory.
func oldTrace(t *testing.T, jd *Judged) []byte {
	var b bytes.Buffer
	hdr, err := json.Marshal(map[string]any{"locksim_real_run": map[string]any{"repro": jd.Real.Repro(), "ttl_ns": int64(jd.Real.TTL),
		"time_scale": jd.Real.Scale, "replayable": false, "faults": jd.Job.Config.Faults}})
	if err != nil {
		t.Fatal(err)
	}
	b.Write(hdr)
	b.WriteByte('\n')
	for _, ev := range jd.Result.History {
		line, _ := json.Marshal(ev)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func onlyFile(t *testing.T, dir string) {
	t.Helper()
	es, _ := os.ReadDir(dir)
	if len(es) != 1 {
		t.Errorf("%s holds %d entries, want the trace alone: %v", dir, len(es), es)
	}
}

// TestWriteHistoryWhole: under its bound the streamed trace is byte for
// byte the trace built in memory, and says no cut.
func TestWriteHistoryWhole(t *testing.T) {
	jd := traceJudged(t, 200)
	want := oldTrace(t, jd)
	path := filepath.Join(t.TempDir(), "t.jsonl")
	for _, max := range []int64{0, int64(len(want))} {
		if err := jd.WriteHistoryMax(path, max); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got, want) || jd.TraceCut != nil || ReadTraceCut(path) != nil {
			t.Errorf("bound %d: %d bytes (cut %v), want the %d of the whole trace", max, len(got), jd.TraceCut, len(want))
		}
	}
	onlyFile(t, filepath.Dir(path))
}

// TestWriteHistoryCut: past its bound the trace keeps the header and the
// events that fit, then a line saying the cut, which the summary, --json
// and ReadTraceCut say too.
func TestWriteHistoryCut(t *testing.T) {
	jd := traceJudged(t, 200)
	whole := oldTrace(t, jd)
	lines := bytes.SplitAfter(whole, []byte{'\n'})
	bound := int64(len(bytes.Join(lines[:51], nil))) + 10 // the header and 50 events, and not the 51st
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := jd.WriteHistoryMax(path, bound); err != nil {
		t.Fatal(err)
	}
	want := &TraceCut{Kept: 50, NotKept: 150, MaxBytes: bound}
	if jd.TraceCut == nil || *jd.TraceCut != *want {
		t.Fatalf("cut %+v, want %+v", jd.TraceCut, want)
	}
	got, _ := os.ReadFile(path)
	if !bytes.HasPrefix(got, bytes.Join(lines[:51], nil)) {
		t.Errorf("the cut trace does not begin with the header and the first 50 events")
	}
	if c := ReadTraceCut(path); c == nil || *c != *want {
		t.Errorf("ReadTraceCut: %+v, want %+v", c, want)
	}
	if n := bytes.Count(got, []byte{'\n'}); n != 52 {
		t.Errorf("%d lines, want 52 (header, 50 events, the cut)", n)
	}
	if !strings.HasPrefix(want.String(), "trace cut at 50 events: 150 not kept") {
		t.Errorf("the cut says %q", want)
	}
	if jd.JSONFields()["trace_cut"] != want.String() {
		t.Errorf("--json trace_cut %v", jd.JSONFields()["trace_cut"])
	}
	onlyFile(t, filepath.Dir(path))
}

// TestWriteHistoryError: a path that cannot be written is an error
// naming it, and leaves nothing behind.
func TestWriteHistoryError(t *testing.T) {
	jd := traceJudged(t, 10)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := jd.WriteHistoryMax(filepath.Join(dir, "d"), 0)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "d")) {
		t.Errorf("writing over a folder: %v, want an error naming it", err)
	}
	onlyFile(t, dir)
}
