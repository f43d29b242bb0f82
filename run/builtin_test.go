package run

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

var fullScenarios = flag.Bool("locksim.scenarios-full", false,
	"run every built-in scenario × lock over 50 seeds (default 10, -short 2)")

// TestBuiltinScenarios runs every built-in scenario file with every lock
// it lists, over several seeds, and compares the verdict the checkers
// MEASURE with the one the file expects (its agreed outcome, or the
// simulated one where the file records that the simulation contradicts the
// debate). Seeds: -short 2, default 10, -locksim.scenarios-full 50.
func TestBuiltinScenarios(t *testing.T) {
	seeds := 10
	switch {
	case *fullScenarios:
		seeds = 50
	case testing.Short():
		seeds = 2
	}
	var mu sync.Mutex
	var table []string
	for _, id := range scenarios.IDs() {
		s, _ := scenarios.Get(id)
		if s.File == nil {
			continue
		}
		for _, lockID := range s.File.Locks {
			exp := s.File.Expect[lockID]
			t.Run(id+"/"+lockID, func(t *testing.T) {
				t.Parallel()
				info, err := catalogue.Get(lockID)
				if err != nil {
					t.Fatal(err)
				}
				var tally Tally
				var runs []seedResult
				list := make([]uint64, 0, seeds+1)
				for seed := uint64(1); seed <= uint64(seeds); seed++ {
					list = append(list, seed)
				}
				if exp.Seed > uint64(seeds) {
					list = append(list, exp.Seed) // the file's seed that shows a rare outcome
				}
				for _, seed := range list {
					cfg, err := scenarios.Build(id, lockID, seed, scenarios.Params{})
					if err != nil {
						t.Fatalf("seed %d: build: %v", seed, err)
					}
					j, err := runChecked(sim.TestBubble(t), cfg, id, info, checker.Options{})
					if err != nil {
						t.Fatalf("seed %d: run: %v", seed, err)
					}
					tally.Add(OutcomeOf(j), seed)
					runs = append(runs, seedResult{seed, j.Check.Verdict, j.Check.Reasons})
				}
				got := tally.Verdict() // the cell rule
				counts := fmt.Sprintf("(%d safe, %d unsafe, %d liveness, %d unknown)", tally.Safe(), tally.Unsafe, tally.Liveness, tally.Unknown)
				line := fmt.Sprintf("%-22s %-16s want %-8s measured %-8s %s", id, lockID, exp.Want(), got, counts)
				if exp.Simulated != "" {
					line += fmt.Sprintf(" (debate: %s; recorded contradiction)", exp.Agreed)
				}
				mu.Lock()
				table = append(table, line)
				mu.Unlock()
				t.Log(line)
				if string(got) == exp.Want() {
					return
				}
				var b strings.Builder
				fmt.Fprintf(&b, "%s × %s: measured %s over %d seeds %s, the file expects %s", id, lockID, got, seeds, counts, exp.Want())
				for _, r := range runs {
					if string(r.verdict) == exp.Want() {
						continue
					}
					fmt.Fprintf(&b, "\n  seed %d: %s (repro: locksim run --scenario %s --lock %s --seed %d)", r.seed, r.verdict, id, lockID, r.seed)
					for _, why := range r.reasons {
						fmt.Fprintf(&b, "\n    %s", why)
					}
				}
				t.Error(b.String())
			})
		}
	}
	t.Cleanup(func() {
		slices.Sort(table)
		t.Logf("catalogue, %d seeds per cell:\n%s", seeds, strings.Join(table, "\n"))
	})
}

// TestBuiltinDeterministic: every built-in scenario file gives the same
// trace twice, with the first lock it lists (set-nx-cad for a file that
// lists none), and the few pairs named below (targeted pauses, TTL
// multiples, repeated faults, partitions, clock jumps, crashes timed by a
// node's clock).
func TestBuiltinDeterministic(t *testing.T) {
	cases := []struct{ scenario, lock string }{{"clock-jump", "redlock"}, {"failover-wait", "primary-replica"}, {"delayed-restart-jump", "redlock"}}
	for _, id := range scenarios.IDs() {
		s, _ := scenarios.Get(id)
		if s.File == nil {
			continue
		}
		lock := "set-nx-cad"
		if len(s.File.Locks) > 0 {
			lock = s.File.Locks[0]
		}
		cases = append(cases, struct{ scenario, lock string }{id, lock})
	}
	for _, c := range cases {
		var hashes []string
		for range 2 {
			cfg, err := scenarios.Build(c.scenario, c.lock, 3, scenarios.Params{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(sim.TestBubble(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			hashes = append(hashes, res.TraceSHA256)
		}
		if hashes[0] != hashes[1] {
			t.Errorf("%s × %s seed 3: trace hashes differ: %s, %s", c.scenario, c.lock, hashes[0], hashes[1])
		}
	}
}

// seedResult is one run's verdict and why.
type seedResult struct {
	seed    uint64
	verdict checker.Verdict
	reasons []string
}
