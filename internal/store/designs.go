package store

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// catalogueDir is the folder of the lock designs in the module.
const catalogueDir = "locks/catalogue"

// initCallsAllowed are the functions of other packages that a design
// file may call while the package initialises (in a variable's
// initialiser or a registration's literal): each only computes its
// result. redis.NewScript: go-redis script.go builds a Script value from
// the source and its SHA-1. time.Duration: a conversion.
var initCallsAllowed = map[string]bool{"redis.NewScript": true, "time.Duration": true}

// designFile is one parsed non-test Go file of the catalogue.
type designFile struct {
	name  string
	decls []string        // names it declares at package level (not methods, init or _)
	recvs []string        // its methods' receiver types
	uses  map[string]bool // every identifier it mentions
	locks []string        // the lock ids its init functions register
	// own: its init functions only register designs with constant ids,
	// its initialisers call only what initCallsAllowed or the package's
	// shared helpers, and it has no //go:linkname.
	own bool
	// initCalls are the package's own functions its initialisers call.
	initCalls []string
}

// designFiles finds the catalogue's design files: a file is a lock's own
// (the map: file → the lock ids it registers) when nothing outside it
// can see or feel it, so that editing it can change no other lock's
// runs:
//
//   - its init functions only call Register with a composite literal whose
//     ID is a constant (one design's registration reads only its own
//     literal);
//   - no package-level name it declares is mentioned in any other non-test
//     Go file of the module (by name, whatever it resolves to: a
//     coincidence makes the file shared, never the reverse);
//   - each of its methods is on a type it declares;
//   - what runs while the package initialises (variables' initialisers,
//     the registration's literal outside function literals, and its
//     Configure function, which Register calls) calls only
//     initCallsAllowed, predeclared functions, its Configure parameter's
//     methods and the package's functions in shared files, and
//     no function of the package but Register assigns to a package-level
//     variable (so those calls have no effect on another lock);
//   - it has no //go:linkname.
//
// Every other catalogue file is shared: part of every lock's key. src
// holds the module's files by slash path (the embedded sources).
func designFiles(src fs.FS) (map[string][]string, error) {
	names, err := fs.Glob(src, catalogueDir+"/*.go")
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*designFile
	pkgVars := map[string]bool{}
	consts := map[string]string{} // string constants of the package
	var funcs []*ast.FuncDecl
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		data, err := fs.ReadFile(src, name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, name, data, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		df := &designFile{name: name, uses: map[string]bool{}, own: !strings.Contains(string(data), "go:linkname")}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				funcs = append(funcs, d)
				if d.Recv != nil {
					df.recvs = append(df.recvs, recvType(d.Recv.List[0].Type))
				} else if d.Name.Name != "init" {
					df.decls = append(df.decls, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						df.decls = append(df.decls, s.Name.Name)
					case *ast.ValueSpec:
						for i, n := range s.Names {
							if n.Name == "_" {
								df.own = false // run for its effect alone
								continue
							}
							df.decls = append(df.decls, n.Name)
							if d.Tok == token.VAR {
								pkgVars[n.Name] = true
							} else if i < len(s.Values) {
								if l, ok := s.Values[i].(*ast.BasicLit); ok && l.Kind == token.STRING {
									consts[n.Name], _ = strconv.Unquote(l.Value)
								}
							}
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				df.uses[id.Name] = true
			}
			return true
		})
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == "init" {
					df.readInit(d)
				}
			case *ast.GenDecl:
				if d.Tok == token.VAR {
					for _, s := range d.Specs {
						for _, v := range s.(*ast.ValueSpec).Values {
							df.initExpr(v)
						}
					}
				}
			}
		}
		files = append(files, df)
	}
	// Constant ids: resolved now that every file's constants are known.
	for _, df := range files {
		for i, id := range df.locks {
			if v, ok := strings.CutPrefix(id, "\x00"); ok {
				if c, known := consts[v]; known {
					df.locks[i] = c
				} else {
					df.own = false
				}
			}
		}
	}
	// Functions that write package state make every initialiser suspect.
	writers := false
	for _, fn := range funcs {
		if fn.Recv == nil && fn.Name.Name == "Register" {
			continue
		}
		if assignsTo(fn, pkgVars) {
			writers = true
		}
	}
	// Other non-test Go files of the module: what they mention.
	outside := map[string]bool{}
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || path.Dir(p) == catalogueDir {
			return err
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, data, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				outside[id.Name] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	declaredIn := map[string]*designFile{}
	for _, df := range files {
		for _, n := range df.decls {
			declaredIn[n] = df
		}
	}
	owned := map[string][]string{}
	for _, df := range files {
		if !df.own || len(df.locks) == 0 || writers && len(df.initCalls) > 0 {
			continue
		}
		ok := true
		for _, n := range df.decls {
			if outside[n] {
				ok = false
			}
			for _, other := range files {
				if other != df && other.uses[n] {
					ok = false
				}
			}
		}
		for _, r := range df.recvs {
			if !slices.Contains(df.decls, r) {
				ok = false
			}
		}
		for _, c := range df.initCalls {
			d := declaredIn[c]
			if d == nil && types.Universe.Lookup(c) != nil {
				continue // predeclared: len, append, min, a conversion
			}
			if d == nil || d == df {
				ok = false // its own function (or an unknown one) runs at init
			}
		}
		if ok {
			owned[df.name] = df.locks
		}
	}
	// A helper file that an owned file calls at init is shared by rule;
	// a file owned must not be one of them (checked above: d == df).
	return owned, nil
}

