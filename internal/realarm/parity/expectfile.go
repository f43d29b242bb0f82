package parity

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/inputfile"
	"github.com/locksim/locksim/scenarios"
)

// A driver's expectations file (docs/DRIVERS.md, "Expectations"): what
// the library is expected to do in each scenario of each world, and why,
// written from its code before measuring. It sits in the driver's folder
// as ExpectFileName:
//
//	library: redis-py 4.3.4 redis.lock.Lock      # the table's column notes
//	resembles: set-nx-cad, redislock
//	no_sentinel: why it refuses a Sentinel world  # optional
//	expect:
//	  set-nx-cad:                                 # a world (Worlds)
//	    no-faults:                                # a built-in scenario
//	      verdict: safe                           # safe | unsafe | liveness
//	      why: SET NX PX (lock.py 223) and a compare-and-delete (27-34)
//
// Every field is checked: an unknown one, a world or scenario locksim does
// not know, a verdict other than the three, a missing why, a key given
// twice are refused with the file, line and field (scenarios.FileError).

// ExpectFileName is a driver's expectations file in its folder.
const ExpectFileName = "expect.yaml"

// Bounds on an expectations file: its bytes, YAML tokens and flow
// nesting (go-yaml's parser is quadratic in nesting; a block mapping's
// depth is bounded by its indentation within the bytes).
const (
	maxExpectBytes  = 256 << 10
	maxExpectTokens = 50_000
	maxExpectFlow   = 8
)

// Verdicts an expectation may name.
var expectVerdicts = []checker.Verdict{checker.VerdictSafe, checker.VerdictUnsafe, checker.VerdictLiveness}

// ExpectFile is a parsed expectations file.
type ExpectFile struct {
	Path       string
	Library    string
	Resembles  string
	NoSentinel string
	// Worlds maps a world to its scenarios' expectations; a world listed
	// with no scenarios still makes the driver a column of its table.
	Worlds map[string]map[string]Expectation
	// Order is each world's scenarios in the file's order.
	Order map[string][]string
}

// LoadExpectFile reads and checks path (a regular file of at most
// maxExpectBytes).
func LoadExpectFile(path string) (*ExpectFile, error) {
	data, err := inputfile.Read(path, maxExpectBytes)
	if err != nil {
		return nil, &scenarios.FileError{File: path, Msg: err.Error()}
	}
	return ParseExpect(path, data)
}

// ParseExpect parses and checks an expectations file's bytes (name is
// used in errors). It never panics: a failure inside the YAML library is
// an error too.
func ParseExpect(name string, data []byte) (f *ExpectFile, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, &scenarios.FileError{File: name, Msg: fmt.Sprintf("the YAML parser failed on this file (%v)", r)}
		}
	}()
	if len(data) > maxExpectBytes {
		return nil, &scenarios.FileError{File: name, Msg: fmt.Sprintf("%d bytes: larger than the %d-byte limit of an expectations file", len(data), maxExpectBytes)}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	toks := lexer.Tokenize(string(data))
	depth := 0
	for i, tk := range toks {
		if i == maxExpectTokens {
			return nil, at(name, "", tk, fmt.Sprintf("more than %d YAML tokens: too large for an expectations file", maxExpectTokens))
		}
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			if depth++; depth > maxExpectFlow {
				return nil, at(name, "", tk, fmt.Sprintf("flow collections ([, {) nested deeper than %d", maxExpectFlow))
			}
		case token.SequenceEndType, token.MappingEndType:
			depth = max(0, depth-1)
		}
	}
	file, err := parser.Parse(toks, 0)
	if err != nil {
		var ye interface {
			GetToken() *token.Token
			GetMessage() string
		}
		if errors.As(err, &ye) {
			return nil, at(name, "", ye.GetToken(), ye.GetMessage())
		}
		return nil, &scenarios.FileError{File: name, Msg: err.Error()}
	}
	var body ast.Node
	for _, d := range file.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if _, ok := d.Body.(*ast.CommentGroupNode); ok {
			continue
		}
		if body != nil {
			return nil, at(name, "", d.Body.GetToken(), "more than one YAML document: an expectations file holds one")
		}
		body = d.Body
	}
	if body == nil {
		return nil, &scenarios.FileError{File: name, Msg: "empty expectations file (want expect: WORLD: SCENARIO: {verdict, why})"}
	}
	f = &ExpectFile{Path: name, Worlds: map[string]map[string]Expectation{}, Order: map[string][]string{}}
	top, err := fields(name, "", body, "library, resembles, no_sentinel, expect")
	if err != nil {
		return nil, err
	}
	for _, kv := range top {
		key := keyOf(kv)
		switch key {
		case "library":
			f.Library, err = str(name, key, kv)
		case "resembles":
			f.Resembles, err = str(name, key, kv)
		case "no_sentinel":
			f.NoSentinel, err = str(name, key, kv)
		case "expect":
			err = f.worlds(name, kv)
		default:
			err = at(name, key, kv.Key.GetToken(), "unknown field (want library, resembles, no_sentinel or expect)")
		}
		if err != nil {
			return nil, err
		}
	}
	if len(f.Worlds) == 0 {
		return nil, &scenarios.FileError{File: name, Field: "expect", Msg: "missing: want expect: WORLD: SCENARIO: {verdict, why} for at least one world (" + strings.Join(Worlds, ", ") + ")"}
	}
	return f, nil
}

