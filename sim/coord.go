package sim

import "sync"

// Coordination is a coordination service a consensus lock's world runs
// beside its storage: internal/zk's simulated ZooKeeper ensemble, which
// locks/catalogue registers with the zk designs (locks/catalogue/coord.go).
// The world builder (package scenarios) finds it here, so that a program
// that links no consensus design (a test of a user's lock through
// locktest) links neither the service nor its raft library.
type Coordination struct {
	// Name names the service in errors ("zk").
	Name string
	// Members are the member processes' names, in member order: what a
	// fault may target in a consensus world.
	Members []string
	// Services returns the members' service configs; first is the index
	// the first member will have in Config.Services.
	Services func(first int) []ServiceConfig
}

var coordination struct {
	sync.RWMutex
	c   Coordination
	set bool
}

// RegisterCoordination registers the coordination service, at init (as
// locks.Register registers a design). A second registration, or one
// without members or services, is a programming error and panics.
func RegisterCoordination(c Coordination) {
	coordination.Lock()
	defer coordination.Unlock()
	switch {
	case coordination.set:
		panic("sim: a coordination service is already registered (" + coordination.c.Name + "); cannot register " + c.Name)
	case len(c.Members) == 0 || c.Services == nil:
		panic("sim: coordination service " + c.Name + " has no members or no Services")
	}
	c.Members = append([]string(nil), c.Members...)
	coordination.c, coordination.set = c, true
}

// LookupCoordination returns the registered coordination service; false
// when the program registered none (it imports no locks/catalogue).
func LookupCoordination() (Coordination, bool) {
	coordination.RLock()
	defer coordination.RUnlock()
	c := coordination.c
	c.Members = append([]string(nil), c.Members...)
	return c, coordination.set
}
