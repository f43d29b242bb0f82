package locks

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Lock parameters are data: a design declares its knobs once, as a table
// of Param (Info.Params), and builds itself from values of them
// (Info.Configure). Every reader of lock parameters reads that table: a
// scenario file's params block, a sweep over params.<lock>.<name>, 'locksim
// list locks ID' and the real arm's time scaling. Adding a parameter is one
// row in the design's table, plus the design's use of the value.

// ParamKind is what a lock parameter's values are.
type ParamKind string

const (
	KindDuration ParamKind = "duration" // a time.Duration (a scenario file writes 3s, 200ms)
	KindInt      ParamKind = "int"      // a whole number
	KindFloat    ParamKind = "float"    // a number
	KindChoice   ParamKind = "choice"   // one of Param.Choices
)

// Value is one parameter's value: the field of its Param's Kind.
type Value struct {
	Duration time.Duration
	Int      int
	Float    float64
	Choice   string
}

// Dur, Int, Float and Choice make Values, for tables and callers.
func Dur(d time.Duration) Value { return Value{Duration: d} }
func Int(n int) Value           { return Value{Int: n} }
func Float(f float64) Value     { return Value{Float: f} }
func Choice(s string) Value     { return Value{Choice: s} }

// Param is one row of a design's parameter table.
type Param struct {
	// Name is how a scenario file's params block and a sweep
	// (params.<lock>.<name>) write it: ttl, retry_delay.
	Name string
	Kind ParamKind
	// Default is the design's own value.
	Default Value
	// Unit says what the value counts (tries, replicas, a fraction of the
	// TTL, a Redlock preset); "" for a duration.
	Unit string
	// Min and Max bound the value, inclusive (a choice has Choices
	// instead); Positive also excludes a zero duration.
	Min, Max Value
	Positive bool
	Choices  []string
	// Doc is one line: what the parameter does.
	Doc string
}

// Values are a design's parameter values, by name: those given (a scenario
// file's params, a sweep's step), and the table's defaults for the others;
// every duration read through them is multiplied by the time scale
// (Info.Scaled: the real arm plays a scenario faster).
type Values struct {
	params []Param
	given  map[string]Value
	scale  float64
}

// Given reports whether the parameter was given (not defaulted).
func (v Values) Given(name string) bool { _, ok := v.given[name]; return ok }

func (v Values) get(name string) Value {
	if x, ok := v.given[name]; ok {
		return x
	}
	for _, p := range v.params {
		if p.Name == name {
			return p.Default
		}
	}
	panic("locks: no parameter " + name + " in the design's table")
}

// Duration reads a duration parameter (given or default), time-scaled.
func (v Values) Duration(name string) time.Duration { return v.scaled(v.get(name).Duration) }

// DurationOr reads a duration parameter if it was given, else def (a
// preset's value), time-scaled either way.
func (v Values) DurationOr(name string, def time.Duration) time.Duration {
	if x, ok := v.given[name]; ok {
		return v.scaled(x.Duration)
	}
	return v.scaled(def)
}

func (v Values) scaled(d time.Duration) time.Duration {
	if v.scale == 0 || v.scale == 1 {
		return d
	}
	return time.Duration(math.Round(float64(d) * v.scale))
}

// Int, Float and Choice read a parameter (given or default).
func (v Values) Int(name string) int       { return v.get(name).Int }
func (v Values) Float(name string) float64 { return v.get(name).Float }
func (v Values) Choice(name string) string { return v.get(name).Choice }

// Configured is what a design builds from parameter values: its lease and
// its constructor.
type Configured struct {
	TTL time.Duration
	New func(Env) (Lock, error)
}

// ParamError is a bad parameter value (or name) given to Info.With: Param
// names it, Msg says what is wrong.
type ParamError struct {
	Param string
	Msg   string
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Msg }

// ParamNames lists the table's names, in table order.
func (i Info) ParamNames() []string {
	var out []string
	for _, p := range i.Params {
		out = append(out, p.Name)
	}
	return out
}

