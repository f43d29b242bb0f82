package scenarios

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// checkTypes walks the YAML tree beside the Go type it decodes into and
// refuses a scalar whose YAML type the decoder would silently convert: a
// float or a quoted string where a whole number goes (count: 2.9 was read
// as 2, count: "3" as 3), a number where a string goes is left to the
// decoder. Types that decode themselves (Span, SweepBound) are skipped.
func checkTypes(n ast.Node, t reflect.Type) error {
	if n == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(nodeUnmarshaler) {
		return nil
	}
	switch n := n.(type) {
	case *ast.MappingNode:
		for _, v := range n.Values {
			if err := checkTypes(v, t); err != nil {
				return err
			}
		}
		return nil
	case *ast.MappingValueNode:
		if n.Key == nil || n.Value == nil {
			return nil
		}
		switch t.Kind() {
		case reflect.Struct:
			if f, ok := fieldByTag(t, keyText(n.Key)); ok {
				return checkTypes(n.Value, f.Type)
			}
		case reflect.Map:
			return checkTypes(n.Value, t.Elem())
		}
		return nil // unknown fields are the decoder's (Strict) to refuse
	case *ast.SequenceNode:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil
		}
		for _, v := range n.Values {
			if err := checkTypes(v, t.Elem()); err != nil {
				return err
			}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if _, ok := n.(*ast.IntegerNode); !ok {
			if tok := n.GetToken(); tok.Type == token.StringType && isDigits(tok.Value) {
				// Too many digits for YAML's integers: the parser made it a
				// string, but the user wrote a number.
				return &posError{tok: tok, msg: fmt.Sprintf("%s is out of range for %s", scalarText(tok.Value), typeWord(t.String()))}
			}
			return &posError{tok: n.GetToken(), msg: fmt.Sprintf("want a whole number, got %s", scalarWord(n))}
		}
	case reflect.Float32, reflect.Float64:
		switch n.(type) {
		case *ast.IntegerNode, *ast.FloatNode:
		default:
			return &posError{tok: n.GetToken(), msg: fmt.Sprintf("want a number, got %s", scalarWord(n))}
		}
	case reflect.Bool:
		if _, ok := n.(*ast.BoolNode); !ok {
			return &posError{tok: n.GetToken(), msg: fmt.Sprintf("want true or false, got %s", scalarWord(n))}
		}
	}
	return nil
}

var nodeUnmarshaler = reflect.TypeOf((*yaml.NodeUnmarshaler)(nil)).Elem()

// fieldByTag finds the struct field a YAML key decodes into.
func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// isDigits: s is a whole number in decimal, maybe signed.
func isDigits(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// scalarText is a scalar's text cut short for an error.
func scalarText(text string) string {
	if len(text) > 40 {
		text = text[:40] + "…"
	}
	return text
}

// scalarWord describes a scalar for an error, its text cut short.
func scalarWord(n ast.Node) string {
	text := scalarText(n.GetToken().Value)
	switch n.(type) {
	case *ast.FloatNode:
		return "the fraction " + text
	case *ast.StringNode:
		return fmt.Sprintf("the string %q", text)
	case *ast.NullNode:
		return "null"
	}
	return fmt.Sprintf("%q", text)
}
