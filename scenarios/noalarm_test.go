package scenarios

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// The harness must not cry wolf: correct locks under random fault
// schedules (faults.Gen, schedules that outlast the safety phase included)
// never end in a liveness verdict, and under faults that only delay or
// hold messages (partitions, delay spikes, loss, node pauses) never show a
// lease overlap. A verdict that breaks either is a harness bug, or a
// documented property of the lock with a test of its own.

var noAlarmRuns = flag.Int("locksim.noalarm", 0,
	"total runs of TestNoFalseAlarms, split over its two properties and the correct locks (default 140, -short 42; e.g. 10000)")

// correctLocks are the designs that must raise no false alarm.
var correctLocks = []string{"set-nx-cad", "redlock", "redsync", "redislock", "fencing", "fencing-strict", "token-cas"}

// noAlarmWorld: 10 s of faults, 30 s of liveness; faults start in the
// first 8 s and last up to 30 s, so many outlast the safety phase.
var noAlarmParams = Params{Clients: 5, Duration: 10 * time.Second, Liveness: 30 * time.Second}

func TestNoFalseAlarms(t *testing.T) {
	total := *noAlarmRuns
	if total <= 0 {
		total = 140
		if testing.Short() {
			total = 42
		}
	}
	props := []struct {
		name  string
		kinds []faults.Kind
		check func(j *Judged) string // "" when the property holds
	}{
		{"live after the heal, any faults", nil, func(j *Judged) string {
			if j.Check.Verdict == checker.VerdictLiveness {
				return fmt.Sprintf("liveness verdict: %q", j.Check.Liveness.Reasons)
			}
			return ""
		}},
		{"no lease overlap under partitions, delay, loss and node pauses",
			[]faults.Kind{faults.Partition, faults.Delay, faults.Loss, faults.NodePause}, func(j *Judged) string {
				if j.Check.LeaseOverlaps > 0 {
					return fmt.Sprintf("%d lease overlaps, first %+v", j.Check.LeaseOverlaps, *j.Check.FirstOverlap)
				}
				if j.Check.Verdict == checker.VerdictLiveness {
					return fmt.Sprintf("liveness verdict: %q", j.Check.Liveness.Reasons)
				}
				return ""
			}},
	}
	per := max(1, (total+len(props)*len(correctLocks)-1)/(len(props)*len(correctLocks)))
	checks := per
	if testing.Short() {
		checks *= 5 // rapid divides -rapid.checks by 5 under -short
	}
	if fl := flag.Lookup("rapid.checks"); fl != nil {
		old := fl.Value.String()
		flag.Set("rapid.checks", strconv.Itoa(checks))
		defer flag.Set("rapid.checks", old)
	}
	var mu sync.Mutex
	verdicts := map[string]int{}
	runs := 0
	t.Run("group", func(t *testing.T) {
		for _, pr := range props {
			for _, id := range correctLocks {
				t.Run(pr.name+"/"+id, func(t *testing.T) {
					t.Parallel()
					info, err := locks.Get(id)
					if err != nil {
						t.Fatal(err)
					}
					base, err := World(info, 1, noAlarmParams)
					if err != nil {
						t.Fatal(err)
					}
					var clients, nodes []string
					for i := 0; i < base.Clients; i++ {
						clients = append(clients, fmt.Sprintf("c%d", i))
					}
					for _, n := range base.Nodes {
						nodes = append(nodes, n.Name)
					}
					gen := faults.Gen(faults.Bounds{Duration: noAlarmParams.Duration, Clients: clients, Nodes: append(nodes, "store"),
						Replicated: base.Topology.Replicated, MinFaults: 1, MaxFaults: 8, Kinds: pr.kinds})
					rapid.Check(t, func(rt *rapid.T) {
						seed := rapid.Uint64Range(1, 1<<32).Draw(rt, "seed")
						schedule := gen.Draw(rt, "faults")
						cfg, err := World(info, seed, noAlarmParams)
						if err != nil {
							rt.Fatal(err)
						}
						cfg.Faults = schedule
						j, err := RunChecked(sim.TestBubble(t), cfg, "no-false-alarms", info, checker.Options{})
						if err != nil {
							rt.Fatalf("seed %d: %v", seed, err) // an internal error (a broken heal invariant) is a harness bug
						}
						mu.Lock()
						runs++
						verdicts[pr.name+"/"+id+"/"+j.Check.Verdict]++
						mu.Unlock()
						if why := pr.check(j); why != "" {
							rt.Fatalf("%s, seed %d, faults %v: %s", id, seed, schedule, why)
						}
					})
				})
			}
		}
	})
	keys := make([]string, 0, len(verdicts))
	for k := range verdicts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t.Logf("%d runs (%d per property and lock); verdicts:", runs, per)
	for _, k := range keys {
		t.Logf("  %-90s %d", k, verdicts[k])
	}
}
