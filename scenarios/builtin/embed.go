// Package builtin holds the built-in scenario files (this folder's
// *.yaml), embedded. It is a leaf that only internal/builtinfs imports:
// editing a file changes this package's object code but not its export
// data, so the go command recompiles this package and internal/builtinfs
// (whose output stays the same) and relinks, where an embed in a package
// many others import recompiled each of them.
package builtin

import "embed"

// FS holds the built-in scenario files, at its root (e.g. "drift.yaml").
//
//go:embed *.yaml
var FS embed.FS
