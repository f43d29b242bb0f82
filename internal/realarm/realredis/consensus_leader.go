package realredis

import (
	"context"
	"slices"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/sim"
)

// leaderPoll is how often the real arm asks etcd's members who leads.
const leaderPoll = 100 * time.Millisecond

// watchLeaders records, on etcd, a zk-leader event each time a member
// begins to say it leads (its status endpoint, asked every leaderPoll,
// straight to its client port: no proxy), as the simulator records one
// when a member of its store becomes leader. The trace then shows what a
// partition of the leader did: who led when it began, and when another
// took over. Not on ZooKeeper, whose JVMs a poll of three four-letter
// commands ten times a second would load on a 2-core machine.
func (w *world) watchLeaders(ctx context.Context) {
	var claimed []int
	tick := time.NewTicker(leaderPoll)
	defer tick.Stop()
	for {
		now := w.coord.ens.Leaders()
		if ctx.Err() != nil {
			return
		}
		for _, i := range now {
			if !slices.Contains(claimed, i) {
				w.record(sim.Event{Proc: w.coord.ens.Members[i].Name, Kind: event.KindZKLeader, Detail: "etcd: says it leads (status polled every 100ms)"})
			}
		}
		claimed = now
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
