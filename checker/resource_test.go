package checker

import (
	"testing"
	"time"

	"github.com/locksim/locksim/event"
)

// lostUpdate: c0 and c1 both read 10 and both write 9; the storage accepts
// both (no fencing).
func lostUpdate() History {
	b := newHistory(ResourcePool, 10, "", "c0", "c1")
	b.op("c0", "read", 1, 10, 20, "ok", 10)
	b.op("c1", "read", 1, 30, 40, "ok", 10)
	b.op("c0", "write", 2, 50, 60, "ok", 9).store("c0", 55, "ok", 9, "a")
	b.op("c1", "write", 2, 70, 80, "ok", 9).store("c1", 75, "ok", 9, "b")
	return b.history(0, 100)
}

func TestLostUpdateCaughtByStorageTruthAndPorcupine(t *testing.T) {
	h := lostUpdate()
	tr := StorageTruth(h)
	if tr.Violations != 1 || len(tr.Listed) != 1 {
		t.Fatalf("storage truth: %+v, want one violation", tr)
	}
	v := tr.Listed[0]
	want := ResourceViolation{T: 75, Client: "c1", Object: "bonus-pool", Value: 9, Expected: 8, Previous: 9, PreviousClient: "c0", PreviousT: 55}
	if v != want {
		t.Errorf("violation %+v, want %+v", v, want)
	}
	if lin := Linearizable(h, time.Minute, 0); lin.Result != LinIllegal || lin.Sections != 2 {
		t.Errorf("porcupine: %s on %d sections, want illegal on 2", lin.Result, lin.Sections)
	} else if lin.Stuck == nil {
		t.Error("illegal without the stuck section")
	}
	r := Check(h, Options{})
	if r.Verdict != VerdictUnsafe || r.ResourceViolations != 1 || r.Porcupine != LinIllegal {
		t.Errorf("Check: verdict %s, resource %d, porcupine %s; reasons %q", r.Verdict, r.ResourceViolations, r.Porcupine, r.Reasons)
	}
	if r.First == nil || r.First.Kind != KindResource || r.FirstViolationTime() != 75 {
		t.Errorf("first violation %+v, want the resource violation at 75", r.First)
	}
}

func TestCounterLostUpdate(t *testing.T) {
	b := newHistory(ResourceCounter, 0, "", "c0", "c1")
	b.op("c0", "read", 1, 10, 20, "ok", 0)
	b.op("c1", "read", 1, 30, 40, "ok", 0)
	b.op("c0", "write", 2, 50, 60, "ok", 1).store("c0", 55, "ok", 1, "a")
	b.op("c1", "write", 2, 70, 80, "ok", 1).store("c1", 75, "ok", 1, "b")
	h := b.history(0, 100)
	if tr := StorageTruth(h); tr.Violations != 1 || tr.Listed[0].Expected != 2 {
		t.Errorf("storage truth %+v, want one violation expecting 2", tr)
	}
	if lin := Linearizable(h, time.Minute, 0); lin.Result != LinIllegal {
		t.Errorf("porcupine %s, want illegal", lin.Result)
	}
}

// A stale holder's write fenced by the storage is the fencing working: no
// violation, although the two beliefs overlap.
func TestFencedStaleWriteIsNotAViolation(t *testing.T) {
	b := newHistory(ResourcePool, 10, FenceMaxToken, "c0", "c1")
	b.acquire("c0", 1, 0, 5, "ok", 60) // believes until 60
	b.op("c0", "read", 2, 10, 15, "ok", 10)
	b.acquire("c1", 1, 20, 25, "ok", 200)
	b.op("c1", "read", 2, 30, 35, "ok", 10)
	b.op("c1", "write", 3, 40, 45, "ok", 9).store("c1", 42, "ok", 9, "t2")
	b.op("c0", "write", 3, 50, 55, "fail", 9).store("c0", 52, "fenced", 9, "t1")
	b.op("c0", "release", 4, 56, 57, "fail", 0)
	b.op("c1", "release", 4, 60, 61, "ok", 0)
	h := b.history(0, 100)
	r := Check(h, Options{})
	if r.ResourceViolations != 0 || r.Porcupine != LinOK {
		t.Fatalf("resource %d, porcupine %s, want 0 and ok; reasons %q", r.ResourceViolations, r.Porcupine, r.Reasons)
	}
	if r.LeaseOverlaps != 1 || r.OverlapNS != 31 {
		t.Errorf("overlaps %d (%d ns), want 1 of 31 ns (25..56, the release call)", r.LeaseOverlaps, r.OverlapNS)
	}
	if r.Claim != ClaimResourceSafety || r.Verdict != VerdictSafe {
		t.Errorf("claim %s verdict %s, want resource-safety and safe; reasons %q", r.Claim, r.Verdict, r.Reasons)
	}
	// The same history without fencing is unsafe: the overlap is the
	// violation then.
	h.Fencing = ""
	if r := Check(h, Options{}); r.Verdict != VerdictUnsafe || r.First == nil || r.First.Kind != KindLeaseOverlap {
		t.Errorf("without fencing: verdict %s, first %+v; want unsafe by lease overlap", r.Verdict, r.First)
	}
}

