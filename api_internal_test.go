package locksim_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPublicAPINamesNoInternalType: no exported identifier of a public
// package (one a user may import: not under internal/, not a command)
// names a type of an internal/ package in its signature, its type or its
// exported fields, so a user's code can hold everything the API hands out.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		base := d.Name()
		if path != "." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "internal" || base == "cmd" ||
			base == "node_modules" || base == "examples" || base == "drivers") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
			return filepath.SkipDir // a module of its own
		}
		dirs = append(dirs, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, pkg := range pkgs {
			for _, f := range pkg.Files {
				checkExported(t, fset, f)
			}
		}
	}
	if len(dirs) < 10 {
		t.Fatalf("walked %d package folders: the walk is broken", len(dirs))
	}
	t.Logf("%d package folders checked", len(dirs))
}

// checkExported reports each exported declaration of f that mentions an
// identifier imported from an internal/ package.
func checkExported(t *testing.T, fset *token.FileSet, f *ast.File) {
	internal := map[string]string{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		if !strings.Contains(path, "/internal/") {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		internal[name] = path
	}
	if len(internal) == 0 {
		return
	}
	mentions := func(what string, n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok {
				return false
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] != "" {
				t.Errorf("%s: exported %s names %s.%s (%s)", fset.Position(sel.Pos()), what, id.Name, sel.Sel.Name, internal[id.Name])
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
				continue
			}
			mentions(d.Name.Name, d.Type)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							if len(fl.Names) == 0 || fl.Names[0].IsExported() {
								mentions(s.Name.Name+" field", fl.Type)
							}
						}
						continue
					}
					mentions(s.Name.Name, s.Type)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							mentions(n.Name, s.Type)
						}
					}
				}
			}
		}
	}
}

func exportedRecv(r *ast.FieldList) bool {
	if len(r.List) == 0 {
		return false
	}
	x := r.List[0].Type
	if s, ok := x.(*ast.StarExpr); ok {
		x = s.X
	}
	if ix, ok := x.(*ast.IndexExpr); ok {
		x = ix.X
	}
	id, ok := x.(*ast.Ident)
	return ok && id.IsExported()
}
