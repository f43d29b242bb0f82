// Package builtinfs hands out the built-in scenario files
// (scenarios/builtin). It stands between package builtin, whose object
// code changes with every edit of a file, and its users (scenarios and
// the result store): an edit recompiles only this small package, whose
// output does not change, so the users are not recompiled.
package builtinfs

import (
	"io/fs"

	"github.com/locksim/locksim/scenarios/builtin"
)

// Dir is the module folder that holds the files.
const Dir = "scenarios/builtin"

// Files are the built-in scenario files, at the root ("drift.yaml").
func Files() fs.FS { return builtin.FS }
