package checker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/event"
)

func TestCheckComposition(t *testing.T) {
	overlap := func(fencing event.Fencing) History {
		b := newHistory("", 0, fencing, "c0", "c1")
		b.acquire("c0", 1, 0, 10, "ok", 100)
		b.acquire("c1", 1, 20, 50, "ok", 200)
		b.op("c0", "release", 2, 80, 90, "ok", 0)
		b.op("c1", "release", 2, 150, 160, "ok", 0)
		return b.history(0, 300)
	}
	for _, tc := range []struct {
		name    string
		h       History
		verdict Verdict
		claim   string
	}{
		{"overlap, no fencing", overlap(""), VerdictUnsafe, ClaimMutualExclusion},
		{"overlap, fencing none", overlap(FenceNone), VerdictUnsafe, ClaimMutualExclusion},
		{"overlap, max-token", overlap(FenceMaxToken), VerdictSafe, ClaimResourceSafety},
		{"overlap, owner-cas", overlap(FenceOwnerCAS), VerdictSafe, ClaimResourceSafety},
		{"foreign release, fenced", func() History { h := foreignRelease("ok"); h.Fencing = FenceMaxToken; return h }(), VerdictSafe, ClaimResourceSafety},
		{"lost update, fenced", func() History { h := lostUpdate(); h.Fencing = FenceMaxToken; return h }(), VerdictUnsafe, ClaimResourceSafety},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h, Options{})
			if r.Verdict != tc.verdict || r.Claim != tc.claim {
				t.Errorf("verdict %s claim %s, want %s %s; reasons %q", r.Verdict, r.Claim, tc.verdict, tc.claim, r.Reasons)
			}
			if len(r.Reasons) == 0 {
				t.Error("no reasons")
			}
			if (r.Verdict == VerdictUnsafe) != (r.FirstViolationTime() >= 0) {
				t.Errorf("verdict %s but first violation at %d", r.Verdict, r.FirstViolationTime())
			}
		})
	}
}

func TestCheckCapsEvents(t *testing.T) {
	h := lostUpdate()
	r := Check(h, Options{MaxEvents: 4}) // only the two reads
	if !r.Capped || r.Events != 4 || r.Verdict != VerdictUnknown || r.ResourceViolations != 0 {
		t.Errorf("capped: %+v; want unknown over 4 events", r)
	}
	h.Capped = true // the producer capped it
	if r := Check(h, Options{}); r.Verdict != VerdictUnsafe {
		t.Errorf("a capped history with a violation: %s, want unsafe (a violation is a violation)", r.Verdict)
	}
}

// A long history around a lease overlap of c0 and c1 at 10000: the slice
// keeps the involved clients' operations from their acquisitions' calls,
// the faults active then, and caps the rest.
func TestSliceShowsFirstViolationWithinCap(t *testing.T) {
	b := newHistory("", 0, "", "c0", "c1", "c2")
	b.world(10, "fault", "loss A").world(80, "fault-end", "loss A") // over before the acquisitions
	b.world(50, "fault", "pause c0").world(20000, "fault-end", "pause c0")
	b.world(10500, "fault", "late") // after the violation
	b.acquire("c0", 1, 100, 200, "ok", 30000)
	b.acquire("c1", 1, 5000, 10000, "ok", 30000)
	b.acquire("c2", 1, 6000, 6100, "fail", 0)
	b.add(Event{T: 7000, Proc: "n0", Kind: event.KindCrash})
	for i := range int64(500) {
		b.add(Event{T: 300 + i*10, Proc: "n0", Kind: event.KindCmd, Peer: "c0"})
	}
	b.op("c0", "release", 2, 25000, 25010, "ok", 0)
	h := b.history(0, 40000)
	r := Check(h, Options{})
	if r.First == nil || r.First.Kind != KindLeaseOverlap || r.First.T != 10000 || r.First.Since != 100 {
		t.Fatalf("first violation %+v, want the overlap at 10000 since 100", r.First)
	}
	s := Slice(h, r, 0)
	if len(s) != MaxSliceEvents {
		t.Fatalf("slice of %d events, want the cap %d", len(s), MaxSliceEvents)
	}
	has := func(pred func(Event) bool) bool {
		for _, e := range s {
			if pred(e) {
				return true
			}
		}
		return false
	}
	for _, want := range []struct {
		what string
		pred func(Event) bool
	}{
		{"c0's acquire call", func(e Event) bool { return e.Proc == "c0" && e.Op == event.OpAcquire && e.Kind == event.KindCall }},
		{"c1's acquire ok", func(e Event) bool { return e.Proc == "c1" && e.Op == event.OpAcquire && e.Kind == event.KindOK }},
		{"the active fault", func(e Event) bool { return e.Kind == event.KindFault && e.Detail == "pause c0" }},
		{"the crash", func(e Event) bool { return e.Kind == event.KindCrash }},
	} {
		if !has(want.pred) {
			t.Errorf("slice lacks %s", want.what)
		}
	}
	for _, e := range s {
		if e.Proc == "c2" || e.Detail == "loss A" || e.Detail == "late" || e.T > 10000 {
			t.Errorf("slice has %+v", e)
		}
	}
	for i := 1; i < len(s); i++ {
		if s[i].T < s[i-1].T {
			t.Fatalf("slice out of order at %d", i)
		}
	}
	// The commands kept are the latest ones.
	if first := s[0]; first.Kind == event.KindCmd && first.T < 300+300*10 {
		t.Errorf("kept an old command %+v", first)
	}
	// A window shortens it.
	if w := Slice(h, r, 1000); len(w) == 0 || w[0].T < 9000 && w[0].Kind != event.KindFault {
		t.Errorf("windowed slice starts at %+v", w[0])
	}
	if Slice(h, Result{}, 0) != nil {
		t.Error("a slice without a violation")
	}
}

func TestWriteVisualization(t *testing.T) {
	b := newHistory(ResourcePool, 10, "", "c0", "c1")
	b.world(5, "fault", "partition c0<->store").world(45, "fault-end", "partition c0<->store")
	b.add(Event{T: 60, Proc: "sentinel", Kind: event.KindFailover, Detail: "n0 -> n1"})
	b.world(90, "heal", "")
	h := lostUpdate()
	h.Events = append(h.Events, b.history(0, 100).Events...)
	h = (&builder{h: h}).history(0, 100)
	r := Check(h, Options{})
	path := filepath.Join(t.TempDir(), "lin.html")
	if err := WriteVisualization(path, h, r); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fault: partition c0", "failover n0 -", "heal", "read 10, write 9 ok"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("visualization lacks %q", want)
		}
	}
	if len(FaultAnnotations(h)) != 4 {
		t.Errorf("%d annotations, want 4 (fault, fault-end, failover, heal)", len(FaultAnnotations(h)))
	}
	if err := WriteVisualization(path, h, Check(h, Options{SkipPorcupine: true})); err == nil {
		t.Error("visualized a skipped check")
	}
}
