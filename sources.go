package locksim

import "embed"

// Sources holds the module's Go sources (test files included: the result
// store skips them) and the files its packages embed (the built-in
// scenarios, the report's templates, the known-bugs entries). They are compiled in so that the
// result store (internal/store) can name what a run's trace depends on:
// the same files built this binary, so they cannot disagree with it, and
// no generate step is needed. Only a package at the module root can embed
// every package's folder. A pattern as wide as */*/*.go would reach the
// separate module in examples/, so the deeper folders are named;
// TestSourcesComplete fails when a compiled file of the module is not here.
//
//go:embed go.mod *.go */*.go cmd/*/*.go internal/*/*.go internal/*/*/*.go locks/*/*.go
//go:embed reports/templates scenarios/builtin/*.yaml knownbugs/bugs/*.yaml risk/*.yaml
var Sources embed.FS
