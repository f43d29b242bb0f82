package run

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/resource"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// The harness must be able to fail: every canary (locks/catalogue/canary.go)
// is caught, and correct locks under faults they tolerate show no violation.

var longRuns = flag.Bool("locksim.long", false,
	"run the zero-violation checks of correct locks over 2,000 seeds each (default 100, -short 10)")

// maxCanarySeeds bounds the seeds a canary may need before it is caught.
const maxCanarySeeds = 200

// canaryCase is a canary, the correct design it breaks, the violation its
// bug must show, and the faults it runs under.
type canaryCase struct {
	lock, correct string
	// kind is the violation the bug shows (checker.Violation kinds); op,
	// for ownership, the operation that broke it (release | renew).
	kind checker.Kind
	op   string
	// faults says which schedule runs, and why.
	faults   string
	params   scenarios.Params
	schedule func(t *testing.T, cfg *sim.Config, seed uint64) // nil: the scenario's random default mix
	// real: lock is a design of the catalogue the debate expects to break
	// under these faults, not a canary.
	real bool
}

var canaryCases = []canaryCase{
	{
		lock: "canary-no-owner-release", correct: "set-nx-cad", kind: "ownership", op: "release",
		faults: "the default mix: any pause or delay that outlives a 3 s lease makes the late holder's DEL remove the next holder's key",
	},
	{
		lock: "canary-redlock-half", correct: "redlock", kind: "lease-overlap",
		faults: "the default mix: partitions, crashes and latency jitter let two clients reach 2 of 5 nodes each",
	},
	{
		lock: "canary-redlock-no-elapsed", correct: "redlock", kind: "lease-overlap",
		faults: "a client-pause swarm (faults.Bounds.Kinds = client-pause), each pause aimed at the acquisition phase " +
			"(at \"acquiring\") of the third node of a round (two 1 ms pauses at the first two nodes, then the drawn one): " +
			"the bug only matters when a round stalls after a majority of keys was set, and the default mix almost never " +
			"stalls a round there (Redlock's 50 ms node timeout bounds every other delay, and its 102 ms drift allowance " +
			"absorbs two of them)",
		params:   scenarios.Params{Duration: 30 * time.Second, Liveness: 10 * time.Second},
		schedule: acquisitionStalls,
	},
	{
		// Not a canary: the debate's S14 on a real row. fencing follows
		// Kleppmann's rule (an equal token is accepted); fencing-strict
		// refuses a repeated token.
		lock: "fencing", correct: "fencing-strict", kind: "resource", real: true,
		faults: "a crash swarm (faults.Bounds.Kinds = crash) aimed at the lock's node, with everysec persistence: " +
			"a token repeats only when the counter goes back by less than the tokens issued since, i.e. a restart " +
			"from a snapshot up to 1 s old; the default mix draws crash 1 time in 8 and everysec 1 time in 3",
		params:   scenarios.Params{Duration: 30 * time.Second, Liveness: 10 * time.Second},
		schedule: everysecCrashes,
	},
	{
		lock: "canary-renew-no-owner", correct: "watchdog", kind: "ownership", op: "renew",
		faults: "a client-pause swarm (faults.Bounds.Kinds = client-pause) with every pause lengthened by the 30 s lease: " +
			"the watchdog renews every 10 s, so its key is lost only while its holder stops for longer than the lease, " +
			"and the swarm's pauses are at most 15 s",
		schedule: pausesBeyondLease(30 * time.Second),
	},
}

