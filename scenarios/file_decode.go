package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/locksim/locksim/internal/inputfile"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// The scenario language's decoding: limits, errors that name file, line
// and field, the YAML parse and its shape checks, and Resolve.

// Limits of a scenario file.
const (
	MaxFileBytes  = 256 << 10 // a larger file is rejected before parsing
	MaxFileFaults = 1000      // scripted faults after repetition
)

// FileError is an error in a scenario file: where, which field, what.
type FileError struct {
	File   string
	Line   int // 0: the file as a whole
	Column int
	Field  string // e.g. "faults[2].duration"; "" when none applies
	Msg    string
}

// Error is one line: "file[:line[:column]]: [field: ]message", control
// characters (a key with a newline in it) escaped.
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(oneLine(e.File))
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(cutLong(oneLine(e.Field), 120))
		b.WriteString(": ")
	}
	b.WriteString(cutLong(oneLine(e.Msg), 400))
	return b.String()
}

// cutLong shortens s to about n bytes (on a rune boundary), saying how
// much was left out: a 500 KB key is not echoed whole.
func cutLong(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:i], len(s)-i)
}

// oneLine escapes control characters so that a message stays on one line.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// posError is an error a custom decoder found at a token.
type posError struct {
	tok *token.Token
	msg string
}

func (e *posError) Error() string { return e.msg }

// CheckYAMLShape bounds a YAML document's nesting, entries and tokens
// before go-yaml's parser sees it (checkShape), for the project's other
// strict YAML files (risk's profiles); the error names the line.
func CheckYAMLShape(data []byte) error {
	if err := checkShape(lexer.Tokenize(string(data))); err != nil {
		if err.tok != nil && err.tok.Position != nil {
			return fmt.Errorf("line %d: %s", err.tok.Position.Line, err.msg)
		}
		return errors.New(err.msg)
	}
	return nil
}

// LoadFile reads and parses a scenario file. Only a regular file is read
// (not a directory, device or FIFO), and at most MaxFileBytes of it.
func LoadFile(path string) (*File, error) {
	data, err := inputfile.Read(path, MaxFileBytes)
	if err != nil {
		var tl *inputfile.TooLargeError
		switch {
		case errors.As(err, &tl):
			return nil, &FileError{File: path, Msg: err.Error() + " of a scenario file"}
		case inputfile.NotRegular(err):
			return nil, &FileError{File: path, Msg: err.Error() + ", not a scenario file"}
		}
		return nil, &FileError{File: path, Msg: err.Error()}
	}
	return Parse(path, data)
}

// Parse parses and validates a scenario file's bytes; name is used in
// error messages. It checks everything that does not need a run: syntax,
// types, unknown fields, ranges, names, and that the scenario builds for
// every lock it lists. It never panics: a failure inside the YAML library
// is reported as an error too.
func Parse(name string, data []byte) (f *File, err error) { return parse(name, data, false) }

func parse(name string, data []byte, builtin bool) (f *File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, &FileError{File: name, Msg: fmt.Sprintf("the YAML parser failed on this file (%v)", r)}
		}
	}()
	if len(data) > MaxFileBytes {
		return nil, &FileError{File: name, Msg: fmt.Sprintf("%d bytes: larger than the %d-byte limit of a scenario file", len(data), MaxFileBytes)}
	}
	// A UTF-8 byte order mark (some editors write one) is not part of the
	// first key.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	// The lexer is linear in the file's size; the parser is not in its
	// nesting depth, so the depth is bounded between the two.
	toks := lexer.Tokenize(string(data))
	if err := checkShape(toks); err != nil {
		return nil, yamlError(name, nil, err)
	}
	astFile, err := parser.Parse(toks, 0)
	if err != nil {
		return nil, yamlError(name, nil, err)
	}
	var body ast.Node
	for _, d := range astFile.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if _, ok := d.Body.(*ast.CommentGroupNode); ok {
			continue
		}
		if body != nil {
			return nil, &FileError{File: name, Line: d.Body.GetToken().Position.Line, Msg: "more than one YAML document: a scenario file holds one"}
		}
		body = d.Body
	}
	if body == nil {
		return nil, &FileError{File: name, Msg: "empty scenario file (want at least id and description)"}
	}
	ix := &fieldIndex{byPath: map[string]*token.Position{}, byPos: map[[2]int]string{}}
	if err := ix.walk(body, ""); err != nil {
		return nil, ix.fileError(name, err)
	}
	switch body.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		return nil, &FileError{File: name, Line: body.GetToken().Position.Line, Column: body.GetToken().Position.Column,
			Msg: fmt.Sprintf("want a mapping of fields (id, description, …), got %s", nodeKind(body))}
	}
	f = &File{}
	if err := checkTypes(body, reflect.TypeOf(f)); err != nil {
		return nil, ix.fileError(name, err)
	}
	if err := yaml.NodeToValue(body, f, yaml.Strict()); err != nil {
		return nil, yamlError(name, ix, err)
	}
	f.name, f.ix, f.builtin = name, ix, builtin
	if err := f.validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// yamlError turns an error of the YAML library into a FileError.