// Param returns the row of the design's table named name.
func (i Info) Param(name string) (Param, bool) {
	for _, p := range i.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// With returns the design built with the given parameter values, on top
// of those it was built with (the others keep their defaults): an Info
// whose TTL and New are the design's under those values. No values: i
// itself. A name not in the table, a value out of its range or a
// combination the design refuses is a *ParamError.
func (i Info) With(given map[string]Value) (Info, error) {
	if len(given) == 0 {
		return i, nil
	}
	names := make([]string, 0, len(given))
	for n := range given {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if _, ok := i.Param(n); ok && i.Configure != nil {
			continue
		}
		if len(i.Params) == 0 || i.Configure == nil {
			return Info{}, &ParamError{n, fmt.Sprintf("lock %s takes no parameters", i.ID)}
		}
		return Info{}, &ParamError{n, fmt.Sprintf("lock %s does not take %s (it takes: %s)", i.ID, n, strings.Join(i.ParamNames(), ", "))}
	}
	for _, p := range i.Params {
		if x, ok := given[p.Name]; ok {
			if msg := p.Check(x); msg != "" {
				return Info{}, &ParamError{p.Name, msg}
			}
		}
	}
	all := maps.Clone(i.given)
	if all == nil {
		all = map[string]Value{}
	}
	maps.Copy(all, given)
	return i.configure(all, i.scale)
}

// Scaled returns the design with every duration parameter (given or
// default) multiplied by k, its TTL included: the real arm plays a
// scenario k times faster. A design without a table cannot be scaled
// unless it has no lease either (nothing to scale).
func (i Info) Scaled(k float64) (Info, error) {
	if k == 1 {
		return i, nil
	}
	if i.Configure == nil {
		if i.TTL == 0 {
			return i, nil
		}
		return Info{}, fmt.Errorf("lock %s cannot be time-scaled (it has no parameter table: its durations are fixed inside it); run it with --ttl %v, its own TTL", i.ID, i.TTL)
	}
	s := k
	if i.scale != 0 {
		s *= i.scale
	}
	return i.configure(i.given, s)
}

// Defaults returns the design built from its table's defaults: its TTL
// and New are Configure's (a registration with a table gives neither).
func (i Info) Defaults() (Info, error) { return i.configure(nil, 0) }

func (i Info) configure(given map[string]Value, scale float64) (Info, error) {
	c, err := i.Configure(Values{params: i.Params, given: given, scale: scale})
	if err != nil {
		return Info{}, err
	}
	out := i
	out.TTL, out.New = c.TTL, c.New
	out.given, out.scale = given, scale
	return out, nil
}

// Check says why x is not a value of p ("" when it is).
func (p Param) Check(x Value) string {
	switch p.Kind {
	case KindDuration:
		d := x.Duration
		if d < p.Min.Duration || (p.Positive && d == 0) || d > p.Max.Duration {
			what := "non-negative"
			if p.Positive {
				what = "positive"
			}
			return fmt.Sprintf("%v: must be %s and at most %v", d, what, p.Max.Duration)
		}
	case KindInt:
		if x.Int < p.Min.Int || x.Int > p.Max.Int {
			return fmt.Sprintf("%d out of range %d..%d", x.Int, p.Min.Int, p.Max.Int)
		}
	case KindFloat:
		f := x.Float
		if f != f || f < p.Min.Float || f > p.Max.Float {
			msg := fmt.Sprintf("%v out of range %v..%v", f, p.Min.Float, p.Max.Float)
			if p.Unit != "" {
				msg += " (a " + p.Unit + ")"
			}
			return msg
		}
	case KindChoice:
		if !slices.Contains(p.Choices, x.Choice) {
			return fmt.Sprintf("%q is not a %s (one of %s)", x.Choice, p.Unit, strings.Join(p.Choices, ", "))
		}
	}
	return ""
}

// Format renders a value of p as a scenario file writes it.
func (p Param) Format(x Value) string {
	switch p.Kind {
	case KindDuration:
		return x.Duration.String()
	case KindInt:
		return strconv.Itoa(x.Int)
	case KindFloat:
		return strconv.FormatFloat(x.Float, 'g', -1, 64)
	}
	return x.Choice
}