// TestCanariesCaught runs each canary under its faults, seeds 1..200, and
// stops at the first seed where the canary is unsafe with the violation its
// bug shows while the correct design, same seed and same schedule, shows
// none of that kind (the catch is the bug's, not the faults'). Seeds where
// the canary is unsafe otherwise are counted and logged. It fails if no
// seed catches it. -short runs the same loop: each canary is caught within
// its first 10 seeds, so there is nothing to cap.
func TestCanariesCaught(t *testing.T) {
	for _, c := range canaryCases {
		t.Run(c.lock, func(t *testing.T) {
			info, err := catalogue.Get(c.lock)
			if err != nil {
				t.Fatal(err)
			}
			if !info.Canary && !c.real {
				t.Fatalf("%s is not marked Info.Canary", c.lock)
			}
			correct, err := catalogue.Get(c.correct)
			if err != nil {
				t.Fatal(err)
			}
			b := sim.TestBubble(t)
			unsafe, otherKind, shared := 0, 0, 0
			for seed := uint64(1); seed <= maxCanarySeeds; seed++ {
				cfg := canaryConfig(t, c, c.lock, seed)
				j, err := runChecked(b, cfg, "default", info, checker.Options{})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				r := j.Check
				if r.Verdict != checker.VerdictUnsafe {
					continue
				}
				unsafe++
				if violationsOf(r, c.kind) == 0 || (c.op != "" && (r.FirstOwnershipViolation == nil || r.FirstOwnershipViolation.Op != c.op)) {
					otherKind++
					continue
				}
				ccfg := canaryConfig(t, c, c.correct, seed)
				if !reflect.DeepEqual(ccfg.Faults, cfg.Faults) {
					t.Fatalf("seed %d: %s and %s got different schedules", seed, c.lock, c.correct)
				}
				cj, err := runChecked(b, ccfg, "default", correct, checker.Options{})
				if err != nil {
					t.Fatalf("seed %d: %s: %v", seed, c.correct, err)
				}
				if violationsOf(cj.Check, c.kind) > 0 {
					shared++
					continue
				}
				t.Logf("faults: %s", c.faults)
				first := "none named"
				if r.First != nil {
					first = string(r.First.Kind) + ": " + r.First.Detail
				}
				t.Logf("caught at seed %d (%d faults): verdict %s, %d %s violations; first violation %s",
					seed, len(cfg.Faults), r.Verdict, violationsOf(r, c.kind), c.kind, first)
				t.Logf("%s, same seed and schedule: verdict %s, 0 %s violations", c.correct, cj.Check.Verdict, c.kind)
				t.Logf("before it: %d unsafe seeds without the bug's violation, %d where %s showed it too", otherKind, shared, c.correct)
				return
			}
			t.Fatalf("not caught in %d seeds (%d unsafe: %d without a %s violation, %d where %s showed it too)",
				maxCanarySeeds, unsafe, otherKind, c.kind, shared, c.correct)
		})
	}
}