func yamlError(name string, ix *fieldIndex, err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		return ix.at(name, pe.tok, pe.msg)
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg := ye.GetMessage()
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msg = fmt.Sprintf("want %s, got %s", typeWord(te.DstType.String()), typeWord(te.SrcType.String()))
		}
		var oe *yaml.OverflowError
		if errors.As(err, &oe) {
			msg = fmt.Sprintf("%s is out of range for %s", oe.SrcNum, typeWord(oe.DstType.String()))
		}
		var ue *yaml.UnexpectedNodeTypeError
		if errors.As(err, &ue) {
			msg = fmt.Sprintf("want %s, got %s", nodeTypeWord(ue.Expected), nodeTypeWord(ue.Actual))
		}
		e := ix.at(name, ye.GetToken(), msg)
		if strings.HasPrefix(msg, "unknown field") {
			if hint := unknownFieldHint(e.Field); hint != "" {
				e.Msg += " (" + hint + ")"
			}
		}
		return e
	}
	return &FileError{File: name, Msg: err.Error()}
}

// typeWord names a Go type the way a scenario file's reader thinks of it.
func typeWord(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), t == "*int", t == "*int64":
		return "an integer"
	case strings.HasPrefix(t, "float"), t == "*float64":
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.Contains(t, "scenarios."), strings.Contains(t, "Spec"):
		return "a mapping"
	}
	return t
}

func nodeTypeWord(t ast.NodeType) string {
	switch t {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.StringType, ast.LiteralType:
		return "a string"
	case ast.IntegerType:
		return "an integer"
	case ast.FloatType:
		return "a number"
	case ast.BoolType:
		return "a boolean"
	case ast.NullType:
		return "nothing"
	}
	return strings.ToLower(t.String())
}

func nodeKind(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode:
		return "an integer"
	case *ast.FloatNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.NullNode:
		return "nothing"
	}
	return strings.ToLower(n.Type().String())
}

// fieldIndex knows where each field of a file is: path → position, and
// position → path (for the YAML library's errors, which carry a token).
type fieldIndex struct {
	byPath map[string]*token.Position
	byPos  map[[2]int]string
}

// Bounds on a scenario file's shape (checkShape): a 6 KB built-in file
// has 1,500 tokens, nests 5 deep, and its longest list has 20 entries.
const (
	maxNesting = 32
	maxEntries = 1000 // in a list: MaxFileFaults
	maxKeys    = 128  // in a mapping (the parser is quadratic in them)
	maxTokens  = 100_000
)

