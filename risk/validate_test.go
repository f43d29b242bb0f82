package risk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/sim"
)

// harsh is a profile whose pauses are frequent enough to count directly:
// 36 an hour per client (0.2 per client in a 20 s window at TTL 1 s),
// 0.5 to 4 TTLs long.
const harsh = `id: harsh
classes:
  - id: pause
    kind: pause
    per_hour: 36
    size: {loguniform: {min: 500ms, max: 4s}}
    source: {rate: "assumption: harsh, for the test", size: "assumption"}
`

// direct runs plain simulations of window w: pauses arrive on each client
// as a Poisson process at the class's rate, sizes drawn from its
// distribution (a pause that would overlap an earlier one on the same
// client is dropped, and counted); it returns the unsafe runs, the judged
// runs and the dropped pauses.
func direct(t *testing.T, b sim.Bubble, o Options, w time.Duration, runs int) (k, n, dropped int) {
	c := o.Profile.Classes[0]
	perSec := c.EventsPerYear() / hoursPerYear / 3600
	for i := 0; i < runs; i++ {
		seed := runSeed(o.Seed, 1000, 0, i)
		rng := rand.New(rand.NewPCG(seed, 7))
		job, err := o.base(seed)
		if err != nil {
			t.Fatal(err)
		}
		var fs []faults.Fault
		end := time.Duration(0)
		for ci := 0; ci < o.Clients; ci++ {
			free := time.Duration(0)
			for at := o.TTL + time.Duration(rng.ExpFloat64()/perSec*float64(time.Second)); at < o.TTL+w; at += time.Duration(rng.ExpFloat64() / perSec * float64(time.Second)) {
				d := time.Duration(c.Size.d.Draw(0, math.Inf(1), rng.Float64()) * float64(time.Second))
				if at < free {
					dropped++
					continue
				}
				fs = append(fs, faults.Fault{Kind: faults.ClientPause, Start: at, Duration: d, Targets: []string{fmt.Sprintf("c%d", ci)}})
				free = at + d
				end = max(end, free)
			}
		}
		faults.Sort(fs)
		job.Config.Duration = max(o.TTL+w, end) + 2*o.TTL
		job.Config.Faults = fs
		if err := job.Config.Validate(); err != nil {
			t.Fatal(err)
		}
		j, err := job.Run(b)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case j.Verdict() == checker.VerdictUnsafe:
			k++
			n++
		case j.Err == nil && j.Verdict() != checker.VerdictUnknown:
			n++
		}
	}
	return k, n, dropped
}

// Under the harsh profile, the estimate agrees with plain simulation: the
// share of windows with a violation, predicted from the estimate's
// violations per year (1 - exp(-rate × window)), lies within the direct
// count's 95% interval, or the two intervals overlap. The long form (not
// -short) runs three designs with more runs; -short two (about 20 s),
// and under -race one.
func TestHarshEstimateAgreesWithDirect(t *testing.T) {
	p, err := Decode([]byte(harsh), "harsh.yaml")
	if err != nil {
		t.Fatal(err)
	}
	designs, seeds, runs := []string{"set-nx-cad", "redlock", "primary-replica"}, 30, 300
	switch {
	case testing.Short() && raceEnabled():
		// CI's race run: the estimate's code path once (about 50 s).
		designs, seeds, runs = []string{"set-nx-cad"}, 8, 40
	case testing.Short():
		designs, seeds, runs = []string{"set-nx-cad", "redlock"}, 8, 40
	}
	const w = 20 * time.Second
	b := sim.TestBubble(t)
	agreeNonzero := 0
	for _, lock := range designs {
		o := Options{Lock: lock, TTL: time.Second, Clients: 3, Seeds: seeds, Seed: 1, Profile: p}
		res, err := Estimate(b, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		yearsPerWindow := w.Hours() / hoursPerYear
		pred := func(perYear float64) float64 { return 1 - math.Exp(-perYear*yearsPerWindow) }
		plo, p0, phi := pred(res.PerYearCI95[0]), pred(res.PerYear), pred(res.PerYearCI95[1])
		k, n, dropped := direct(t, b, o, w, runs)
		dlo, dhi := stats.Wilson(k, n)
		t.Logf("%s: estimate %.3f [%.3f, %.3f] of windows unsafe (%.3g violations/year), direct %d/%d = %.3f [%.3f, %.3f]; %d overlapping pauses dropped",
			lock, p0, plo, phi, res.PerYear, k, n, float64(k)/float64(max(n, 1)), dlo, dhi, dropped)
		if phi < dlo || plo > dhi {
			t.Errorf("%s: estimate [%.3f, %.3f] and direct [%.3f, %.3f] do not overlap", lock, plo, phi, dlo, dhi)
		}
		if k > 0 && res.PerYear > 0 {
			agreeNonzero++
		}
	}
	if agreeNonzero < min(2, len(designs)) {
		t.Errorf("only %d designs broke under the harsh profile in both methods: the comparison says little", agreeNonzero)
	}
}

// raceEnabled reports whether the test binary was built with -race
// (as sim/leak_test.go's).
func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}