func canaryConfig(t *testing.T, c canaryCase, lock string, seed uint64) sim.Config {
	t.Helper()
	cfg, err := scenarios.Build("default", lock, seed, c.params)
	if err != nil {
		t.Fatal(err)
	}
	if c.schedule != nil {
		c.schedule(t, &cfg, seed)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return cfg
}

// swarmOf draws a swarm of the given kinds over cfg's processes from the
// seed's "faults" stream (the one the default mix uses; the schedule
// replaces it).
func swarmOf(t *testing.T, cfg sim.Config, seed uint64, kinds []faults.Kind, lo, hi int) []faults.Fault {
	t.Helper()
	var nodes, clients []string
	for _, n := range cfg.Nodes {
		nodes = append(nodes, n.Name)
	}
	for i := 0; i < cfg.Clients; i++ {
		clients = append(clients, fmt.Sprintf("c%d", i))
	}
	fs, err := faults.Swarm(sim.NewStreams(seed).Get("faults"), faults.Bounds{Duration: cfg.Duration, Clients: clients,
		Nodes: append(nodes, resource.Name), Replicated: cfg.Topology.Replicated, MinFaults: lo, MaxFaults: hi, Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// acquisitionStalls: 10..20 swarm client pauses, each aimed at the third
// node of a Redlock round. A pause at a lock phase begins the next time
// the client reaches it; each reach consumes one armed pause, so two 1 ms
// pauses at "acquiring" take the first two nodes and the drawn pause the
// third.
func acquisitionStalls(t *testing.T, cfg *sim.Config, seed uint64) {
	var fs []faults.Fault
	for _, f := range swarmOf(t, *cfg, seed, []faults.Kind{faults.ClientPause}, 10, 20) {
		f.At = string(locks.PointAcquiring)
		tiny := f
		tiny.Duration = time.Millisecond
		fs = append(fs, tiny, tiny, f)
	}
	cfg.Faults = fs
}

// everysecCrashes: 10..20 swarm crashes of the lock's node, persisted
// every second.
func everysecCrashes(t *testing.T, cfg *sim.Config, seed uint64) {
	fs := swarmOf(t, *cfg, seed, []faults.Kind{faults.Crash}, 10, 20)
	for i := range fs {
		fs[i].Targets = []string{cfg.Nodes[0].Name}
	}
	cfg.Faults = fs
	cfg.Nodes[0].Persistence = sim.PersistEverysec
}

// pausesBeyondLease: 1..4 swarm client pauses, each lengthened by lease.
func pausesBeyondLease(lease time.Duration) func(*testing.T, *sim.Config, uint64) {
	return func(t *testing.T, cfg *sim.Config, seed uint64) {
		fs := swarmOf(t, *cfg, seed, []faults.Kind{faults.ClientPause}, 1, 4)
		for i := range fs {
			fs[i].Duration += lease
		}
		cfg.Faults = fs
	}
}

// correctSeeds is how many seeds the zero-violation checks run.
func correctSeeds() int {
	switch {
	case *longRuns:
		return 2000
	case testing.Short():
		return 10
	}
	return 100
}

// correctParams keep the zero-violation runs short: 3 clients, 20 s of
// faults, 5 s of liveness.
var correctParams = scenarios.Params{Clients: 3, Duration: 20 * time.Second, Liveness: 5 * time.Second}

// TestRedlockMinorityPartitions: Redlock keeps mutual exclusion (no lease
// overlap, no ownership violation, no resource violation, porcupine never
// illegal) under partitions that cut at most 2 of the 5 nodes from any
// client at any time, and nothing else: no pauses, no clock faults, no
// crashes. Schedules come from the seed (minorityPartitions).
func TestRedlockMinorityPartitions(t *testing.T) {
	info, err := catalogue.Get("redlock")
	if err != nil {
		t.Fatal(err)
	}
	b := sim.TestBubble(t)
	seeds := correctSeeds()
	verdicts := map[checker.Verdict]int{}
	parts := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		cfg, err := scenarios.Build("default", "redlock", seed, correctParams)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Faults = minorityPartitions(sim.NewStreams(seed).Get("faults"), cfg)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		parts += len(cfg.Faults)
		j, err := runChecked(b, cfg, "default", info, checker.Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		r := j.Check
		verdicts[r.Verdict]++
		if r.LeaseOverlaps > 0 || r.OwnershipViolations > 0 || r.ResourceViolations > 0 || r.Porcupine == checker.LinIllegal {
			t.Errorf("seed %d: %s under minority partitions %v: %v", seed, r.Verdict, cfg.Faults, r.Reasons)
		}
	}
	t.Logf("%d seeds, %d minority partitions: 0 violations; verdicts %v", seeds, parts, verdicts)
}

// minorityPartitions draws 1..8 partitions between a random set of clients
// and 1 or 2 random nodes (one-way 1 time in 4), 100 ms..20 s each, such
// that at any instant the nodes cut from any one client number at most 2:
// a draw that would cut a third node from some client while it overlaps
// another partition of that client is drawn again (at most 16 times, then
// left out).
func minorityPartitions(r *rand.Rand, cfg sim.Config) []faults.Fault {
	span := int64(cfg.Duration) * 8 / 10
	var out []faults.Fault
	n := 1 + r.IntN(8)
	for i := 0; i < n; i++ {
		for try := 0; try < 16; try++ {
			f := faults.Fault{Kind: faults.Partition, Start: time.Duration(r.Int64N(span)),
				Duration: 100*time.Millisecond + time.Duration(r.Int64N(int64(faults.SwarmMaxPartition-100*time.Millisecond))),
				OneWay:   r.IntN(4) == 0}
			for _, c := range r.Perm(cfg.Clients)[:1+r.IntN(cfg.Clients)] {
				f.From = append(f.From, fmt.Sprintf("c%d", c))
			}
			for _, nd := range r.Perm(len(cfg.Nodes))[:1+r.IntN(2)] {
				f.To = append(f.To, cfg.Nodes[nd].Name)
			}
			if r.IntN(2) == 0 {
				f.From, f.To = f.To, f.From // either direction matters for one-way cuts
			}
			if minority(append(out, f), len(cfg.Nodes)) {
				out = append(out, f)
				break
			}
		}
	}
	faults.Sort(out)
	return out
}

// minority reports whether no client is ever cut from more than 2 nodes,
// nor from a majority of n.
func minority(fs []faults.Fault, n int) bool {
	for _, f := range fs {
		// At f's start, the partitions active then.
		cut := map[string]map[string]bool{}
		for _, g := range fs {
			if g.Start > f.Start || g.End() <= f.Start {
				continue
			}
			clients, nodes := g.From, g.To
			if len(clients) == 0 || clients[0][0] != 'c' {
				clients, nodes = nodes, clients
			}
			for _, c := range clients {
				if cut[c] == nil {
					cut[c] = map[string]bool{}
				}
				for _, nd := range nodes {
					cut[c][nd] = true
				}
			}
		}
		for _, m := range cut {
			if len(m) > 2 || len(m) >= n/2+1 {
				return false
			}
		}
	}
	return true
}

// TestFencedResourceUnderPauses runs the fenced designs under client
// pauses only (a swarm restricted to client-pause; 1..6 pauses of up to
// 15 s, against 3 s leases). Lease overlaps are allowed: the resource's
// check is the claim.
//
//   - token-cas (antirez: the storage compare-and-sets on the owner the
//     writer read): zero resource violations, porcupine never illegal.
//   - fencing (Kleppmann: the storage rejects a token below the highest it
//     has seen, on writes and on reads, so an older holder cannot write
//     after a newer one read): zero resource violations, porcupine never
//     illegal. (Before reads were fenced, 39 of 2,000 seeds lost an update
//     this way: a paused holder's write landed between the next holder's
//     read and write.)
func TestFencedResourceUnderPauses(t *testing.T) {
	for _, id := range []string{"token-cas", "fencing"} {
		t.Run(id, func(t *testing.T) {
			info, err := catalogue.Get(id)
			if err != nil {
				t.Fatal(err)
			}
			b := sim.TestBubble(t)
			seeds := correctSeeds()
			verdicts := map[checker.Verdict]int{}
			overlaps := 0
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				cfg, err := scenarios.Build("default", id, seed, correctParams)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Faults = swarmOf(t, cfg, seed, []faults.Kind{faults.ClientPause}, 1, 6)
				j, err := runChecked(b, cfg, "default", info, checker.Options{})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				r := j.Check
				verdicts[r.Verdict]++
				if r.LeaseOverlaps > 0 {
					overlaps++
				}
				if r.ResourceViolations > 0 || r.Porcupine == checker.LinIllegal {
					t.Errorf("seed %d: %s under pauses %v: %v", seed, r.Verdict, cfg.Faults, r.Reasons)
				}
			}
			t.Logf("%d seeds under client pauses: verdicts %v; %d runs with lease overlaps (allowed)", seeds, verdicts, overlaps)
		})
	}
}

func ownerOf(detail string) string {
	_, owner, _ := strings.Cut(detail, "owner=")
	return owner
}