// checkShape bounds what go-yaml's parser is given, from the lexer's
// tokens alone: the parser takes time and memory quadratic in a
// collection's nesting depth and in a block mapping's number of keys
// (unbounded, 16,000 levels of "{a: " took 0.7 s and 550 MB; 20,000 keys in
// one mapping 1.9 s), so both are bounded before it runs, and so are the
// entries of a list and the number of tokens. Flow collections ([, {) count one level each, and their
// commas count entries; block ones are a stack of the columns where their
// entries ("-", "?", a key) start: an entry further right opens a level,
// one further left closes those right of it, one at the same column is the
// next entry, and a list may sit at its key's own column. The depth errs
// high, never low; walk checks the exact depth after.
func checkShape(toks token.Tokens) *posError {
	type level struct {
		col     int
		list    bool
		entries int
	}
	var block, flow []level
	tooDeep := func(tk *token.Token) *posError {
		if len(block)+len(flow) > maxNesting {
			return &posError{tok: tk, msg: fmt.Sprintf("nested deeper than %d levels", maxNesting)}
		}
		return nil
	}
	tooMany := func(tk *token.Token, l *level) *posError {
		if l.entries++; l.list && l.entries > maxEntries {
			return &posError{tok: tk, msg: fmt.Sprintf("more than %d entries in one list", maxEntries)}
		} else if !l.list && l.entries > maxKeys {
			return &posError{tok: tk, msg: fmt.Sprintf("more than %d keys in one mapping", maxKeys)}
		}
		return nil
	}
	var prev *token.Token
	for i, tk := range toks {
		if i == maxTokens {
			return &posError{tok: tk, msg: fmt.Sprintf("more than %d YAML tokens (keys, values, punctuation, comments): too large for a scenario file", maxTokens)}
		}
		if tk == nil || tk.Position == nil || tk.Type == token.CommentType {
			continue
		}
		var err *posError
		switch tk.Type {
		case token.DocumentHeaderType, token.DocumentEndType:
			block, flow = block[:0], flow[:0]
		case token.SequenceStartType, token.MappingStartType:
			flow = append(flow, level{list: tk.Type == token.SequenceStartType, entries: 1})
			err = tooDeep(tk)
		case token.SequenceEndType, token.MappingEndType:
			if len(flow) > 0 {
				flow = flow[:len(flow)-1]
			}
		case token.CollectEntryType:
			if len(flow) > 0 {
				err = tooMany(tk, &flow[len(flow)-1])
			}
		case token.SequenceEntryType, token.MappingKeyType, token.MappingValueType:
			if len(flow) > 0 {
				break
			}
			col, list := tk.Position.Column, tk.Type == token.SequenceEntryType
			if tk.Type == token.MappingValueType {
				if prev == nil || prev.Position.Line != tk.Position.Line || prev.Type == token.MappingKeyType {
					break // ": v" after a "?" key, whose "?" counted
				}
				col = prev.Position.Column // the key's
			}
			for len(block) > 0 && block[len(block)-1].col > col {
				block = block[:len(block)-1]
			}
			if n := len(block); !list && n > 0 && block[n-1].col == col && block[n-1].list {
				block = block[:n-1] // a key at the column of a list under the key before
			}
			if n := len(block); n > 0 && block[n-1].col == col && block[n-1].list == list {
				err = tooMany(tk, &block[n-1]) // the next entry of the same collection
				break
			}
			block = append(block, level{col: col, list: list, entries: 1})
			err = tooDeep(tk)
		}
		if err != nil {
			return err
		}
		prev = tk
	}
	return nil
}

func (ix *fieldIndex) record(path string, tok *token.Token, primary bool) {
	if tok == nil || tok.Position == nil {
		return
	}
	p := tok.Position
	if _, ok := ix.byPos[[2]int{p.Line, p.Column}]; !ok {
		ix.byPos[[2]int{p.Line, p.Column}] = path
	}
	if _, ok := ix.byPath[path]; !ok || primary {
		ix.byPath[path] = p
	}
}

