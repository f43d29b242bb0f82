package faults

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var genBounds = Bounds{Duration: time.Minute, Clients: []string{"c0", "c1", "c2"}, Nodes: []string{"n0", "n1", "n2", "store"},
	Replicated: true, MinFaults: 0, MaxFaults: 8}

func known(b Bounds) func(string) bool {
	names := append(append([]string{"sentinel"}, b.Clients...), b.Nodes...)
	return func(n string) bool { return slices.Contains(names, n) }
}

// TestGenValid: every schedule Gen draws is sorted, within the count and
// time bounds, of allowed kinds, and valid for the bounds' processes.
func TestGenValid(t *testing.T) {
	for _, b := range []Bounds{genBounds,
		{Duration: 10 * time.Second, Clients: []string{"c0"}, Nodes: []string{"n0"}, MinFaults: 1, MaxFaults: 3},
		{Duration: time.Second, Clients: []string{"c0", "c1"}, Nodes: []string{"n0"}, MinFaults: 2, MaxFaults: 2, Kinds: []Kind{ClockJump, Partition}},
	} {
		t.Run(fmt.Sprintf("%d-clients-%d-nodes", len(b.Clients), len(b.Nodes)), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				s := Gen(b).Draw(t, "schedule")
				if len(s) < b.MinFaults || len(s) > b.MaxFaults {
					t.Fatalf("%d faults, want %d..%d", len(s), b.MinFaults, b.MaxFaults)
				}
				if !slices.IsSortedFunc(s, func(a, b Fault) int { return int(a.Start - b.Start) }) {
					t.Fatalf("not sorted by start: %v", s)
				}
				for _, f := range s {
					if err := f.Validate(known(b)); err != nil {
						t.Fatalf("%v: %v", f, err)
					}
					if f.Start >= b.Duration*8/10 {
						t.Fatalf("%v starts after 0.8 × %v", f, b.Duration)
					}
					if f.Kind == Failover && !b.Replicated {
						t.Fatalf("%v without replication", f)
					}
					if b.Kinds != nil && !slices.Contains(b.Kinds, f.Kind) {
						t.Fatalf("%v: kind not in %v", f, b.Kinds)
					}
					if (f.Kind == ClockDrift && f.DriftPPM == 0) || (f.Kind == ClockJump && f.Jump == 0) {
						t.Fatalf("%v is a no-op", f)
					}
				}
			})
		})
	}
}

// recordTB is a rapid.TB that records a failure instead of failing the
// test, so a test can look at what rapid shrank a counterexample to.
type recordTB struct {
	testing.TB
	failed bool
	msgs   []string
}

func (r *recordTB) Errorf(format string, a ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, a...))
}
func (r *recordTB) Error(a ...any)                 { r.failed = true; r.msgs = append(r.msgs, fmt.Sprint(a...)) }
func (r *recordTB) Fatalf(format string, a ...any) { r.Errorf(format, a...) }
func (r *recordTB) Fatal(a ...any)                 { r.Error(a...) }
func (r *recordTB) Fail()                          { r.failed = true }
func (r *recordTB) FailNow()                       { r.failed = true }
func (r *recordTB) Failed() bool                   { return r.failed }
func (r *recordTB) Logf(string, ...any)            {}
func (r *recordTB) Log(...any)                     {}

// TestGenShrinks: a property that fails on any client pause of 500 ms or
// more shrinks to the minimal counterexample: one client pause of exactly
// 500 ms, starting at 0, on the first client. (500 ms is where a decade of
// the pause range, 50 ms to 15 s, Swarm's, begins; before Gen and Swarm
// drew with one code Gen's range began at 1 ms and this test used 1 s.)
func TestGenShrinks(t *testing.T) {
	t.Chdir(t.TempDir()) // rapid writes its fail file under ./testdata/rapid
	b := genBounds
	b.MinFaults, b.MaxFaults = 1, 20
	b.Kinds = []Kind{ClientPause, NodePause, Crash} // so that -short's 20 cases find one
	var last []Fault
	rec := &recordTB{TB: t}
	rapid.Check(rec, func(t *rapid.T) {
		s := Gen(b).Draw(t, "schedule")
		for _, f := range s {
			if f.Kind == ClientPause && f.Duration >= 500*time.Millisecond {
				last = s
				t.Fatalf("a client pause of %v", f.Duration)
			}
		}
	})
	if !rec.failed {
		t.Fatal("rapid found no schedule with a client pause of 500 ms or more")
	}
	want := Fault{Kind: ClientPause, Start: 0, Duration: 500 * time.Millisecond, Targets: []string{"c0"}}
	if len(last) != 1 || last[0].String() != want.String() {
		t.Fatalf("shrunk to %v, want [%v]", last, want)
	}
	t.Logf("shrunk to %v", last)
}

func TestGenBadBounds(t *testing.T) {
	for _, b := range []Bounds{
		{},
		{Duration: time.Second, Nodes: []string{"n0"}, MaxFaults: 1},
		{Duration: time.Second, Clients: []string{"c0"}, Nodes: []string{"n0"}, MinFaults: 3, MaxFaults: 2},
		{Duration: time.Second, Clients: []string{"c0"}, Nodes: []string{"n0"}, MaxFaults: 1, Kinds: []Kind{"meteor"}},
		{Duration: time.Second, Clients: []string{"c0"}, Nodes: []string{"n0"}, MaxFaults: 1, Kinds: []Kind{Failover}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Gen(%+v) did not panic", b)
				}
			}()
			Gen(b)
		}()
	}
}
