package sim_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locksim/locksim/sim"
)

// A world built by hand: one Redis node, two client processes, each
// running ordinary blocking go-redis code. Both try SET NX on the same key
// at virtual time zero; the scheduler decides who arrives first from the
// seed alone, so the same seed always gives the same replies and the same
// trace hash.
func Example() {
	cfg := sim.Config{
		Seed:     1,
		Clients:  2,
		Nodes:    []sim.NodeConfig{{}}, // one node, no persistence
		Duration: time.Second,          // the safety phase (no faults here)
		Liveness: time.Second,          // the phase after the heal
	}.WithDefaults()

	var mu sync.Mutex
	var replies []string
	cfg.Program = func(p *sim.Proc) {
		node := p.Nodes()[0] // a *redis.Client whose connections go through the simulated network
		ok, err := node.SetNX(p.Context(), "lock", p.Name(), 10*time.Second).Result()
		mu.Lock()
		replies = append(replies, fmt.Sprintf("%s: SET lock %s NX PX 10000 -> %v (err %v)", p.Name(), p.Name(), ok, err))
		mu.Unlock()
		for !p.Stopping() {
			p.Sleep(100 * time.Millisecond)
		}
	}

	var hashes []string
	sim.InTest(func(t *testing.T) {
		for range 2 {
			replies = nil
			res, err := sim.Run(sim.TestBubble(t), cfg)
			if err != nil {
				fmt.Println(err)
				return
			}
			hashes = append(hashes, res.TraceSHA256)
		}
	})
	for _, r := range replies {
		fmt.Println(r)
	}
	fmt.Println("run twice, the same trace:", len(hashes) == 2 && hashes[0] == hashes[1])
	// Output:
	// c0: SET lock c0 NX PX 10000 -> true (err <nil>)
	// c1: SET lock c1 NX PX 10000 -> false (err <nil>)
	// run twice, the same trace: true
}
