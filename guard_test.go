package locksim_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The simulated world must not read the wall clock or the global random
// source. Inside the synctest bubble time.Now is virtual, but the engine
// keeps every such call in one documented place (sim/bubble.go) so that the
// order of reads is the scheduler's. The allowed exceptions, each with its
// reason, are listed here; anything else fails.
var guardAllowed = map[string]string{
	"sim/bubble.go":                   "the engine's one documented place: the bubble clock",
	"clock/clock.go":                  "clock.Real, the real-Redis arm's clock (never used in a simulated run)",
	"locks/catalogue/libs.go":         "adapters of libraries that read Go's clock themselves (inside the bubble: true time)",
	"locks/catalogue/libs_gozero.go":  "the go-zero adapter, as locks/catalogue/libs.go",
	"locks/catalogue/libs_gocron.go":  "the gocron adapter, as locks/catalogue/libs.go",
	"locks/catalogue/libs_redsync.go": "the redsync adapter, as locks/catalogue/libs.go",
	"locks/catalogue/zkreal.go":       "zk-lock on real ZooKeeper: built only with Env.Members, which only the real arm sets (the go-zookeeper client runs on Go's clock)",
}

var wallClock = map[string]bool{
	"Now": true, "Sleep": true, "Since": true, "Until": true, "After": true, "AfterFunc": true,
	"Tick": true, "NewTimer": true, "NewTicker": true,
}

func TestNoWallClockOrGlobalRandom(t *testing.T) {
	dirs := []string{"sim", "clock", "faults", "checker", "scenarios", "locks", "locks/catalogue", "internal/zk", "resource", "risk"}
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if len(files) == 0 {
			t.Errorf("guarded folder %s has no Go files: moved? update the list", dir)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			checked++
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]string{} // local import name -> path
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				name := filepath.Base(p)
				if p == "math/rand/v2" {
					name = "rand"
				}
				if imp.Name != nil {
					name = imp.Name.Name
				}
				names[name] = p
				if p == "math/rand" {
					t.Errorf("%s imports math/rand (global source); use a seeded math/rand/v2 stream", path)
				}
			}
			_, allowed := guardAllowed[filepath.ToSlash(path)]
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				id, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				switch names[id.Name] {
				case "time":
					if wallClock[sel.Sel.Name] && !allowed {
						t.Errorf("%s: time.%s reads the wall clock", fset.Position(sel.Pos()), sel.Sel.Name)
					}
				case "math/rand/v2":
					switch sel.Sel.Name {
					case "New", "NewPCG", "Rand", "Source", "PCG":
					default:
						t.Errorf("%s: rand.%s uses the global random source", fset.Position(sel.Pos()), sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
	if checked < 10 {
		t.Fatalf("guard checked only %d files: wrong working directory?", checked)
	}
	for p := range guardAllowed {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("allowed exception %s no longer exists: drop it from the list", p)
		}
	}
}

// Package locks is the contract only: a user module that imports it to
// write a lock links no lock library (the catalogue's adapters live in
// locks/catalogue). Package locktest, which tests a user's lock, links none
// either, nor a real system's client, nor the simulated ZooKeeper
// ensemble (internal/zk) and its raft and protobuf libraries: designs are
// looked up in the registry (locks.Lookup) that the catalogue fills when a
// program imports it, and the consensus worlds' service in the one it
// registers there too (sim.RegisterCoordination, locks/catalogue/coord.go).
func TestLocksLinksNoLibrary(t *testing.T) {
	libs := []string{"redsync", "redislock", "gocron", "go-zero", "robfig/cron", "locksim/locks/catalogue",
		"go.etcd.io/", "google.golang.org/grpc", "zookeeper", "locksim/internal/zk", "protobuf"}
	for _, pkg := range []string{"./locks", "./locktest"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Skipf("go list: %v", err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 5 {
			t.Fatalf("go list -deps %s printed %d packages: %q", pkg, len(deps), out)
		}
		for _, d := range deps {
			for _, lib := range libs {
				if strings.Contains(d, lib) {
					t.Errorf("package %s links %s (through %s): it must stay free of lock libraries and real systems' clients", pkg, lib, d)
				}
			}
		}
	}
}