// worlds reads expect: WORLD: SCENARIO: {verdict, why}.
func (f *ExpectFile) worlds(name string, kv *ast.MappingValueNode) error {
	ws, err := fields(name, "expect", kv.Value, "a world: "+strings.Join(Worlds, ", "))
	if err != nil {
		return err
	}
	for _, w := range ws {
		world := keyOf(w)
		field := "expect." + world
		if !slices.Contains(Worlds, world) {
			return at(name, field, w.Key.GetToken(), fmt.Sprintf("unknown world %q (%swant one of %s)", world, scenarios.DidYouMean(world, Worlds), strings.Join(Worlds, ", ")))
		}
		f.Worlds[world] = map[string]Expectation{}
		if _, ok := w.Value.(*ast.NullNode); ok || w.Value == nil {
			continue // a column with no expectations
		}
		scs, err := fields(name, field, w.Value, "a scenario")
		if err != nil {
			return err
		}
		for _, s := range scs {
			sc := keyOf(s)
			sf := field + "." + sc
			if _, err := scenarios.Get(sc); err != nil {
				return at(name, sf, s.Key.GetToken(), fmt.Sprintf("unknown scenario %q (%swant a built-in one: locksim list scenarios)", sc, scenarios.DidYouMean(sc, scenarios.IDs())))
			}
			e, err := expectation(name, sf, s)
			if err != nil {
				return err
			}
			f.Worlds[world][sc] = e
			f.Order[world] = append(f.Order[world], sc)
		}
	}
	return nil
}

// expectation reads one scenario's {verdict, why}.
func expectation(name, field string, s *ast.MappingValueNode) (Expectation, error) {
	var e Expectation
	kvs, err := fields(name, field, s.Value, "verdict and why")
	if err != nil {
		return e, err
	}
	for _, kv := range kvs {
		k := keyOf(kv)
		switch k {
		case "verdict":
			var v string
			v, err = str(name, field+".verdict", kv)
			if e.Verdict = checker.Verdict(v); err == nil && !slices.Contains(expectVerdicts, e.Verdict) {
				err = at(name, field+".verdict", kv.Value.GetToken(), fmt.Sprintf("unknown verdict %q (want safe, unsafe, liveness)", e.Verdict))
			}
		case "why":
			e.Why, err = str(name, field+".why", kv)
		default:
			err = at(name, field+"."+k, kv.Key.GetToken(), "unknown field (want verdict and why)")
		}
		if err != nil {
			return e, err
		}
	}
	switch {
	case e.Verdict == "":
		return e, at(name, field+".verdict", s.Key.GetToken(), "missing (want safe, unsafe or liveness)")
	case strings.TrimSpace(e.Why) == "":
		return e, at(name, field+".why", s.Key.GetToken(), "missing: the reason, with the library's file and lines")
	}
	return e, nil
}

// fields is n's entries, n a mapping; a key given twice is refused.
func fields(name, field string, n ast.Node, want string) ([]*ast.MappingValueNode, error) {
	var kvs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		kvs = m.Values
	case *ast.MappingValueNode:
		kvs = []*ast.MappingValueNode{m}
	default:
		var tok *token.Token
		got := "nothing"
		if n != nil {
			tok, got = n.GetToken(), strings.ToLower(n.Type().String())
		}
		return nil, at(name, field, tok, fmt.Sprintf("want a mapping (%s), got %s", want, got))
	}
	seen := map[string]bool{}
	for _, kv := range kvs {
		if kv.Key == nil {
			return nil, at(name, field, kv.GetToken(), "a mapping entry without a key")
		}
		k := keyOf(kv)
		if seen[k] {
			return nil, at(name, join(field, k), kv.Key.GetToken(), "given twice")
		}
		seen[k] = true
	}
	return kvs, nil
}

// str is kv's value as a string: a plain, quoted or block scalar.
func str(name, field string, kv *ast.MappingValueNode) (string, error) {
	switch v := kv.Value.(type) {
	case *ast.StringNode:
		return v.Value, nil
	case *ast.LiteralNode:
		if v.Value != nil {
			return strings.TrimSpace(v.Value.Value), nil
		}
		return "", nil
	case *ast.NullNode, nil:
		return "", nil
	}
	return "", at(name, field, kv.Value.GetToken(), fmt.Sprintf("want a string, got %s", strings.ToLower(kv.Value.Type().String())))
}

func keyOf(kv *ast.MappingValueNode) string {
	if s, ok := kv.Key.(*ast.StringNode); ok {
		return s.Value
	}
	if t := kv.Key.GetToken(); t != nil {
		return t.Value
	}
	return kv.Key.String()
}

func join(field, k string) string {
	if field == "" {
		return k
	}
	return field + "." + k
}

// at is an error in file name at tok, in field.
func at(name, field string, tok *token.Token, msg string) *scenarios.FileError {
	e := &scenarios.FileError{File: name, Field: field, Msg: msg}
	if tok != nil && tok.Position != nil {
		e.Line, e.Column = tok.Position.Line, tok.Position.Column
	}
	return e
}
