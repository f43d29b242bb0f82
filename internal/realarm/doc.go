// Package realarm is the real arm's tree: everything that runs a scenario
// against real servers and processes on loopback rather than in the
// simulator, kept apart from the engine's own internals.
//
//   - realredis: the entry point. It builds a world of real redis-server,
//     redis-sentinel, ZooKeeper or etcd processes, lock clients (Go locks
//     or driver processes) and link proxies from the same scenario file
//     the simulator reads, injects the faults, and judges the history
//     with the simulator's checkers (realredis.Build, realredis.Job, realredis.SweepRunner).
//   - realcoord: the consensus ensembles (three ZooKeeper or etcd members,
//     their peer proxies and clocks) that realredis starts.
//   - driver: the JSON-lines protocol spoken with a lock driver, a process
//     in another language (drivers/ at the repository's root).
//   - parity: runs cells on both arms and says where they agree.
//
// cmd/locksim reaches the real arm through realredis and parity only.
package realarm
