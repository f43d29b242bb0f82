// Package checker judges a run's history. Checkers are pure functions of
// the history (History, a list of Events): they never import the
// simulator, the scenarios, the resource, Redis clients or plotting.
//
// One file per concern:
//
//	overlap.go    lease overlap: belief intervals (Holds) and the pairs of
//	              clients that believed at once (Overlaps)
//	resource.go   resource safety: the storage's own log (StorageTruth,
//	              exact) and porcupine on what the clients saw
//	              (Linearizable, "one critical section at a time")
//	ownership.go  releases and renewals of a lock no longer held
//	liveness.go   progress after the heal, unavailability, deadlock
//	result.go     Check: every checker and the verdict
//	slice.go      Slice: the counterexample's events
//	visualize.go  WriteVisualization: porcupine's HTML, faults annotated
//
// Every check has a bound, named where it is defined: DefaultMaxEvents
// (events considered), DefaultPorcupineTimeout and DefaultMaxSections (the
// linearizability search), MaxListedViolations, MaxSliceEvents,
// MaxAnnotations. At a bound the answer is "unknown", never "safe".
//
// Porcupine starts goroutines and timers: run Check outside any synctest
// bubble (or with Options.SkipPorcupine).
package checker
