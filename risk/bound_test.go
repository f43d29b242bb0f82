package risk

import (
	"math"
	"testing"
	"time"

	"github.com/locksim/locksim/internal/stats"
)

// One stratum alone: Clopper-Pearson's one-sided 95% bound for 0 of n.
func TestJoinZeroOneStratum(t *testing.T) {
	for _, n := range []int{1, 4, 20, 300} {
		got, want := JoinZero([]float64{0.5}, []int{n}), 0.5*(1-math.Pow(0.05, 1/float64(n)))
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("0 of %d at weight 0.5: %v, want %v", n, got, want)
		}
	}
	if JoinZero(nil, nil) != 0 || JoinZero([]float64{1}, []int{0}) != 0 {
		t.Error("no runs: want 0")
	}
}

// The joint bound is below the sum of the strata's own Wilson tops (the
// method it replaces), and the region's edge holds: Π (1-p)^n = 0.05.
func TestJoinZeroBelowSumOfTops(t *testing.T) {
	ws, ns := []float64{0.911, 0.0668, 0.0146, 0.005}, []int{20, 20, 20, 20}
	got, sum := JoinZero(ws, ns), 0.0
	for i, w := range ws {
		_, hi := stats.Wilson(0, ns[i])
		sum += w * hi
	}
	if !(got > 0 && got < sum) {
		t.Fatalf("joint %v, sum of Wilson tops %v", got, sum)
	}
	// Equal weight per run everywhere: one stratum of all the runs.
	got, want := JoinZero([]float64{0.3, 0.6}, []int{10, 20}), 0.9*(1-math.Pow(0.05, 1.0/30))
	if math.Abs(got-want) > 1e-6 {
		t.Fatalf("w/n equal: %v, want %v", got, want)
	}
}

// allocate stays within the plan, gives every live stratum of a class
// that applies its floor, none to a class that does not, and more runs to
// the stratum and class whose events weigh most.
func TestAllocate(t *testing.T) {
	p, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Lock: "redlock", TTL: 10 * time.Second, Clients: 3, Seeds: 20, Profile: p}
	job, err := o.base(o.Seed)
	if err != nil {
		t.Fatal(err)
	}
	reach := o.reaches(job)
	for i, c := range p.Classes {
		if (c.Kind == Failover) != (reach[i] == 0) {
			t.Errorf("%s: reach %v (failover has no Sentinel in redlock's world)", c.ID, reach[i])
		}
	}
	runs, total := o.allocate(reach), 0
	for ci, c := range p.Classes {
		big, bigW := -1, 0.0
		for si, s := range o.strata(c) {
			n := runs[ci][si]
			total += n
			switch {
			case reach[ci] == 0 || s.Weight < minWeight:
				if n != 0 {
					t.Errorf("%s stratum %d: %d runs, want none", c.ID, si, n)
				}
			case n < o.floorRuns():
				t.Errorf("%s stratum %d: %d runs, below the floor %d", c.ID, si, n, o.floorRuns())
			}
			if s.Weight > bigW {
				big, bigW = si, s.Weight
			}
		}
		if reach[ci] > 0 && big >= 0 {
			for si := range runs[ci] {
				if runs[ci][si] > runs[ci][big] {
					t.Errorf("%s: stratum %d has more runs (%d) than the heaviest %d (%d)", c.ID, si, runs[ci][si], big, runs[ci][big])
				}
			}
		}
	}
	// The budget: Seeds for each live stratum of the classes that apply.
	budget := 0
	for ci, c := range p.Classes {
		for _, s := range o.strata(c) {
			if reach[ci] > 0 && s.Weight >= minWeight {
				budget += o.Seeds
			}
		}
	}
	if total > budget || total < budget*9/10 || o.Plan() != total {
		t.Fatalf("%d runs allocated of a budget of %d; Plan %d", total, budget, o.Plan())
	}
}
