package sim

// Service is a simulated process other than Redis, reached by clients over
// the same network with RESP (go-redis Do): the protected resource of
// locks/resource is one. Exec runs one command at true time now for the named
// client and writes the reply; record adds events to the trace. It runs on
// the scheduler, so it must not block.
type Service interface {
	Exec(now int64, client string, args []string, reply Reply, record func(Event))
}

// Reply writes a RESP reply (miniredis's server.Peer implements it).
type Reply interface {
	WriteOK()
	WriteInt(int)
	WriteBulk(string)
	WriteNull()
	WriteError(string)
	WriteLen(int)
	WriteInline(string)
}

// serviceBuiltins are answered by the node's miniredis even on a service:
// the connection handshake go-redis sends.
var serviceBuiltins = map[string]bool{"HELLO": true, "PING": true, "CLIENT": true, "SELECT": true, "ECHO": true, "QUIT": true}

func newService(w *World, id int, cfg ServiceConfig) *Node {
	n := newNode(w, id, NodeConfig{Name: cfg.Name, Persistence: PersistAlways})
	n.replicaOf = -1
	n.svc = cfg.New()
	return n
}

// isService reports whether n is a service process (not Redis).
func (n *Node) isService() bool { return n.svc != nil }

// serves reports whether a service answers cmd itself (the connection
// handshake is left to the node's miniredis).
func (n *Node) serves(cmd string) bool { return n.isService() && !serviceBuiltins[cmd] }

// execService runs one command on the service, with the connection it
// came on as the member host's current one.
func (n *Node) execService(c *conn, args []string) {
	if n.host != nil {
		n.host.cur = c
	}
	n.svc.Exec(n.w.now(), c.p.name, args, c.peer, n.w.record)
	if n.host != nil {
		n.host.cur = nil
	}
}
