package checker

import (
	"path/filepath"
	"testing"
	"time"
)

// Real histories from `locksim run --trace` (default scenario, 5 clients,
// 2 min of faults then 30 s of liveness), with the Redis command and
// storage-read records left out: testdata/<lock>-<seed>.jsonl.gz.

func TestTraceSetNXDelForeignRelease(t *testing.T) {
	h := loadTrace(t, "testdata/set-nx-del-1.jsonl.gz", "")
	r := Check(h, Options{})
	if r.Verdict != VerdictUnsafe || r.LeaseOverlaps != 1 || r.OwnershipViolations != 1 ||
		r.ResourceViolations != 1 || r.Porcupine != LinIllegal {
		t.Fatalf("verdict %s, overlaps %d, ownership %d, resource %d, porcupine %s; reasons %q",
			r.Verdict, r.LeaseOverlaps, r.OwnershipViolations, r.ResourceViolations, r.Porcupine, r.Reasons)
	}
	// c0's lease ran out during a partition; c2 acquired at 31.490965101s;
	// c0's plain DEL removed c2's key at 31.875s; c2 then wrote over c0.
	if v := r.FirstOwnershipViolation; v.Client != "c0" || v.Other != "c2" || v.OtherAt != 31490965101 {
		t.Errorf("ownership %+v", v)
	}
	if r.First.Kind != KindLeaseOverlap || r.FirstViolationTime() != 31490965101 {
		t.Errorf("first violation %+v", r.First)
	}
	s := Slice(h, r, 0)
	if len(s) == 0 || len(s) > MaxSliceEvents {
		t.Fatalf("slice of %d events", len(s))
	}
	procs := map[string]bool{}
	for _, e := range s {
		procs[e.Proc] = true
	}
	if !procs["c0"] || !procs["c2"] || procs["c1"] || procs["c3"] {
		t.Errorf("slice processes %v, want c0 and c2 (and faults) only", procs)
	}
	if err := WriteVisualization(filepath.Join(t.TempDir(), "v.html"), h, r); err != nil {
		t.Error(err)
	}
}

func TestTraceSetNXCADSafe(t *testing.T) {
	h := loadTrace(t, "testdata/set-nx-cad-2.jsonl.gz", "")
	r := Check(h, Options{})
	if r.Verdict != VerdictSafe || r.Porcupine != LinOK || r.Linearizability.Sections < 200 || !r.Liveness.Judged {
		t.Errorf("verdict %s, porcupine %s on %d sections; reasons %q", r.Verdict, r.Porcupine, r.Linearizability.Sections, r.Reasons)
	}
	if r.Liveness.LongestUnavailableNS <= 0 {
		t.Error("no unavailability window in a run with faults")
	}
}

func TestTraceSetNXDelDeadlock(t *testing.T) {
	h := loadTrace(t, "testdata/setnx-del-1.jsonl.gz", "")
	r := Check(h, Options{})
	if r.Verdict != VerdictLiveness || !r.Liveness.Deadlock || len(r.Liveness.Starved) != 5 {
		t.Errorf("verdict %s, liveness %+v", r.Verdict, r.Liveness)
	}
}

func TestTraceVersionCASSafe(t *testing.T) {
	h := loadTrace(t, "testdata/version-cas-2.jsonl.gz", FenceVersion)
	start := time.Now()
	// A budget of a minute, not the default 10 s: the search takes 0.4 s
	// alone and passed 10 s under -race on a machine loaded ~20 deep. The
	// verdict, not the speed, is what this test checks.
	r := Check(h, Options{PorcupineTimeout: time.Minute})
	if r.Verdict != VerdictSafe || r.Porcupine != LinOK || r.Linearizability.Unknown == 0 {
		t.Errorf("verdict %s, porcupine %s (%d sections, %d unknown); reasons %q",
			r.Verdict, r.Porcupine, r.Linearizability.Sections, r.Linearizability.Unknown, r.Reasons)
	}
	t.Logf("%d sections checked in %v", r.Linearizability.Sections, time.Since(start))
}
