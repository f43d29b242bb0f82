// Package locksim is the root of a deterministic simulator that answers
// "is this distributed lock safe, under which faults, and how often does
// it fail?". It holds no code of its own, only Sources (the module's
// sources, compiled in for the result store's key): the command is cmd/locksim, the
// packages a user imports are locks (the lock contract), locktest
// (property-based tests for a lock), scenarios and run (worlds and runs
// from Go) and reports; docs/ARCHITECTURE.md maps them all. This
// package's tests guard the repository as a whole: no wall clock or global
// random source in the simulated world (guard_test.go), and no broken link
// in README.md and docs/ (docs_test.go).
package locksim