// An unknown write may or may not have applied: both are legal, and a
// later reader decides which.
func TestUnknownWriteAppliedOrNotBothLegal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		applied bool
		noReply bool
	}{
		{"applied", true, false},
		{"not applied", false, false},
		{"applied, no reply at all", true, true},
		{"not applied, no reply at all", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHistory(ResourcePool, 10, "", "c0", "c1")
			b.op("c0", "read", 1, 10, 20, "ok", 10)
			if tc.noReply {
				b.op("c0", "write", 2, 30, 0, "", 9)
			} else {
				b.op("c0", "write", 2, 30, 40, "unknown", 9)
			}
			seen := int64(10)
			if tc.applied {
				b.store("c0", 35, "ok", 9, "a")
				seen = 9
			}
			b.op("c1", "read", 1, 50, 60, "ok", seen)
			b.op("c1", "write", 2, 70, 80, "ok", seen-1).store("c1", 75, "ok", seen-1, "b")
			h := b.history(0, 100)
			lin := Linearizable(h, time.Minute, 0)
			if lin.Result != LinOK || lin.Unknown != 1 {
				t.Errorf("porcupine %s with %d unknown, want ok with 1", lin.Result, lin.Unknown)
			}
			if tr := StorageTruth(h); tr.Violations != 0 {
				t.Errorf("storage truth found %d violations", tr.Violations)
			}
		})
	}
}

// A fail is a clean refusal: the write did not apply. If a later reader
// sees its value anyway, the history is not linearizable.
func TestFailedWriteThatAppliedIsIllegal(t *testing.T) {
	b := newHistory(ResourcePool, 10, "", "c0", "c1")
	b.op("c0", "read", 1, 10, 20, "ok", 10)
	b.op("c0", "write", 2, 30, 40, "fail", 9)
	b.op("c1", "read", 1, 50, 60, "ok", 9)
	if lin := Linearizable(b.history(0, 100), time.Minute, 0); lin.Result != LinIllegal {
		t.Errorf("porcupine %s, want illegal", lin.Result)
	}
}

func TestDuplicateDeliveryIsNotAViolation(t *testing.T) {
	b := newHistory(ResourcePool, 10, "", "c0", "c1")
	b.store("c0", 10, "ok", 9, "a")
	b.store("c0", 20, "ok", 9, "a") // the same request again: no change
	b.store("c1", 30, "ok", 8, "b")
	tr := StorageTruth(b.history(0, 100))
	if tr.Violations != 0 || tr.Duplicates != 1 || tr.Writes != 3 {
		t.Errorf("%+v, want 3 writes, 1 duplicate, no violation", tr)
	}
	// The same repeat after another client's write moves the object back:
	// a violation.
	b.store("c0", 40, "ok", 9, "a")
	tr = StorageTruth(b.history(0, 100))
	if tr.Violations != 1 || tr.Listed[0].T != 40 || tr.Listed[0].Expected != 7 {
		t.Errorf("%+v, want the repeat at 40 as a violation expecting 7", tr)
	}
}

func TestSectionsPairing(t *testing.T) {
	b := newHistory(ResourcePool, 10, "", "c0")
	b.op("c0", "read", 1, 10, 20, "ok", 10)
	b.op("c0", "write", 2, 30, 40, "ok", 9) // section [10, 40]
	b.op("c0", "read", 3, 50, 60, "ok", 9)
	b.op("c0", "release", 4, 70, 80, "ok", 0) // read-only [50, 60]
	b.op("c0", "read", 5, 90, 95, "unknown", 0)
	b.op("c0", "write", 6, 100, 110, "fail", 8) // blind: its read failed
	b.op("c0", "read", 7, 120, 130, "ok", 9)
	b.op("c0", "write", 9, 140, 150, "ok", 8) // not consecutive: read-only + blind
	b.op("c0", "read", 10, 160, 170, "ok", 8) // still waiting at the end: read-only
	h := b.history(0, 1000)
	got := Sections(h)
	type sec struct {
		call, ret int64
		read      bool
		write     bool
		outcome   event.Kind
	}
	want := []sec{{10, 40, true, true, "ok"}, {50, 60, true, false, ""}, {100, 110, false, true, "fail"},
		{120, 130, true, false, ""}, {140, 150, false, true, "ok"}, {160, 170, true, false, ""}}
	if len(got) != len(want) {
		t.Fatalf("%d sections, want %d: %+v", len(got), len(want), got)
	}
	for i, op := range got {
		s := op.Input.(Section)
		if g := (sec{op.Call, op.Return, s.HasRead, s.HasWrite, s.Outcome}); g != want[i] {
			t.Errorf("section %d: %+v, want %+v", i, g, want[i])
		}
	}
}

func TestLinearizableBounds(t *testing.T) {
	h := lostUpdate()
	if lin := Linearizable(h, time.Minute, 1); lin.Result != LinUnknown || lin.Info != nil {
		t.Errorf("over the section cap: %s, want unknown without running", lin.Result)
	}
	h.Resource = ""
	if lin := Linearizable(h, time.Minute, 0); lin.Result != LinSkipped {
		t.Errorf("no resource: %s, want skipped", lin.Result)
	}
	if tr := StorageTruth(h); tr.Violations != 0 || tr.Writes != 0 {
		t.Errorf("no resource: storage truth %+v, want nothing", tr)
	}
	if r := Check(lostUpdate(), Options{SkipPorcupine: true}); r.Porcupine != LinSkipped || r.Verdict != VerdictUnsafe {
		t.Errorf("skipped porcupine: %s, verdict %s; want skipped and still unsafe by storage truth", r.Porcupine, r.Verdict)
	}
}
