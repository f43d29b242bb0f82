// Package run is locksim's one run pipeline: a Spec (scenario, lock, seed,
// parameters, a fault schedule) is built into a Job (the world's sim.Config
// and how its history is judged), a Job runs in a bubble and is judged in
// one place (Job.Run → Judged), and a Judged becomes what the user reads
// (Report: the summary and the --json object).
//
// Around that path: Spec.Repro, the one command line that reproduces a
// run; Shrink, the one shrinker (fewer faults, fewer clients, shorter and
// earlier faults, while the same kind of violation stays); the trace
// file's Header and a Comparer for replays. The CLI, sweeps, reports and
// locktest all go through it, so a verdict means the same everywhere.
//
// Data flows one way: scenarios and locks build the world, sim runs it,
// checker judges the history; run wires them and adds nothing of its own
// to a verdict but the rule for an incomplete run (unknown, unless what
// ran was already unsafe).
package run
