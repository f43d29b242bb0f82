package scenarios

import (
	"embed"
	"fmt"
	"path"
	"strings"

	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// The built-in catalogue: every scenario, "default" included, is a file in
// builtin/, embedded in the binary and parsed at start-up.
//
//go:embed builtin/*.yaml
var builtinFS embed.FS

// builtinErrors holds the built-in files that failed to parse (a test
// demands none); each is still registered, with a Build that returns its
// error, so that it is listed and fails loudly when used.
var builtinErrors []error

func init() {
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		builtinErrors = append(builtinErrors, err)
		return
	}
	for _, e := range entries {
		name := path.Join("builtin", e.Name())
		data, err := builtinFS.ReadFile(name)
		if err == nil {
			var f *File
			if f, err = Parse("scenarios/"+name, data); err == nil {
				if strings.TrimSuffix(e.Name(), ".yaml") != f.ID {
					err = fmt.Errorf("scenarios/%s: id %q does not match the file name", name, f.ID)
				} else if _, dup := builtins[f.ID]; dup {
					err = fmt.Errorf("scenarios/%s: id %q is already a built-in scenario", name, f.ID)
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
}
