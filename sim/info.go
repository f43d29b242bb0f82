package sim

import (
	"strconv"
	"strings"
)

// replInfo answers INFO's replication section (INFO replication, INFO
// all, INFO everything) on a Redis node, which miniredis does not have:
// role and connected_slaves, the two fields a client reads to size its
// WAIT (Redisson's CommandAsyncService.syncedEval reads connected_slaves
// from INFO ALL). A replica is connected while it is up and follows this
// node, or was shipped to by this node and is now cut off from it (see
// below). It reports false, leaving the command to miniredis, for any
// other INFO.
func (n *Node) replInfo(c *conn, args []string) bool {
	if n.isService() || len(args) != 2 {
		return false
	}
	switch strings.ToLower(args[1]) {
	case "replication", "all", "everything":
	default:
		return false
	}
	var b strings.Builder
	b.WriteString("# Replication\r\n")
	if n.replicaOf >= 0 {
		b.WriteString("role:slave\r\nconnected_slaves:0\r\n")
	} else {
		got := 0
		for _, r := range n.w.nodes {
			if r == n || r.isService() || !r.up {
				continue
			}
			// A replica this node shipped to that now follows another
			// node is still connected as far as this node can tell while a
			// partition hides its REPLICAOF (real Redis notices after
			// repl-timeout, 60 s; not modelled).
			if r.replicaOf == n.id || (n.lastRepl[r.id] != nil && !n.w.net.reachable(n.addr(), r.addr())) {
				got++
			}
		}
		b.WriteString("role:master\r\nconnected_slaves:" + strconv.Itoa(got) + "\r\n")
	}
	if section := strings.ToLower(args[1]); section != "replication" && n.cfg.Persistence.aof() {
		// Redisson 3.46-3.52's syncedEval reads aof_enabled to choose
		// WAITAOF over WAIT. aof_enabled:0 is left out (a reader's default
		// is 0), so a reply without an AOF stays as it always was.
		b.WriteString("# Persistence\r\naof_enabled:1\r\n")
	}
	c.peer.WriteBulk(b.String())
	return true
}