// readInit reads an init function: only Register(locks.Info{ID: ..., ...})
// statements keep the file its locks' own.
func (df *designFile) readInit(fn *ast.FuncDecl) {
	for _, st := range fn.Body.List {
		es, ok := st.(*ast.ExprStmt)
		call, ok2 := func() (*ast.CallExpr, bool) {
			if !ok {
				return nil, false
			}
			c, ok := es.X.(*ast.CallExpr)
			return c, ok
		}()
		if !ok2 || !isIdent(call.Fun, "Register") || len(call.Args) != 1 {
			df.own = false
			continue
		}
		lit, ok := call.Args[0].(*ast.CompositeLit)
		if !ok {
			df.own = false
			continue
		}
		id := ""
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok || !isIdent(kv.Key, "ID") {
				continue
			}
			switch v := kv.Value.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(v.Value); err == nil && v.Kind == token.STRING {
					id = s
				}
			case *ast.Ident:
				id = "\x00" + v.Name // a constant: resolved later
			}
		}
		if id == "" {
			df.own = false
			continue
		}
		df.locks = append(df.locks, id)
		df.initExpr(lit)
		for _, e := range lit.Elts {
			// Register calls Info.Defaults, which calls Configure: its
			// body runs at initialisation.
			if kv, ok := e.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Configure") {
				if fl, ok := kv.Value.(*ast.FuncLit); ok {
					df.initBody(fl)
				}
			}
		}
	}
}

// initBody notes the calls a function literal run at initialisation
// makes; a method of one of its parameters (locks.Values' getters) is
// allowed.
func (df *designFile) initBody(fl *ast.FuncLit) {
	params := map[string]bool{}
	for _, f := range fl.Type.Params.List {
		for _, n := range f.Names {
			params[n.Name] = true
		}
	}
	ast.Inspect(fl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && params[x.Name] {
					return true
				}
			}
			df.initCall(n)
		}
		return true
	})
}

// initExpr notes the calls an expression evaluated at initialisation
// makes (function literals are not called then).
func (df *designFile) initExpr(e ast.Expr) {
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			df.initCall(n)
		}
		return true
	})
}

// initCall notes one call made at initialisation: a function of the
// package (checked later), a predeclared one (len, append, a conversion)
// or initCallsAllowed keep the file its locks' own; anything else does
// not.
func (df *designFile) initCall(c *ast.CallExpr) {
	switch fun := c.Fun.(type) {
	case *ast.Ident:
		df.initCalls = append(df.initCalls, fun.Name)
	case *ast.SelectorExpr:
		if x, ok := fun.X.(*ast.Ident); !ok || !initCallsAllowed[x.Name+"."+fun.Sel.Name] {
			df.own = false
		}
	default:
		df.own = false
	}
}

// assignsTo reports whether fn assigns (or increments) anything rooted at
// a name in vars: by name, so a local of the same name counts too.
func assignsTo(fn *ast.FuncDecl, vars map[string]bool) bool {
	if fn.Body == nil {
		return false
	}
	found := false
	check := func(e ast.Expr) {
		for {
			switch x := e.(type) {
			case *ast.Ident:
				if vars[x.Name] {
					found = true
				}
				return
			case *ast.SelectorExpr:
				e = x.X
			case *ast.IndexExpr:
				e = x.X
			case *ast.StarExpr:
				e = x.X
			case *ast.ParenExpr:
				e = x.X
			default:
				return
			}
		}
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				check(l)
			}
		case *ast.IncDecStmt:
			check(n.X)
		}
		return true
	})
	return found
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// recvType is a method receiver's type name (*T, T, T[P]).
func recvType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
