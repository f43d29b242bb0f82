// Package sim is locksim's deterministic world: Redis nodes (miniredis),
// a Sentinel, simulated services (the protected storage), and client
// processes running real go-redis clients over simulated connections, all
// in one synctest bubble in virtual time.
//
// Run(bubble, Config) builds the world a Config describes, injects its
// fault schedule (client and node pauses, clock drift and jumps,
// partitions, delays, loss, crashes under each persistence mode,
// failovers), heals every fault at the end of the safety phase, runs the
// liveness phase, and returns a Result: stats, the SHA-256 of the JSON
// Lines trace, and a bounded history of events for the checkers.
//
// Time and randomness enter only through the Config: its Seed names every
// random stream (NewStreams), and no code of a run reads the wall clock,
// the global random source, map order or goroutine timing. The same Config
// gives the same trace, byte for byte.
package sim