func (ix *fieldIndex) walk(n ast.Node, path string) error {
	if strings.Count(path, ".")+strings.Count(path, "[") > maxNesting {
		return &posError{tok: n.GetToken(), msg: fmt.Sprintf("nested deeper than %d levels", maxNesting)}
	}
	switch n := n.(type) {
	case *ast.MappingNode:
		for _, v := range n.Values {
			if err := ix.walk(v, path); err != nil {
				return err
			}
		}
	case *ast.MappingValueNode:
		if n.Key == nil {
			return nil
		}
		key := keyText(n.Key)
		p := key
		if path != "" {
			p = path + "." + key
		}
		ix.record(p, n.Key.GetToken(), true)
		if n.Key.IsMergeKey() {
			return &posError{tok: n.Key.GetToken(), msg: "merge keys (<<) are not accepted in scenario files"}
		}
		if n.Value != nil {
			ix.record(p, n.Value.GetToken(), false)
			return ix.walk(n.Value, p)
		}
	case *ast.SequenceNode:
		for i, v := range n.Values {
			p := fmt.Sprintf("%s[%d]", path, i)
			if v == nil {
				continue
			}
			ix.record(p, v.GetToken(), true)
			if err := ix.walk(v, p); err != nil {
				return err
			}
		}
	case *ast.TagNode:
		// Tags are refused: nothing in a scenario needs one, and
		// go-yaml v1.19.2 dereferences nil decoding a tagged mapping where
		// a list is expected (found by FuzzParse).
		return &posError{tok: n.GetToken(), msg: "YAML tags (!x, !!x) are not accepted in scenario files"}
	case *ast.AnchorNode, *ast.AliasNode:
		return &posError{tok: n.GetToken(), msg: "anchors and aliases (&x, *x) are not accepted in scenario files"}
	}
	return nil
}

func keyText(k ast.MapKeyNode) string {
	switch k := k.(type) {
	case *ast.StringNode:
		return k.Value
	case *ast.MappingKeyNode:
		if k.Value != nil {
			return k.Value.String()
		}
	}
	if t := k.GetToken(); t != nil {
		return t.Value
	}
	return k.String()
}

// at makes a FileError at a token, naming the field there when known.
func (ix *fieldIndex) at(name string, tok *token.Token, msg string) *FileError {
	e := &FileError{File: name, Msg: msg}
	if tok == nil || tok.Position == nil {
		return e
	}
	e.Line, e.Column = tok.Position.Line, tok.Position.Column
	if ix != nil {
		e.Field = ix.byPos[[2]int{e.Line, e.Column}]
	}
	return e
}

// fileError turns an error from walk into a FileError.
func (ix *fieldIndex) fileError(name string, err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		return ix.at(name, pe.tok, pe.msg)
	}
	return &FileError{File: name, Msg: err.Error()}
}

// errAt makes a FileError for a field by its path; a field absent from the
// file is placed at its nearest present parent.
func (f *File) errAt(path, format string, a ...any) *FileError {
	e := &FileError{File: f.name, Field: path, Msg: fmt.Sprintf(format, a...)}
	if f.ix == nil {
		return e
	}
	for p := path; p != ""; p = parentPath(p) {
		if pos, ok := f.ix.byPath[p]; ok {
			e.Line, e.Column = pos.Line, pos.Column
			return e
		}
	}
	if len(f.ix.byPath) > 0 {
		e.Line = 1
	}
	return e
}

func parentPath(p string) string {
	i := max(strings.LastIndexByte(p, '.'), strings.LastIndexByte(p, '['))
	if i < 0 {
		return ""
	}
	return p[:i]
}

// Name is the file name the scenario was parsed from.
func (f *File) Name() string { return f.name }

// Scenario returns the file as a scenario: its id, its description, and a
// Build that makes the world for a lock and seed.
func (f *File) Scenario() Scenario {
	return Scenario{ID: f.ID, Description: f.Description, File: f,
		Build: func(info locks.Info, seed uint64, p Params) (sim.Config, error) { return f.build(info, seed, p) }}
}

// Resolve finds a scenario by built-in id or, failing that, as a path to
// a scenario file.
func Resolve(nameOrPath string) (Scenario, error) {
	if s, ok := builtins()[nameOrPath]; ok {
		return s, nil
	}
	looksLikePath := strings.ContainsRune(nameOrPath, filepath.Separator) || strings.ContainsRune(nameOrPath, '/') ||
		strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml")
	if _, err := os.Stat(nameOrPath); err != nil && !looksLikePath {
		return Scenario{}, fmt.Errorf("unknown scenario %q: not a built-in (%s) and no such file", nameOrPath, strings.Join(IDs(), ", "))
	}
	f, err := LoadFile(nameOrPath)
	if err != nil {
		return Scenario{}, err
	}
	return f.Scenario(), nil
}
