// Package realredis is locksim's real-Redis arm: the same scenario files,
// the same lock code and workload (scenarios.RunClient), the same storage
// state machine and the same checkers as the simulator, run against real
// redis-server processes on loopback, in real time.
//
// locksim starts everything itself in a temp dir on free 127.0.0.1 ports:
// one redis-server per node (with the scenario's persistence), the
// protected storage behind a small in-process RESP server, and one
// in-process toxiproxy proxy per client→server link. Faults are real:
// SIGSTOP/SIGCONT (node pause), SIGKILL and a restart (crash), toxics on
// the proxies (partition: data held until the heal; delay spikes); a
// client pause blocks the client at its pause point, or holds its network
// I/O and sleeps, in real time. Node clock faults are emulated on key
// TTLs (NodeClockMechanism). Everything is torn down when the run ends,
// fails or is interrupted.
//
// Scenarios are written in multiples of the lock's TTL, so a real run
// plays the scenario faster: every duration × Scale, so that the lock's
// TTL is the TTL asked for (Scale, Build). A real run is not replayable:
// the seed fixes the fault schedule and the workload's choices, not the
// interleaving.
package realredis
