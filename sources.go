package locksim

import "embed"

// Sources holds the module's Go sources (test files included: the result
// store skips them) and the files its packages embed (the report's
// templates, the known-bugs entries), but the built-in scenarios: those
// the store reads from internal/builtinfs, so that editing one does not
// change this package, which the store imports (scenarios/builtin/embed.go
// says why). They are compiled in so that the
// result store (internal/store) can name what a run's trace depends on:
// the same files built this binary, so they cannot disagree with it, and
// no generate step is needed. Only a package at the module root can embed
// every package's folder. A pattern as wide as */*/*.go would reach the
// separate module in examples/, so the deeper folders are named;
// TestSourcesComplete fails when a compiled file of the module is not here.
//
//go:embed go.mod *.go */*.go cmd/*/*.go internal/*/*.go internal/*/*/*.go locks/*/*.go scenarios/builtin/*.go
//go:embed reports/templates knownbugs/bugs/*.yaml risk/*.yaml
var Sources embed.FS
