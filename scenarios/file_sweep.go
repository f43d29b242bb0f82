package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/locksim/locksim/locks"
)

// The scenario language's sweep: which parameters a sweep can vary, its
// values, and the file at each step (AtSweep).

// Sweepable parameters and their kind: "span", "int" or "float".
var sweepFixed = map[string]string{
	"duration": "span", "liveness": "span", "max_unavailable": "span",
	"clients.count": "int", "topology.nodes": "int", "workload.pool_size": "int",
	"topology.repl_lag": "span", "topology.down_after": "span",
	"net.latency_min": "span", "net.latency_jitter": "span",
}

var sweepFault = map[string]string{"start": "span", "duration": "span", "jump": "span", "delay": "span", "drift_ppm": "int", "loss_prob": "float"}

// sweepKind returns the kind of a sweepable parameter name, and for
// faults[i].x and params.lock.x the index or lock and the field.
func (f *File) sweepKind(name string) (kind string, idx int, lock, field string, err error) {
	if k, ok := sweepFixed[name]; ok {
		return k, 0, "", name, nil
	}
	if rest, ok := strings.CutPrefix(name, "faults["); ok {
		n, fld, ok := strings.Cut(rest, "].")
		i, err := strconv.Atoi(n)
		if n == "*" && ok {
			// faults[*].x: every fault that sets x (a scenario scripting
			// one fault per topology sweeps them all at once).
			i, err = allFaults, nil
		}
		if !ok || err != nil || (i != allFaults && (i < 0 || i >= len(f.Faults))) {
			return "", 0, "", "", fmt.Errorf("%q: no such fault (the file has %d; faults[*] means every fault that sets the field)", name, len(f.Faults))
		}
		k, ok := sweepFault[fld]
		if !ok {
			return "", 0, "", "", fmt.Errorf("%q: a fault's sweepable fields are %s", name, strings.Join(sortedKeys(sweepFault), ", "))
		}
		if i == allFaults && len(f.faultsSetting(fld)) == 0 {
			return "", 0, "", "", fmt.Errorf("%q: no fault of the file sets %s", name, fld)
		}
		return k, i, "", fld, nil
	}
	if rest, ok := strings.CutPrefix(name, "params."); ok {
		id, fld, ok := strings.Cut(rest, ".")
		info, err := locks.Lookup(id)
		if !ok || err != nil {
			return "", 0, "", "", fmt.Errorf("%q: want params.<lock id>.<parameter>", name)
		}
		p, _ := info.Param(fld)
		k := sweepParamKind(p)
		if k == "" {
			if len(sweepableParams(info)) == 0 {
				return "", 0, "", "", fmt.Errorf("%q: lock %s has no parameter a sweep can vary", name, id)
			}
			return "", 0, "", "", fmt.Errorf("%q: sweepable lock parameters of %s are %s", name, id, strings.Join(sweepableParams(info), ", "))
		}
		return k, 0, id, fld, nil
	}
	return "", 0, "", "", fmt.Errorf("%q is not a sweepable parameter (one of %s, faults[i].<field>, params.<lock>.<parameter>)", name, strings.Join(sortedKeys(sweepFixed), ", "))
}

// allFaults is sweepKind's index for faults[*].
const allFaults = -1

// faultsSetting lists the indexes of the faults that set field (a
// sweepable fault field) to a non-zero value.
func (f *File) faultsSetting(field string) []int {
	if f.swept != nil {
		return f.swept // a step of the sweep: the faults of the original file
	}
	var out []int
	for i, fs := range f.Faults {
		set := false
		switch field {
		case "start":
			set = fs.Start.Set
		case "duration":
			set = fs.Duration.Set
		case "jump":
			set = fs.Jump.Set
		case "delay":
			set = fs.Delay.Set
		case "drift_ppm":
			set = fs.DriftPPM != 0
		case "loss_prob":
			set = fs.LossProb != 0
		}
		if set {
			out = append(out, i)
		}
	}
	return out
}

func (f *File) validateSweep() error {
	s := f.Sweep
	if s == nil {
		return nil
	}
	if s.Name == "" {
		return f.errAt("sweep.name", "required (the parameter to sweep, e.g. faults[0].duration)")
	}
	kind, _, _, _, err := f.sweepKind(s.Name)
	if err != nil {
		return f.errAt("sweep.name", "%v", err)
	}
	if len(s.Values) > 0 {
		return f.validateSweepValues(kind)
	}
	if s.Values != nil && !s.From.Set() && !s.To.Set() && s.Steps == 0 {
		return f.errAt("sweep.values", "empty: list the values to sweep (or give from, to and steps)")
	}
	if s.Steps < 1 || s.Steps > maxSweepSteps {
		return f.errAt("sweep.steps", "%d out of range 1..%d", s.Steps, maxSweepSteps)
	}
	for _, b := range []struct {
		field string
		v     SweepBound
	}{{"from", s.From}, {"to", s.To}} {
		if !b.v.Set() {
			return f.errAt("sweep."+b.field, "required")
		}
		if err := f.checkSweepKind("sweep."+b.field, kind, b.v); err != nil {
			return err
		}
	}
	if kind == "span" && s.From.Span.IsTTL() != s.To.Span.IsTTL() && !s.From.zero() && !s.To.zero() {
		return f.errAt("sweep.to", "from %s and to %s: both absolute or both multiples of the TTL", s.From, s.To)
	}
	return nil
}

