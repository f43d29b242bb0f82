package scenarios

import (
	"bytes"
	"errors"
	"io/fs"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"

	"github.com/locksim/locksim/internal/builtinfs"
)

// FuzzParse: whatever the bytes, Parse returns a scenario or an error
// that starts with the file name (and, where the problem has a place, its
// line and column), fits on one line, and never comes from a panic.
//
//	go test -fuzz FuzzParse ./scenarios/
//
// The seed corpus is every built-in file, the malformed files of
// TestParseErrors, and testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	entries, _ := fs.ReadDir(builtinfs.Files(), ".")
	for _, e := range entries {
		data, _ := fs.ReadFile(builtinfs.Files(), e.Name())
		f.Add(data)
	}
	f.Add([]byte(exampleFile))
	for _, s := range []string{"", minimal, minimal + "faults:\n  - {kind: crash}\n", "id: [a\n", minimal + "x: &a 1\ny: *a\n",
		minimal + "topology: {per_node: {n0: {drift_ppm: 9999999}}}\n", minimal + "sweep: {name: duration, from: 1s, to: 2ttl, steps: 3}\n",
		// hostile files: strict types
		minimal + "clients: {count: 2.9}\n", minimal + "clients: {count: \"3\"}\n", minimal + "duration: NaN\n", minimal + "duration: 1ns\n",
		"\xef\xbb\xbf" + minimal, minimal + strings.Repeat("k", 5000) + ": 1\n",
		minimal + "faults:\n  - {kind: crash, targets: [c0], duration: 1s}\n",
		minimal + "faults:\n  - {kind: partition, from: [c0], to: [c0], duration: 1s}\n",
		minimal + "faults:\n  - {kind: node-pause, targets: [n0], duration: 1s, jump: 1s, loss_prob: 0.5}\n",
		// the hostile shapes (file_hostile_test.go), small
		minimal + "source: " + strings.Repeat("{a: ", 40) + "1" + strings.Repeat("}", 40) + "\n",
		minimal + "source:\n  " + strings.Repeat("- ", 40) + "1\n",
		minimal + "a:\n- b:\n  - c:\n    ? d\n    : - e\nf:\n- 1\n",
		minimal + "x: [" + strings.Repeat("1,", 1001) + "1]\n"} {
		f.Add([]byte(s))
	}
	lineRE := regexp.MustCompile(`^f\.yaml(:\d+(:\d+)?)?: `)
	f.Fuzz(func(t *testing.T, data []byte) {
		// checkShape's depth errs high, never low: whatever it lets the
		// parser see nests no deeper than its bound (a node's depth counts
		// a mapping and its key-value node, hence twice, and a tag or
		// anchor node around either).
		if toks := lexer.Tokenize(string(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))); len(data) <= MaxFileBytes && checkShape(toks) == nil {
			if file, err := parser.Parse(toks, 0); err == nil {
				for _, d := range file.Docs {
					if depth := nodeDepth(d.Body, 0); depth > 4*maxNesting+4 {
						t.Fatalf("checkShape passed a document %d nodes deep", depth)
					}
				}
			}
		}
		sc, err := Parse("f.yaml", data)
		if err == nil {
			if sc == nil || sc.ID == "" || sc.Description == "" {
				t.Fatalf("no error and no scenario: %+v", sc)
			}
			return
		}
		msg := err.Error()
		if strings.Contains(msg, "the YAML parser failed") {
			t.Fatalf("panic inside Parse: %s", msg)
		}
		if !lineRE.MatchString(msg) {
			t.Fatalf("error without the file name: %q", msg)
		}
		if strings.ContainsAny(msg, "\n\r") {
			t.Fatalf("multi-line error: %q", msg)
		}
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Fatalf("not a FileError: %T %v", err, err)
		}
		if fe.Field != "" && fe.Line == 0 && len(strings.TrimSpace(string(data))) > 0 && !strings.Contains(fe.Msg, "required") {
			t.Fatalf("a field error without a line: %q", msg)
		}
	})
}

// nodeDepth is the depth of the deepest node under n (n at depth d).
func nodeDepth(n ast.Node, d int) int {
	if n == nil || reflect.ValueOf(n).IsNil() {
		return d
	}
	deepest := d + 1
	var kids []ast.Node
	switch n := n.(type) {
	case *ast.MappingNode:
		for _, v := range n.Values {
			kids = append(kids, v)
		}
	case *ast.MappingValueNode:
		kids = append(kids, n.Key, n.Value)
	case *ast.MappingKeyNode:
		kids = append(kids, n.Value)
	case *ast.SequenceNode:
		kids = append(kids, n.Values...)
	case *ast.TagNode:
		kids = append(kids, n.Value)
	case *ast.AnchorNode:
		kids = append(kids, n.Value)
	}
	for _, k := range kids {
		deepest = max(deepest, nodeDepth(k, d+1))
	}
	return deepest
}
