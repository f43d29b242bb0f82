package scenarios

import (
	"flag"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/sim"
)

var fullCatalogue = flag.Bool("locksim.catalogue-full", false,
	"run the no-faults catalogue check over 500 seeds per lock")

// TestCatalogueNoFaults: with no faults, every lock in the catalogue keeps
// mutual exclusion (no two belief intervals overlap), the bonus pool ends
// exactly at 300 minus the decrements the storage accepted, every client
// write was acknowledged (nothing unknown), and some client acquires in the
// liveness phase. Seeds: -short 2, default 10, -locksim.catalogue-full 500.
func TestCatalogueNoFaults(t *testing.T) {
	seeds := 10
	switch {
	case *fullCatalogue:
		seeds = 500
	case testing.Short():
		seeds = 2
	}
	for _, id := range catalogue.IDs() {
		t.Run(id, func(t *testing.T) {
			info, _ := catalogue.Get(id)
			if info.Unavailable != "" {
				t.Skip(info.Unavailable)
			}
			sections := 0
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				cfg, err := Build("no-faults", id, seed, Params{})
				if err != nil {
					t.Fatal(err)
				}
				res, err := sim.Run(sim.TestBubble(t), cfg)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				end := int64(cfg.Duration + cfg.Liveness)
				ops := historyOps(res.History)
				if ov := checker.Overlaps(checker.Holds(ops, end)); len(ov) > 0 && info.Fencing != locks.FenceVersion {
					t.Fatalf("seed %d: %d lease overlaps without faults, first %+v", seed, len(ov), ov[0])
				}
				accepted, final, clientOK, unknown, liveOK := int64(0), int64(PoolSize), 0, 0, false
				inflight := map[string]int64{} // client -> OpID of a write called and not returned
				for _, ev := range res.History {
					if ev.Op == event.OpWrite {
						if ev.Kind == event.KindCall {
							inflight[ev.Proc] = ev.OpID
						} else if inflight[ev.Proc] == ev.OpID {
							delete(inflight, ev.Proc)
						}
					}
					switch {
					case ev.Proc == "store" && ev.Kind == event.KindStoreWrite && ev.Result == event.ResultOK:
						accepted++
						final = ev.Value
					case ev.Op == event.OpWrite && ev.Kind == event.KindOK:
						clientOK++
					case ev.Kind == event.KindUnknown:
						unknown++
					}
					if (ev.Op == event.OpAcquire || (info.Fencing == locks.FenceVersion && ev.Op == event.OpWrite)) && ev.Kind == event.KindOK && ev.T > int64(cfg.Duration) {
						liveOK = true
					}
				}
				if final != PoolSize-accepted {
					t.Fatalf("seed %d: pool ends at %d, want 300 - %d accepted decrements = %d", seed, final, accepted, PoolSize-accepted)
				}
				// A write still in flight when the run stopped may or may not
				// have reached the storage: it is the only slack allowed.
				if int64(clientOK) > accepted || accepted > int64(clientOK+len(inflight)) || unknown > 0 {
					t.Fatalf("seed %d: clients saw %d writes ok, %d in flight at the end and %d unknown outcomes; storage accepted %d", seed, clientOK, len(inflight), unknown, accepted)
				}
				if !liveOK {
					t.Fatalf("seed %d: no acquisition after the heal at %v", seed, time.Duration(cfg.Duration))
				}
				sections += int(accepted)
			}
			t.Logf("%d seeds, %d accepted decrements in all", seeds, sections)
		})
	}
}

// historyOps converts a run's history to the checker's input.
func historyOps(h []sim.Event) []checker.Op {
	var ops []checker.Op
	for _, ev := range h {
		if ev.Op == "" {
			continue
		}
		op := checker.Op{T: ev.T, Proc: ev.Proc, Kind: ev.Kind, Op: ev.Op, OpID: ev.OpID, Until: ev.Until, Detail: ev.Detail}
		if ev.Op == event.OpAcquire {
			op.Mode = ev.Result // a read-write lock's shared hold
		}
		ops = append(ops, op)
	}
	return ops
}
