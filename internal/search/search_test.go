package search

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
)

// seedCases is a generator whose case is its own case seed's first draw,
// so a test can see which case seeds a search tried.
var seedCases = rapid.Custom(func(t *rapid.T) Case {
	return Case{Seed: rapid.Uint64().Draw(t, "seed")}
})

func TestRunOrder(t *testing.T) {
	var tried []uint64
	s := Search{Cases: seedCases, Seed: 100, Checks: 4, Try: func(c Case) (bool, error) {
		tried = append(tried, c.Seed)
		return false, nil
	}}
	found, err := s.Run()
	if err != nil || found != nil {
		t.Fatalf("Run = %v, %v; want nothing found", found, err)
	}
	// The cases are those of case seeds 100, 101, 103, 106 (rapid.Check's
	// sequence), each drawn as Generator.Example draws it.
	var want []uint64
	for _, cs := range []int{100, 101, 103, 106} {
		want = append(want, seedCases.Example(cs).Seed)
	}
	if !slices.Equal(tried, want) {
		t.Fatalf("tried %v, want %v", tried, want)
	}
}

func TestRunReplayFirst(t *testing.T) {
	target := seedCases.Example(7).Seed
	n := 0
	s := Search{Cases: seedCases, Seed: 100, Checks: 4, Replay: []uint64{5, 7, 9}, Try: func(c Case) (bool, error) {
		n++
		return c.Seed == target, nil
	}}
	found, err := s.Run()
	if err != nil || found == nil {
		t.Fatalf("Run = %v, %v; want the replayed case", found, err)
	}
	if found.Replayed != 2 || found.CaseSeed != 7 || found.Tried != 2 || n != 2 {
		t.Fatalf("found %+v after %d tries; want replayed #2, case seed 7, tried 2", found, n)
	}
	// A drawn case counts the replayed ones it follows.
	target = seedCases.Example(101).Seed
	found, err = s.Run()
	if err != nil || found == nil || found.Replayed != 0 || found.CaseSeed != 101 || found.Tried != 5 {
		t.Fatalf("Run = %+v, %v; want drawn case seed 101 at try 5", found, err)
	}
}

func TestRunError(t *testing.T) {
	boom := errors.New("boom")
	s := Search{Cases: seedCases, Seed: 1, Checks: 3, Try: func(Case) (bool, error) { return false, boom }}
	if _, err := s.Run(); !errors.Is(err, boom) {
		t.Fatalf("Run error %v, want %v", err, boom)
	}
	if _, err := (Search{Checks: 1}).Run(); err == nil {
		t.Fatal("a search without cases ran")
	}
}

func TestKind(t *testing.T) {
	for _, c := range []struct {
		r    checker.Result
		want checker.Kind
	}{
		{checker.Result{Verdict: checker.VerdictUnsafe, First: &checker.Violation{Kind: checker.KindLeaseOverlap}}, checker.KindLeaseOverlap},
		{checker.Result{Verdict: checker.VerdictUnsafe, Porcupine: checker.LinIllegal}, checker.KindLinearizability},
		{checker.Result{Verdict: checker.VerdictUnsafe}, ""},
		{checker.Result{Verdict: checker.VerdictLiveness, First: &checker.Violation{Kind: checker.KindLeaseOverlap}}, ""},
		{checker.Result{Verdict: checker.VerdictSafe}, ""},
	} {
		if got := Kind(c.r); got != c.want {
			t.Errorf("Kind(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
	if !Failed(checker.Result{Verdict: checker.VerdictLiveness}) || Failed(checker.Result{Verdict: checker.VerdictUnknown}) {
		t.Error("Failed: want liveness failed, unknown not")
	}
}

func TestCasesDrawSeedFirst(t *testing.T) {
	b := faults.Bounds{Duration: 30e9, Clients: []string{"c0"}, Nodes: []string{"n0"}, MinFaults: 1, MaxFaults: 2}
	c := Cases(faults.Gen(b)).Example(3)
	if c.Seed < 1 || c.Seed > 1<<32 || len(c.Faults) == 0 {
		t.Fatalf("case %+v: want a seed in [1, 2^32] and a schedule", c)
	}
}
