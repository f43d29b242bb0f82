package risk

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// distribution is a size distribution in base units (seconds, or ppm for
// clock drift).
type distribution interface {
	// Survival is P(size > x).
	Survival(x float64) float64
	// Draw is a size in (a, b] (b may be +Inf) drawn from the
	// distribution conditioned on lying there, u uniform in [0, 1); the
	// caller draws only where Survival(a) > Survival(b).
	Draw(a, b, u float64) float64
	String() string
}

func (d *Dist) build(ppm bool) (distribution, error) {
	set := 0
	for _, on := range []bool{d.Fixed != "", d.Pareto != nil, d.Lognormal != nil, d.LogUniform != nil, d.Empirical != nil} {
		if on {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("%s: give exactly one of fixed, pareto, lognormal, loguniform, empirical", map[bool]string{true: "more than one", false: "none"}[set > 1])
	}
	u := unit(ppm)
	switch {
	case d.Fixed != "":
		v, err := parseSize(d.Fixed, ppm)
		if err != nil {
			return nil, fmt.Errorf("fixed: %v", err)
		}
		return &empirical{vs: []float64{v}, u: u}, nil
	case d.Empirical != nil:
		if len(d.Empirical) == 0 || len(d.Empirical) > MaxEmpirical {
			return nil, fmt.Errorf("empirical: %d values (1..%d)", len(d.Empirical), MaxEmpirical)
		}
		e := &empirical{u: u}
		for i, s := range d.Empirical {
			v, err := parseSize(s, ppm)
			if err != nil {
				return nil, fmt.Errorf("empirical[%d]: %v", i, err)
			}
			e.vs = append(e.vs, v)
		}
		slices.Sort(e.vs)
		return e, nil
	case d.Pareto != nil:
		m, err := parseSize(d.Pareto.Min, ppm)
		if err != nil {
			return nil, fmt.Errorf("pareto.min: %v", err)
		}
		if !(d.Pareto.Alpha >= 0.1 && d.Pareto.Alpha <= 10) {
			return nil, fmt.Errorf("pareto.alpha: %v out of range 0.1..10", d.Pareto.Alpha)
		}
		return &pareto{min: m, alpha: d.Pareto.Alpha, u: u}, nil
	case d.Lognormal != nil:
		m, err := parseSize(d.Lognormal.Median, ppm)
		if err != nil {
			return nil, fmt.Errorf("lognormal.median: %v", err)
		}
		if !(d.Lognormal.Sigma > 0 && d.Lognormal.Sigma <= 10) {
			return nil, fmt.Errorf("lognormal.sigma: %v out of range (0, 10]", d.Lognormal.Sigma)
		}
		return &lognormal{median: m, sigma: d.Lognormal.Sigma, u: u}, nil
	}
	lo, err := parseSize(d.LogUniform.Min, ppm)
	if err != nil {
		return nil, fmt.Errorf("loguniform.min: %v", err)
	}
	hi, err := parseSize(d.LogUniform.Max, ppm)
	if err != nil {
		return nil, fmt.Errorf("loguniform.max: %v", err)
	}
	if hi <= lo {
		return nil, fmt.Errorf("loguniform: max %s is not above min %s", d.LogUniform.Max, d.LogUniform.Min)
	}
	return &logUniform{lo: lo, hi: hi, u: u}, nil
}

type unit bool // true: ppm; false: seconds

func (u unit) text(v float64) string {
	if u {
		return fmt.Sprintf("%gppm", v)
	}
	return time.Duration(v * float64(time.Second)).Round(time.Microsecond).String()
}

// empirical is an equal-weight list of sizes (fixed: one).
type empirical struct {
	vs []float64 // sorted
	u  unit
}

func (e *empirical) Survival(x float64) float64 {
	i, _ := slices.BinarySearch(e.vs, math.Nextafter(x, math.Inf(1)))
	return float64(len(e.vs)-i) / float64(len(e.vs))
}

func (e *empirical) Draw(a, b, u float64) float64 {
	lo, _ := slices.BinarySearch(e.vs, math.Nextafter(a, math.Inf(1))) // first > a
	hi, _ := slices.BinarySearch(e.vs, math.Nextafter(b, math.Inf(1))) // first > b
	if hi <= lo {
		return b
	}
	return e.vs[lo+min(int(u*float64(hi-lo)), hi-lo-1)]
}

func (e *empirical) String() string {
	if len(e.vs) == 1 {
		return "fixed " + e.u.text(e.vs[0])
	}
	return fmt.Sprintf("empirical, %d values from %s to %s", len(e.vs), e.u.text(e.vs[0]), e.u.text(e.vs[len(e.vs)-1]))
}

// continuous draws by inverting its survival function.
type continuous interface {
	Survival(x float64) float64
	inverse(s float64) float64 // x with Survival(x) = s, s in (0, 1]
}

func drawContinuous(c continuous, a, b, u float64) float64 {
	sa, sb := c.Survival(a), 0.0
	if !math.IsInf(b, 1) {
		sb = c.Survival(b)
	}
	s := sb + u*(sa-sb) // in [sb, sa): a size in (a, b]
	if s <= 0 {
		s = sa * 1e-12 // b is infinite: a size far in the tail, not infinity
	}
	x := c.inverse(s)
	return min(max(x, math.Nextafter(a, math.Inf(1))), b)
}

// pareto: P(size > x) = (min/x)^alpha from min.
type pareto struct {
	min, alpha float64
	u          unit
}

func (p *pareto) Survival(x float64) float64 { return ParetoSurvival(p.min, p.alpha, x) }

func (p *pareto) inverse(s float64) float64 { return p.min * math.Pow(s, -1/p.alpha) }

func (p *pareto) Draw(a, b, u float64) float64 { return drawContinuous(p, a, b, u) }

func (p *pareto) String() string {
	return fmt.Sprintf("Pareto from %s, α %g", p.u.text(p.min), p.alpha)
}

// lognormal: ln(size) normal with mean ln(median) and deviation sigma.
type lognormal struct {
	median, sigma float64
	u             unit
}

func (l *lognormal) Survival(x float64) float64 {
	if x <= 0 {
		return 1
	}
	return 0.5 * math.Erfc(math.Log(x/l.median)/(l.sigma*math.Sqrt2))
}

func (l *lognormal) inverse(s float64) float64 {
	return l.median * math.Exp(l.sigma*math.Sqrt2*math.Erfcinv(2*s))
}

func (l *lognormal) Draw(a, b, u float64) float64 { return drawContinuous(l, a, b, u) }

func (l *lognormal) String() string {
	return fmt.Sprintf("lognormal, median %s, σ %g", l.u.text(l.median), l.sigma)
}

// logUniform: ln(size) uniform between ln(lo) and ln(hi).
type logUniform struct {
	lo, hi float64
	u      unit
}

func (l *logUniform) Survival(x float64) float64 { return LogUniformSurvival(l.lo, l.hi, x) }

func (l *logUniform) inverse(s float64) float64 { return l.lo * math.Pow(l.hi/l.lo, 1-s) }

func (l *logUniform) Draw(a, b, u float64) float64 { return drawContinuous(l, a, b, u) }

func (l *logUniform) String() string {
	return fmt.Sprintf("log-uniform from %s to %s", l.u.text(l.lo), l.u.text(l.hi))
}

// ParetoSurvival is P(size > x) for a Pareto size from xmin with exponent
// alpha (on durations too: the unit is the caller's).
func ParetoSurvival(xmin, alpha, x float64) float64 {
	if x <= xmin {
		return 1
	}
	return math.Pow(xmin/x, alpha)
}

// LogUniformSurvival is P(size > x) for a size log-uniform between lo and
// hi.
func LogUniformSurvival(lo, hi, x float64) float64 {
	switch {
	case x <= lo:
		return 1
	case x >= hi:
		return 0
	}
	return 1 - math.Log(x/lo)/math.Log(hi/lo)
}

// describe lists a profile's classes, a line each (the CLI prints it).
func (p *Profile) describe() string {
	var b strings.Builder
	for _, c := range p.Classes {
		fmt.Fprintf(&b, "  %-16s %-11s %s per process; size %s\n", c.ID, c.Kind, c.RateText(), c.SizeText())
	}
	return b.String()
}
