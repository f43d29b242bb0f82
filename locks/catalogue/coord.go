package catalogue

import (
	"github.com/locksim/locksim/internal/zk"
	"github.com/locksim/locksim/sim"
)

// The zk designs (zk.go) run on internal/zk's simulated ZooKeeper
// ensemble: registered here with them, so that the world builder
// (package scenarios) and locktest link neither it nor its raft library
// unless the program imports the catalogue.
func init() { sim.RegisterCoordination(zk.Coordination()) }
