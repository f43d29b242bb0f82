package faults

import (
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var aimBase = Bounds{Duration: 30 * time.Second, Clients: []string{"c0", "c1", "c2"}, Nodes: []string{"n0", "n1", "n2", "n3", "n4"},
	MinFaults: 1, MaxFaults: 4, TTL: 3 * time.Second}

// hits lists the processes a fault acts on: its targets, or a network
// fault's cut-off side (From; To is every other process).
func hits(f Fault) []string {
	if len(f.Targets) > 0 {
		return f.Targets
	}
	return f.From
}

// Aimed at targets, every fault lands on them only: pauses, crashes and
// clock faults target one of them, a network fault cuts some of them off
// from all the rest, and kinds that cannot land there are not drawn.
func TestGenTargets(t *testing.T) {
	for _, targets := range [][]string{{"c0", "c1", "c2"}, {"n0", "n1"}, {"c1", "n3"}} {
		b := aimBase
		b.Targets = targets
		all := append(append([]string(nil), b.Clients...), b.Nodes...)
		kinds := map[Kind]int{}
		rapid.Check(t, func(rt *rapid.T) {
			for _, f := range Gen(b).Draw(rt, "s") {
				kinds[f.Kind]++
				if err := f.Validate(func(n string) bool { return slices.Contains(all, n) }); err != nil {
					rt.Fatalf("%v: %v", f, err)
				}
				for _, n := range hits(f) {
					if !slices.Contains(targets, n) {
						rt.Fatalf("targets %v: %v lands on %s", targets, f, n)
					}
				}
				if len(f.From) > 0 && len(f.From)+len(f.To) != len(all) {
					rt.Fatalf("%v: From and To are not every process", f)
				}
			}
		})
		if slices.Equal(targets, b.Clients) && (kinds[NodePause] > 0 || kinds[Crash] > 0) {
			t.Errorf("clients only drew %d node pauses and %d crashes", kinds[NodePause], kinds[Crash])
		}
		if kinds[Partition] == 0 || kinds[ClockDrift] == 0 {
			t.Errorf("targets %v: kinds drawn %v, want partitions and drift among them", targets, kinds)
		}
	}
}

// Aimed at pause points, every client pause waits for one of them.
func TestGenPausePoints(t *testing.T) {
	b := aimBase
	b.Kinds, b.PausePoints = []Kind{ClientPause}, []string{"renewing", "before-write"}
	at := map[string]int{}
	for i := range 200 {
		for _, f := range Gen(b).Example(i) {
			if !slices.Contains(b.PausePoints, f.At) {
				t.Fatalf("%v: not at one of %v", f, b.PausePoints)
			}
			at[f.At]++
		}
	}
	if at["renewing"] == 0 || at["before-write"] == 0 {
		t.Errorf("pause points drawn %v, want both", at)
	}
}

// A drift band bounds the rate either way, and aims the search at drift:
// the drift lasts to the end of the safety phase. Without a floor the
// drift's duration is drawn (TTL/100 to 10 × TTL).
func TestGenDriftBand(t *testing.T) {
	b := aimBase
	b.Kinds, b.Limits = []Kind{ClockDrift}, Limits{DriftMinPPM: 5_000, DriftPPM: 9_999}
	signs := map[bool]int{}
	for i := range 200 {
		for _, f := range Gen(b).Example(i) {
			m := max(f.DriftPPM, -f.DriftPPM)
			if m < 5_000 || m > 9_999 {
				t.Fatalf("%v: rate outside 5000..9999 ppm", f)
			}
			if f.End() != b.Duration {
				t.Fatalf("%v: ends at %v, want the end of the safety phase %v", f, f.End(), b.Duration)
			}
			signs[f.DriftPPM < 0]++
		}
	}
	if signs[true] == 0 || signs[false] == 0 {
		t.Errorf("drift signs %v, want both", signs)
	}
	b.Limits.DriftMinPPM = 0
	short := 0
	for i := range 200 {
		for _, f := range Gen(b).Example(i) {
			if f.End() < b.Duration {
				short++
			}
		}
	}
	if short == 0 {
		t.Error("without a band floor every drift lasted to the end")
	}
}

// Bounds that cannot aim are errors naming the problem.
func TestAimErrors(t *testing.T) {
	for _, c := range []struct {
		edit func(*Bounds)
		want string
	}{
		{func(b *Bounds) { b.Targets = []string{"c9"} }, `target "c9" is neither`},
		{func(b *Bounds) { b.Targets = []string{"c0", "c0"} }, `named twice`},
		{func(b *Bounds) { b.Targets, b.Kinds = []string{"c0"}, []Kind{NodePause, Crash} }, "can land on the targets"},
		{func(b *Bounds) { b.PausePoints = []string{"sleeping"} }, `pause point "sleeping"`},
		{func(b *Bounds) { b.Limits = Limits{DriftMinPPM: 20_000, DriftPPM: 10_000} }, "is empty"},
		{func(b *Bounds) { b.Limits = Limits{DriftMinPPM: -1} }, "never negative"},
		{func(b *Bounds) { b.Limits = Limits{DriftMinPPM: 600_000} }, "above the largest drift"},
	} {
		b := aimBase
		c.edit(&b)
		err := b.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", b, err, c.want)
		}
	}
}
