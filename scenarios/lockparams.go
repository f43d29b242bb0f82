package scenarios

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/locksim/locksim/locks"
)

// LockParams override a lock's parameters in a scenario file, by name:
// the names, kinds and ranges are the lock's parameter table
// (locks.Info.Params; 'locksim list locks ID' prints it), so a parameter
// added to a design's table is one a file can set and a sweep can vary.
type LockParams map[string]ParamValue

// ParamValue is one lock parameter as a file writes it: a duration (3s,
// 200ms), a number or a word (a choice), read by the parameter's kind once
// the lock is known.
type ParamValue struct {
	raw  string
	node string // "int", "float", "string" or "null" (absent)
}

// UnmarshalYAML implements yaml.NodeUnmarshaler.
func (v *ParamValue) UnmarshalYAML(node ast.Node) error {
	switch n := node.(type) {
	case *ast.NullNode:
		*v = ParamValue{node: "null"}
	case *ast.IntegerNode:
		*v = ParamValue{raw: strings.ReplaceAll(n.GetToken().Value, "_", ""), node: "int"}
	case *ast.FloatNode:
		*v = ParamValue{raw: strings.ReplaceAll(n.GetToken().Value, "_", ""), node: "float"}
	case *ast.StringNode:
		*v = ParamValue{raw: n.Value, node: "string"}
	default:
		return &posError{tok: node.GetToken(), msg: fmt.Sprintf("want a lock parameter's value (a duration, a number or a name), got %s", nodeKind(node))}
	}
	return nil
}

// spanParam, numParam: a sweep's value as a ParamValue.
func spanParam(s Span) ParamValue { return ParamValue{raw: s.String(), node: "string"} }
func numParam(x float64) ParamValue {
	node := "float"
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		node = "int" // a sweep's step at a whole number (tries: 3)
	}
	return ParamValue{raw: strconv.FormatFloat(x, 'f', -1, 64), node: node}
}

// absent: the file gave the parameter no value (null or ~: the YAML
// decoder leaves the zero ParamValue, never calling UnmarshalYAML).
func (v ParamValue) absent() bool { return v.node == "" || v.node == "null" }

// value reads v as a value of p; msg says why it is not one.
func (v ParamValue) value(p locks.Param) (x locks.Value, msg string) {
	word := func() string {
		switch v.node {
		case "string":
			return fmt.Sprintf("the string %q", scalarText(v.raw))
		case "float":
			return "the fraction " + scalarText(v.raw)
		}
		return scalarText(v.raw)
	}
	switch p.Kind {
	case locks.KindDuration:
		s, err := ParseSpan(v.raw)
		if err != nil {
			return x, err.Error()
		}
		if s.IsTTL() {
			return x, fmt.Sprintf("%s: a lock parameter must be absolute (e.g. 3s), not a multiple of the TTL", s)
		}
		return locks.Dur(s.NS), ""
	case locks.KindInt:
		if v.node != "int" {
			return x, "want a whole number, got " + word()
		}
		f, err := strconv.ParseFloat(v.raw, 64)
		if err != nil || math.Abs(f) > 1e9 {
			return x, fmt.Sprintf("%s is out of range for an integer", scalarText(v.raw))
		}
		return locks.Int(int(f)), ""
	case locks.KindFloat:
		f, err := strconv.ParseFloat(v.raw, 64)
		if v.node == "string" || err != nil {
			return x, "want a number, got " + word()
		}
		return locks.Float(f), ""
	}
	if v.node != "string" {
		return x, fmt.Sprintf("want a name (one of %s), got %s", strings.Join(p.Choices, ", "), word())
	}
	return locks.Choice(v.raw), ""
}

// lockInfo applies a file's parameter overrides to a lock through its
// parameter table (locks.Info.With): a copy of its Info whose New builds
// the lock with them and whose TTL is the new lease.
func (f *File) lockInfo(base locks.Info, lp LockParams) (locks.Info, error) {
	path := "params." + base.ID
	given := map[string]locks.Value{}
	unknown := map[string]locks.Value{}
	for _, name := range sortedKeys(lp) {
		if lp[name].absent() {
			continue
		}
		if _, ok := base.Param(name); !ok {
			unknown[name] = locks.Value{}
		}
	}
	if len(unknown) > 0 {
		_, err := base.With(unknown) // the table's own words for what it takes
		return locks.Info{}, f.paramError(path, err)
	}
	for _, name := range sortedKeys(lp) {
		if lp[name].absent() {
			continue
		}
		p, _ := base.Param(name)
		x, msg := lp[name].value(p)
		if msg != "" {
			return locks.Info{}, f.errAt(path+"."+name, "%s", msg)
		}
		given[name] = x
	}
	info, err := base.With(given)
	if err != nil {
		return locks.Info{}, f.paramError(path, err)
	}
	return info, nil
}

// paramError places a locks.ParamError at its parameter's field.
func (f *File) paramError(path string, err error) error {
	var pe *locks.ParamError
	if errors.As(err, &pe) {
		return f.errAt(path+"."+pe.Param, "%s", pe.Msg)
	}
	return f.errAt(path, "%v", err)
}

// sweepParamKind is the sweep kind of a lock parameter ("" for one a
// sweep cannot vary: a choice).
func sweepParamKind(p locks.Param) string {
	switch p.Kind {
	case locks.KindDuration:
		return "span"
	case locks.KindInt:
		return "int"
	case locks.KindFloat:
		return "float"
	}
	return ""
}

// sweepableParams lists the lock parameters of info a sweep can vary.
func sweepableParams(info locks.Info) []string {
	var out []string
	for _, p := range info.Params {
		if sweepParamKind(p) != "" {
			out = append(out, p.Name)
		}
	}
	return out
}