// checkSweepKind checks that a sweep value (a bound or a listed value) is
// of the swept parameter's kind: a duration for a span, else a number.
func (f *File) checkSweepKind(field, kind string, v SweepBound) error {
	switch {
	case kind == "span" && v.IsNum && v.Num != 0:
		return f.errAt(field, "%s has no unit: %s is a duration (e.g. 1s, 0.5ttl)", v, f.Sweep.Name)
	case kind != "span" && !v.IsNum:
		return f.errAt(field, "%s: %s is a number, not a duration", v, f.Sweep.Name)
	}
	return nil
}

// validateSweepValues checks a sweep given as a list of values (instead
// of from, to and steps): each of the parameter's kind, in increasing
// order; Steps becomes their number.
func (f *File) validateSweepValues(kind string) error {
	s := f.Sweep
	if s.From.Set() || s.To.Set() || (s.Steps != 0 && s.Steps != len(s.Values)) { // (a validated copy has Steps set)
		return f.errAt("sweep.values", "give either values or from, to and steps, not both")
	}
	if len(s.Values) > maxSweepSteps {
		return f.errAt("sweep.values", "%d values, at most %d", len(s.Values), maxSweepSteps)
	}
	ttl := false
	for i, v := range s.Values {
		if err := f.checkSweepKind(fmt.Sprintf("sweep.values[%d]", i), kind, v); err != nil {
			return err
		}
		if !v.zero() && v.Span.IsTTL() {
			ttl = true
		}
	}
	var prev float64
	for i, v := range s.Values {
		x := v.Num
		if kind == "span" {
			if !v.zero() && v.Span.IsTTL() != ttl {
				return f.errAt(fmt.Sprintf("sweep.values[%d]", i), "%s: every value absolute or every value a multiple of the TTL", v)
			}
			x = v.Span.TTLs + float64(v.Span.NS)
		}
		if i > 0 && x <= prev {
			return f.errAt(fmt.Sprintf("sweep.values[%d]", i), "%s is not above the value before it: values go in increasing order", v)
		}
		prev = x
	}
	s.Steps = len(s.Values)
	return nil
}

func (b SweepBound) zero() bool {
	return (b.IsNum && b.Num == 0) || (!b.IsNum && !b.Span.IsTTL() && b.Span.NS == 0)
}

// SweepValues lists the sweep's values as they would be written in the
// file (nil without a sweep).
func (f *File) SweepValues() []string {
	if f.Sweep == nil {
		return nil
	}
	var out []string
	for i := 0; i < f.Sweep.Steps; i++ {
		out = append(out, f.sweepValue(i).text)
	}
	return out
}

// SweepNumbers lists the sweep's values as numbers, for tables and axes:
// multiples of the TTL, seconds or plain numbers, as SweepUnit says (nil
// without a sweep).
func (f *File) SweepNumbers() []float64 {
	if f.Sweep == nil {
		return nil
	}
	var out []float64
	for i := 0; i < f.Sweep.Steps; i++ {
		v := f.sweepValue(i)
		switch {
		case !v.span.Set:
			out = append(out, v.num)
		case v.span.IsTTL():
			out = append(out, v.span.TTLs)
		default:
			out = append(out, v.span.NS.Seconds())
		}
	}
	return out
}

// SweepUnit is the unit of SweepNumbers: "× TTL", "s" or "".
func (f *File) SweepUnit() string {
	if f.Sweep == nil {
		return ""
	}
	switch v := f.sweepValue(0); {
	case !v.span.Set:
		return ""
	case v.span.IsTTL() || f.sweepValue(f.Sweep.Steps-1).span.IsTTL():
		return "× TTL"
	}
	return "s"
}

type sweepVal struct {
	span Span
	num  float64
	text string
}

