// Package stats holds the statistics every report part shares: a rate of
// runs with a violation and its 95% Wilson score interval. It imports
// nothing of locksim, so charts, sweeps, parity and reports all import it
// downward.
package stats

import (
	"fmt"
	"math"
)

// z95 is the standard normal quantile for a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson returns the 95% Wilson score interval for k events in n trials.
// It stays inside [0, 1] and is honest at k = 0 or k = n, where the normal
// approximation collapses to a point. n = 0 gives [0, 1]: nothing is known.
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	k = min(max(k, 0), n)
	nf := float64(n)
	p := float64(k) / nf
	z2 := z95 * z95
	denom := 1 + z2/nf
	center := (p + z2/(2*nf)) / denom
	half := z95 * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / denom
	lo, hi = max(0, center-half), min(1, center+half)
	// Exact at the ends (rounding could leave 1e-17).
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return lo, hi
}

// Rate is K runs with an event (a violation) out of N runs.
type Rate struct {
	K int `json:"k"`
	N int `json:"n"`
}

// P is the observed rate K/N (0 when N is 0: no rate; see Known).
func (r Rate) P() float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.K) / float64(r.N)
}

// Interval is the 95% Wilson score interval of the rate.
func (r Rate) Interval() (lo, hi float64) { return Wilson(r.K, r.N) }

// Known reports whether the rate was measured: N > 0. A rate of no runs
// is "n/a", never 0%, and charts draw no point for it.
func (r Rate) Known() bool { return r.N > 0 }

func (r Rate) String() string {
	if !r.Known() {
		return "0/0 = n/a"
	}
	lo, hi := r.Interval()
	return fmt.Sprintf("%d/%d = %.1f%% [%.1f%%, %.1f%%]", r.K, r.N, 100*r.P(), 100*lo, 100*hi)
}
