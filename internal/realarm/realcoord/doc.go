// Package realcoord runs a real coordination service for locksim's real
// arm: three ZooKeeper 3.8 servers (Debian's zookeeper package, one JVM
// each) or three etcd 3.4 members (Debian's etcd-server), each on its own
// 127.x loopback address and ports, with its data in a directory of the
// run's temp dir. An Ensemble starts them, waits (bounded) until a quorum
// serves, names the leader, and carries out member faults: SIGSTOP and
// SIGCONT, SIGKILL and a restart on the same data, and cuts of the
// members' links to each other (ZooKeeper: through the caller's per-link
// proxies; etcd: through one peer proxy of its own a member, which tells
// the dialling member by its socket: peerproxy.go). Close ends every
// process it started; every wait is bounded and a member that does not
// come up is an error naming it.
package realcoord
