package scenarios

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/locksim/locksim/internal/builtinfs"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// The built-in catalogue: every scenario, "default" included, is a file in
// builtin/, embedded in the binary (by package builtin, through
// internal/builtinfs, so that editing one recompiles neither this package
// nor its importers) and parsed on first use.

// The built-in files are parsed on first use, not at init: by then every
// package that registers designs (locks.Register) has run its init, so
// the files are checked against the designs the program links.
var (
	builtinOnce sync.Once
	builtinMap  map[string]Scenario
	// builtinErrs holds the built-in files that failed to parse (a test
	// demands none); each is still listed, with a Build that returns its
	// error, so that it fails loudly when used.
	builtinErrs []error
)

// builtins returns the built-in scenarios by id, parsing them once.
func builtins() map[string]Scenario {
	builtinOnce.Do(func() { builtinMap, builtinErrs = loadBuiltins() })
	return builtinMap
}

// builtinErrors are the built-in files that failed to parse.
func builtinErrors() []error {
	builtins()
	return builtinErrs
}

func loadBuiltins() (builtins map[string]Scenario, builtinErrors []error) {
	builtins = map[string]Scenario{}
	files := builtinfs.Files()
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		builtinErrors = append(builtinErrors, err)
		return builtins, builtinErrors
	}
	for _, e := range entries {
		name := builtinfs.Dir + "/" + e.Name()
		data, err := fs.ReadFile(files, e.Name())
		if err == nil {
			var f *File
			if f, err = parse(name, data, true); err == nil {
				if strings.TrimSuffix(e.Name(), ".yaml") != f.ID {
					err = fmt.Errorf("%s: id %q does not match the file name", name, f.ID)
				} else if _, dup := builtins[f.ID]; dup {
					err = fmt.Errorf("%s: id %q is already a built-in scenario", name, f.ID)
				} else {
					builtins[f.ID] = f.Scenario()
					continue
				}
			}
		}
		builtinErrors = append(builtinErrors, err)
		id, broken := strings.TrimSuffix(e.Name(), ".yaml"), err
		if _, dup := builtins[id]; !dup {
			builtins[id] = Scenario{ID: id, Description: "BROKEN: " + err.Error(),
				Build: func(locks.Info, uint64, Params) (sim.Config, error) { return sim.Config{}, broken }}
		}
	}
	return builtins, builtinErrors
}