func (f *File) sweepValue(i int) sweepVal {
	s := f.Sweep
	kind, _, _, _, _ := f.sweepKind(s.Name)
	if len(s.Values) > 0 {
		v := s.Values[i]
		switch {
		case kind != "span":
			n := v.Num
			if kind == "int" {
				n = math.Round(n)
			}
			return sweepVal{num: n, text: strconv.FormatFloat(n, 'g', -1, 64)}
		case v.IsNum: // 0
			return sweepVal{span: Span{Set: true}, text: Span{Set: true}.String()}
		}
		return sweepVal{span: v.Span, text: v.Span.String()}
	}
	frac := 0.0
	if s.Steps > 1 {
		frac = float64(i) / float64(s.Steps-1)
	}
	if kind == "span" {
		from, to := s.From.Span, s.To.Span
		if from.IsTTL() || to.IsTTL() {
			k := from.TTLs + (to.TTLs-from.TTLs)*frac
			// 12 significant digits: 0.2*1 prints as 0.2, in tables and axes.
			k, _ = strconv.ParseFloat(strconv.FormatFloat(k, 'g', 12, 64), 64)
			v := Span{TTLs: k, Set: true}
			if k == 0 {
				v = Span{Set: true}
			}
			return sweepVal{span: v, text: v.String()}
		}
		v := Span{NS: from.NS + time.Duration(math.Round(float64(to.NS-from.NS)*frac)), Set: true}
		return sweepVal{span: v, text: v.String()}
	}
	lo, hi := s.From.Num, s.To.Num
	v := lo + (hi-lo)*frac
	if kind == "int" {
		v = math.Round(v)
	}
	return sweepVal{num: v, text: strconv.FormatFloat(v, 'g', -1, 64)}
}

// AtSweep returns a copy of the file with the swept parameter set to its
// i-th value (0 ≤ i < Steps), validated again, and the value as text.
func (f *File) AtSweep(i int) (*File, string, error) {
	if f.Sweep == nil {
		return nil, "", f.errAt("sweep", "the scenario has no sweep")
	}
	if i < 0 || i >= f.Sweep.Steps {
		return nil, "", f.errAt("sweep.steps", "step %d out of range 0..%d", i, f.Sweep.Steps-1)
	}
	_, idx, lock, field, err := f.sweepKind(f.Sweep.Name)
	if err != nil {
		return nil, "", f.errAt("sweep.name", "%v", err)
	}
	v := f.sweepValue(i)
	c := *f
	c.Faults = slices.Clone(f.Faults)
	c.Params = map[string]LockParams{}
	for k, p := range f.Params {
		c.Params[k] = p
	}
	n := int64(v.num)
	switch {
	case lock != "":
		lp := LockParams{}
		for k, x := range c.Params[lock] {
			lp[k] = x
		}
		if v.span.Set {
			lp[field] = spanParam(v.span)
		} else {
			lp[field] = numParam(v.num)
		}
		c.Params[lock] = lp
	case strings.HasPrefix(f.Sweep.Name, "faults["):
		idxs := []int{idx}
		if idx == allFaults {
			idxs = f.faultsSetting(field)
			c.swept = idxs
		}
		for _, idx := range idxs {
			c.Faults[idx] = setFaultField(c.Faults[idx], field, v, n)
		}
	default:
		switch field {
		case "duration":
			c.Duration = v.span
		case "liveness":
			c.Liveness = v.span
		case "max_unavailable":
			c.MaxUnavailable = v.span
		case "clients.count":
			c.Clients.Count = int(n)
		case "topology.nodes":
			c.Topology.Nodes = int(n)
		case "workload.pool_size":
			c.Workload.PoolSize = &n
		case "topology.repl_lag":
			c.Topology.ReplLag = v.span
		case "topology.down_after":
			c.Topology.DownAfter = v.span
		case "net.latency_min":
			c.Net.LatencyMin = v.span
		case "net.latency_jitter":
			c.Net.LatencyJitter = v.span
		}
	}
	if err := c.validate(); err != nil {
		return nil, "", err
	}
	return &c, v.text, nil
}

// setFaultField returns fs with a sweepable field set to v (n: v as a
// whole number).
func setFaultField(fs FaultSpec, field string, v sweepVal, n int64) FaultSpec {
	switch field {
	case "start":
		fs.Start = v.span
	case "duration":
		fs.Duration = v.span
	case "jump":
		fs.Jump = v.span
	case "delay":
		fs.Delay = v.span
	case "drift_ppm":
		fs.DriftPPM = n
	case "loss_prob":
		fs.LossProb = v.num
	}
	return fs
}

// sweepNumber reads a plain number node (a sweep bound of an integer or
// fractional parameter).
func sweepNumber(node ast.Node) (float64, bool) {
	switch n := node.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		v, err := strconv.ParseFloat(strings.ReplaceAll(n.GetToken().Value, "_", ""), 64)
		return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	return 0, false
}
