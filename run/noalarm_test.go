package run

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// The harness must not cry wolf: correct locks under random fault
// schedules (faults.Gen, about half the faults armed at the clients'
// points as locktest arms them, schedules
// that outlast the safety phase included)
// never end in a liveness verdict, and under faults that only delay or
// hold messages (partitions, delay spikes, loss, node pauses) never show a
// lease overlap; the other designs that expire their keys (liveLocks) are
// held to the first property. A verdict that breaks either is a harness bug, or a
// documented property of the lock with a test of its own.

var noAlarmRuns = flag.Int("locksim.noalarm", 0,
	"total runs of TestNoFalseAlarms, split over its properties and their locks (default 140, -short 42, rapid's seed pinned to 1 unless -rapid.seed is set; e.g. 10000, with a new seed each run)")

// correctLocks are the designs that must raise no false alarm.
var correctLocks = []string{"set-nx-cad", "spin-retry", "redisson-lock", "redlock", "redsync", "redislock", "fencing", "fencing-strict", "token-cas"}

// liveLocks must also be live after the heal under any faults, though a
// lease overlap under delay alone is a known weakness of theirs (a plain
// DEL, GET then DEL, a replica's lag) or not what they claim. Left out:
// setnx-del and setnx-expire (a key without an expiry outlives a lost
// release: their documented deadlock) and go-zero (behind a build tag).
var liveLocks = []string{"redisson-fair", "redisson-rw", "redisson-multilock", "watchdog", "zk-lock", "zk-fencing",
	"getset-expiry", "gocron", "primary-replica", "version-cas", "set-nx-del", "set-nx-getdel"}

// countsHolds are the designs whose key counts a holder's reentrant holds
// (Redisson's hash, field uuid:threadId): a crash can bring back a count
// its holder already released (phantomHold).
var countsHolds = map[string]bool{"redisson-lock": true, "redisson-fair": true}

// stampsExpiry are the designs whose key holds an expiry read from the
// writer's clock and written by a GETSET that need not win (“Practice: a Redis lock” (Tencent Cloud)'s
// GETSET scheme): a GETSET that lands just after the holder's DEL leaves
// a key nobody holds (strandedExpiry).
var stampsExpiry = map[string]bool{"getset-expiry": true}

// noAlarmWorld: 10 s of faults, 30 s of liveness; faults start in the
// first 8 s and last up to 30 s, so many outlast the safety phase.
var noAlarmParams = scenarios.Params{Clients: 5, Duration: 10 * time.Second, Liveness: 30 * time.Second}

func TestNoFalseAlarms(t *testing.T) {
	total := *noAlarmRuns
	if total <= 0 {
		total = 140
		if testing.Short() {
			total = 42
		}
	}
	var mu sync.Mutex
	documented := map[string]int{}
	props := []struct {
		name  string
		kinds []faults.Kind
		check func(j *Judged) string // "" when the property holds
	}{
		{"live after the heal, any faults", nil, func(j *Judged) string {
			if j.Check.Verdict == checker.VerdictLiveness {
				if _, ok := phantomHold(j); ok && countsHolds[j.Job.Lock.ID] {
					mu.Lock()
					documented[j.Job.Lock.ID+" (phantom hold)"]++
					mu.Unlock()
					return ""
				}
				if _, ok := strandedExpiry(j); ok && stampsExpiry[j.Job.Lock.ID] {
					mu.Lock()
					documented[j.Job.Lock.ID+" (stranded expiry)"]++
					mu.Unlock()
					return ""
				}
				return fmt.Sprintf("liveness verdict: %q", j.Check.Liveness.Reasons)
			}
			return ""
		}},
		{"no lease overlap under partitions, delay, loss and node pauses",
			[]faults.Kind{faults.Partition, faults.Delay, faults.Loss, faults.NodePause}, func(j *Judged) string {
				if j.Check.LeaseOverlaps > 0 {
					if why, ok := staleSelfRelease(j); ok && reusesValue[j.Job.Lock.ID] {
						mu.Lock()
						documented[j.Job.Lock.ID]++
						mu.Unlock()
						_ = why
						return ""
					}
					return fmt.Sprintf("%d lease overlaps, first %+v", j.Check.LeaseOverlaps, *j.Check.FirstOverlap)
				}
				if j.Check.Verdict == checker.VerdictLiveness {
					return fmt.Sprintf("liveness verdict: %q", j.Check.Liveness.Reasons)
				}
				return ""
			}},
	}
	lockRuns := len(props)*len(correctLocks) + len(liveLocks)
	per := max(1, (total+lockRuns-1)/lockRuns)
	checks := per
	if testing.Short() {
		checks *= 5 // rapid divides -rapid.checks by 5 under -short
	}
	set := func(name, v string) {
		if fl := flag.Lookup(name); fl != nil {
			old := fl.Value.String()
			flag.Set(name, v)
			t.Cleanup(func() { flag.Set(name, old) })
		}
	}
	set("rapid.checks", strconv.Itoa(checks))
	if *noAlarmRuns <= 0 && flag.Lookup("rapid.seed").Value.String() == "0" {
		// The suite's own run (go test, CI) draws the same schedules every
		// time: a finding there is reproducible and never a coin toss on a
		// fresh clone. -locksim.noalarm=N explores with a new seed each run.
		set("rapid.seed", "1")
	}
	verdicts := map[string]int{}
	runs := 0
	t.Run("group", func(t *testing.T) {
		for i, pr := range props {
			ids := correctLocks
			if i == 0 {
				ids = append(slices.Clone(correctLocks), liveLocks...)
			}
			for _, id := range ids {
				t.Run(pr.name+"/"+id, func(t *testing.T) {
					t.Parallel()
					info, err := catalogue.Get(id)
					if err != nil {
						t.Fatal(err)
					}
					base, err := scenarios.World(info, 1, noAlarmParams)
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
					// Armed as locktest's searches arm them (a lock that
					// never renews leaves "renewing" unfired).
					gen := faults.Gen(faults.Bounds{Duration: noAlarmParams.Duration, Clients: clients, Nodes: append(nodes, "store"),
						Replicated: base.Topology.Replicated, MinFaults: 1, MaxFaults: 8, Kinds: pr.kinds,
						ArmPoints: []string{"acquire", "releasing", "renewing"}})
					rapid.Check(t, func(rt *rapid.T) {
						seed := rapid.Uint64Range(1, 1<<32).Draw(rt, "seed")
						schedule := gen.Draw(rt, "faults")
						cfg, err := scenarios.World(info, seed, noAlarmParams)
						if err != nil {
							rt.Fatal(err)
						}
						cfg.Faults = schedule
						// staleSelfRelease, phantomHold and strandedExpiry read the nodes' commands.
						cfg.HistoryCommands = pr.kinds != nil || countsHolds[id] || stampsExpiry[id]
						j, err := runChecked(sim.TestBubble(t), cfg, "no-false-alarms", info, checker.Options{})
						if err != nil {
							rt.Fatalf("seed %d: %v", seed, err) // an internal error (a broken heal invariant) is a harness bug
						}
						why := pr.check(j)
						mu.Lock()
						runs++
						verdicts[pr.name+"/"+id+"/"+string(j.Check.Verdict)]++
						mu.Unlock()
						if why != "" {
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
	t.Logf("%d runs (%d per property and lock); explained by a stale self-release (TestStaleSelfRelease), a phantom hold (TestPhantomHold) or a stranded expiry (TestStrandedExpiry): %v; verdicts:", runs, per, documented)
	for _, k := range keys {
		t.Logf("  %-90s %d", k, verdicts[k])
	}
}

// reusesValue are the designs whose release of one hold carries the same
// value as a later hold of the same client, so that a release delayed in
// the network can delete the later hold's keys (staleSelfRelease):
// Redlock's rounds of one acquisition share one random value and a failed
// round is released with it; Redisson's holder field is uuid:threadId for
// every acquisition of the thread, and its unlock (Redisson 3.16's, as the
// seeds show it) is not idempotent, so a copy of an unlock that go-redis
// sent again after a read timeout lands after the thread locked again.
var reusesValue = map[string]bool{"redlock": true, "redsync": true, "redisson-lock": true}

// selfReleaseCmd classifies a node's command (lower-cased) that carries
// value: set, it (re)took the key for value; del, it deleted the key of
// value. Redlock's SET NX PX and delete-if-value script; Redisson's
// acquire script (nil: held) and unlock script (1: count 0, deleted),
// told apart from its renewal script by their texts' lengths.
func selfReleaseCmd(cmd, reply, value string) (set, del bool) {
	script := func(s string) string { return fmt.Sprintf("eval <script %d bytes> ", len(s)) }
	switch {
	case strings.HasPrefix(cmd, "set ") && strings.Contains(cmd, " "+strings.ToLower(value)+" "):
		return reply == "+OK", false
	case !strings.HasSuffix(cmd, " "+strings.ToLower(value)):
		return false, false
	case strings.HasPrefix(cmd, script(catalogue.RedissonLockScript)):
		return reply == "$-1", false
	case strings.HasPrefix(cmd, script(catalogue.RedissonUnlockScript)):
		return false, reply == ":1"
	case strings.HasPrefix(cmd, script(catalogue.RedissonRenewScript)):
		return false, false
	case strings.HasPrefix(cmd, "eval"):
		return false, reply == ":1"
	}
	return false, false
}

// staleSelfRelease explains a run's first lease overlap by the mechanism
// TestStaleSelfRelease shows: before the second holder acquired, on some
// node the first holder's key (its SET of its current value, +OK, or
// Redisson's acquire script) was deleted by a command of that same holder
// carrying that value, while no release of its own was under way and no
// later SET put the key back: a release delayed in the network, of an
// earlier failed round of the same acquisition (Redlock: the rounds share
// one value) or a copy of an earlier hold's unlock (Redisson: every hold of
// the thread has one value). It needs the nodes' commands in the history
// (sim.Config.HistoryCommands).
func staleSelfRelease(j *Judged) (string, bool) {
	ov := j.Check.FirstOverlap
	if ov == nil {
		return "", false
	}
	for _, holder := range []string{ov.A, ov.B} {
		// The value of the holder's acquisition in force at the overlap.
		value := ""
		for _, e := range j.Result.History {
			if e.T > ov.Start {
				break
			}
			if e.Proc == holder && e.Op == event.OpAcquire && e.Kind == event.KindOK {
				value = e.Detail
			}
		}
		if value == "" {
			continue
		}
		type nodeState struct {
			set     bool  // the holder's SET of value succeeded here
			deleted int64 // and a later command of its own deleted it (0: not)
		}
		nodes := map[string]*nodeState{}
		releasing := false
		for _, e := range j.Result.History {
			if e.T >= ov.Start {
				break
			}
			switch {
			case e.Proc == holder && e.Op == event.OpRelease && e.Kind == event.KindCall:
				releasing = e.Detail == value
			case e.Proc == holder && e.Op == event.OpRelease:
				releasing = false
			case e.Kind == event.KindCmd && e.Peer == holder:
				cmd := strings.ToLower(e.Cmd)
				ns := nodes[e.Proc]
				if ns == nil {
					ns = &nodeState{}
					nodes[e.Proc] = ns
				}
				set, del := selfReleaseCmd(cmd, e.Reply, value)
				switch {
				case set:
					ns.set, ns.deleted = true, 0
				case ns.set && !releasing && del:
					ns.deleted = e.T
				}
			}
		}
		for _, n := range slices.Sorted(maps.Keys(nodes)) {
			if t := nodes[n].deleted; t > 0 {
				return fmt.Sprintf("%s's own delete of its key (value %s) reached %s at t=%v, after its SET there and with no release of its own under way; %s acquired at t=%v",
					holder, value, n, time.Duration(t), ov.B, time.Duration(ov.Start)), true
			}
		}
	}
	return "", false
}

// A Redlock round that fails is released with the acquisition's random
// value, and the next round reuses that value (redis.io's algorithm as
// redsync and our redlock implement it): a release delayed in the network
// (here on another connection than the next round's SETs) arrives after
// the next round succeeded and deletes the holder's keys on a majority,
// so a second client acquires while the first still believes. Found by
// TestNoFalseAlarms under delay and loss alone (redsync, seed 1, the
// shrunk schedule below); a documented property of value-reusing designs,
// not a harness error.
func TestStaleSelfRelease(t *testing.T) {
	everyone := []string{"c0", "c1", "c2", "c3", "c4", "n0", "n1", "n2", "n3", "n4", "store"}
	others := func(except ...string) []string {
		var out []string
		for _, n := range everyone {
			if !slices.Contains(except, n) {
				out = append(out, n)
			}
		}
		return out
	}
	cases := []struct {
		lock   string
		seed   uint64
		faults []faults.Fault
		// retried: the overlap needs go-redis's retry of a command whose
		// reply timed out (it is gone with MaxRetries -1).
		retried bool
	}{
		// The release of c0's failed round is held by a delay spike and
		// lands after its next round succeeded.
		{"redsync", 1, []faults.Fault{
			{Kind: faults.NodePause, Start: 800 * time.Millisecond, Duration: 1000030, Targets: []string{"n1"}},
			{Kind: faults.Loss, Start: 800000001, Duration: 10 * time.Millisecond, From: []string{"n0"}, To: others("n0"), OneWay: true, LossProb: 0.020193094111164434},
			{Kind: faults.Delay, Start: 1600000004, Duration: 10000008, From: []string{"n4", "c4", "c1"}, To: others("n4", "c4", "c1"), OneWay: true, Delay: 10000020},
			{Kind: faults.NodePause, Start: 2400000194, Duration: 100000599, Targets: []string{"n3"}},
			{Kind: faults.Partition, Start: 2401155640, Duration: 1000000637, From: []string{"c3", "c0", "store", "c2"}, To: []string{"c1", "c4", "n0", "n1", "n2", "n3", "n4"}, OneWay: true},
			{Kind: faults.Delay, Start: 5600 * time.Millisecond, Duration: 100000014, From: []string{"c0", "n4"}, To: others("c0", "n4"), OneWay: true, Delay: 1000028312},
			{Kind: faults.Loss, Start: 6400 * time.Millisecond, Duration: 49786358, From: []string{"c0"}, To: others("c0"), OneWay: true, LossProb: 1},
			{Kind: faults.Loss, Start: 7200000227, Duration: 10 * time.Millisecond, From: []string{"c4"}, To: others("c4"), OneWay: true, LossProb: 0.011482477188110352},
		}, false},
		// The delayed release lands while the next round still waits for a
		// paused node: the round then succeeds on keys already deleted.
		{"redsync", 1980, []faults.Fault{
			{Kind: faults.NodePause, Start: 0, Duration: time.Millisecond, Targets: []string{"n3"}},
			{Kind: faults.Delay, Start: 800000001, Duration: 1268484, From: []string{"c3", "n0"}, To: others("c3", "n0"), OneWay: true, Delay: 1000000003},
			{Kind: faults.NodePause, Start: 800003794, Duration: 1000003062, Targets: []string{"n0"}},
		}, false},
		// Redisson: c2's unlock, sent at 2.9 s into a 1 s delay spike,
		// times out after 500 ms; go-redis sends it again on a new
		// connection (+OK: deleted), c2 locks again at 3.5 s with the same
		// holder field, and the first copy lands at 3.9 s and deletes that
		// hold; c0 takes the free key. Found by TestNoFalseAlarms (seed 22,
		// shrunk to this one fault; README runs it from this file).
		{"redisson-lock", 22, mustReadFaults(t, "../examples/faults/redisson-stale-unlock.json"), true},
		// Our redlock (redis.io's algorithm) has the same weakness.
		{"redlock", 60144622, []faults.Fault{
			{Kind: faults.Loss, Start: 1516577, Duration: 1000037936, From: []string{"n3", "c1", "c2"}, To: []string{"c0", "c3", "c4", "n0", "n1", "n2", "n4", "store"}, LossProb: 0.23883056640625},
			{Kind: faults.Delay, Start: 14520232, Duration: time.Millisecond, From: []string{"c4"}, To: others("c4"), OneWay: true, Delay: 1001104079},
			{Kind: faults.Loss, Start: 800000001, Duration: 1000000008, From: []string{"c0"}, To: others("c0"), LossProb: 1},
			{Kind: faults.Loss, Start: 800000142, Duration: 125845596, From: []string{"c0"}, To: others("c0"), OneWay: true, LossProb: 0.013807661913398056},
			{Kind: faults.NodePause, Start: 1600000001, Duration: 10 * time.Millisecond, Targets: []string{"n1"}},
			{Kind: faults.Partition, Start: 5600000007, Duration: 10000000018, From: []string{"c4"}, To: others("c4"), OneWay: true},
			{Kind: faults.Partition, Start: 7200 * time.Millisecond, Duration: time.Millisecond, From: []string{"n1"}, To: others("n1")},
		}, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/seed %d", c.lock, c.seed), func(t *testing.T) {
			info, err := catalogue.Get(c.lock)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := scenarios.World(info, c.seed, noAlarmParams)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Faults = c.faults
			cfg.HistoryCommands = true
			j, err := runChecked(sim.TestBubble(t), cfg, "stale-self-release", info, checker.Options{SkipPorcupine: true})
			if err != nil {
				t.Fatal(err)
			}
			if j.Check.LeaseOverlaps == 0 {
				t.Fatalf("the schedule no longer gives an overlap: %q", j.Check.Reasons)
			}
			why, ok := staleSelfRelease(j)
			if !ok {
				t.Fatalf("the overlap %+v is not explained by a stale self-release: %q", *j.Check.FirstOverlap, j.Check.Reasons)
			}
			t.Logf("%s: %s", why, j.Check.Reasons[0])
			if !c.retried {
				return
			}
			cfg.Redis.MaxRetries = -1
			j, err = runChecked(sim.TestBubble(t), cfg, "stale-self-release", info, checker.Options{SkipPorcupine: true})
			if err != nil {
				t.Fatal(err)
			}
			if j.Check.LeaseOverlaps != 0 {
				t.Fatalf("without go-redis's retries the overlap stays, so the retry is not its cause: %q", j.Check.Reasons)
			}
		})
	}
}

func mustReadFaults(t *testing.T, path string) []faults.Fault {
	t.Helper()
	fs, err := ReadFaults(path)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// phantomHold explains a run's liveness verdict by a hold its holder
// believes it gave up: a release of a design that counts reentrant holds
// replied 0 (the count is still above 0: still held), though no client
// here takes the lock it holds again. An earlier release did not take: it
// failed while the node was down (the holder moved on), or the node lost
// it in a crash (appendfsync everysec restarts with the keyspace of up to
// a second before). The holder's next acquisition re-enters the hold
// (count 2), its release leaves count 1 with a fresh lease and no
// watchdog, and a holder that comes back within the lease re-enters
// again: the others wait behind a hold that never ends. It needs the
// nodes' commands in the history.
func phantomHold(j *Judged) (string, bool) {
	script := func(s string) string { return fmt.Sprintf("eval <script %d bytes> ", len(s)) }
	for _, e := range j.Result.History {
		if e.Kind == event.KindCmd && e.Reply == ":0" &&
			(strings.HasPrefix(e.Cmd, script(catalogue.RedissonUnlockScript)) || strings.HasPrefix(e.Cmd, script(catalogue.RedissonFairUnlockScript))) {
			return fmt.Sprintf("%s's release on %s at t=%v left its hold counted (reply 0: still held)", e.Peer, e.Proc, time.Duration(e.T)), true
		}
	}
	return "", false
}

// A phantom hold (phantomHold), found by TestNoFalseAlarms over
// redisson-fair: n0 crashes at 2.4 s and is back at the heal (10 s). With
// appendfsync everysec it comes back with c3's hold of a moment before the
// crash, which c3 had released; with appendfsync always, with c0's hold,
// whose release failed while n0 was down. Either holder re-enters its hold
// at each acquisition, and the four others, queued behind it, never get
// the lock in the 30 s after the heal: a fair lock promises better, so a
// liveness failure, and a real one (Redisson's unlock replies 0, still
// held, without an error). redisson-lock starves four clients the same
// way, a fairness figure only (it promises no fairness). Without the crash
// nothing is left counted.
func TestPhantomHold(t *testing.T) {
	crash := []faults.Fault{{Kind: faults.Crash, Start: 2400 * time.Millisecond, Duration: 10 * time.Second, Targets: []string{"n0"}}}
	for _, c := range []struct {
		lock    string
		persist sim.Persistence
		faults  []faults.Fault
		want    checker.Verdict
	}{
		{"redisson-fair", sim.PersistEverysec, crash, checker.VerdictLiveness},
		{"redisson-fair", sim.PersistAlways, crash, checker.VerdictLiveness},
		{"redisson-lock", sim.PersistEverysec, crash, checker.VerdictSafe},
		{"redisson-fair", sim.PersistEverysec, nil, checker.VerdictSafe},
	} {
		t.Run(fmt.Sprintf("%s/%s/%d faults", c.lock, c.persist, len(c.faults)), func(t *testing.T) {
			info, err := catalogue.Get(c.lock)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := scenarios.World(info, 1, noAlarmParams)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Faults = c.faults
			cfg.HistoryCommands = true
			for i := range cfg.Nodes {
				cfg.Nodes[i].Persistence = c.persist
			}
			j, err := runChecked(sim.TestBubble(t), cfg, "phantom-hold", info, checker.Options{SkipPorcupine: true})
			if err != nil {
				t.Fatal(err)
			}
			if j.Check.Verdict != c.want {
				t.Fatalf("verdict %s, want %s: %q", j.Check.Verdict, c.want, j.Check.Reasons)
			}
			why, ok := phantomHold(j)
			if ok != (c.faults != nil) {
				t.Fatalf("phantom hold found: %v (%s), want it only after the crash", ok, why)
			}
			if c.faults != nil && len(j.Check.Liveness.Starved) == 0 {
				t.Fatal("nobody starved: the phantom hold held no one back")
			}
			t.Logf("%s: %s", why, strings.Join(j.Check.Reasons, "; "))
		})
	}
}

// The classifier explains nothing else: Redlock's overlaps under a node's
// clock jump (S3), Redisson's under a node's clock jump and
// under a restart that loses its key are not stale self-releases.
func TestStaleSelfReleaseNotOtherOverlaps(t *testing.T) {
	for _, c := range []struct{ scenario, lock string }{
		{"clock-jump", "redlock"},
		{"clock-jump", "redisson-lock"},
		{"restart-no-persistence", "redisson-lock"},
	} {
		t.Run(c.scenario+"/"+c.lock, func(t *testing.T) {
			info, err := catalogue.Get(c.lock)
			if err != nil {
				t.Fatal(err)
			}
			for seed := uint64(1); seed <= 3; seed++ {
				cfg, err := scenarios.Build(c.scenario, c.lock, seed, scenarios.Params{})
				if err != nil {
					t.Fatal(err)
				}
				cfg.HistoryCommands = true
				j, err := runChecked(sim.TestBubble(t), cfg, c.scenario, info, checker.Options{SkipPorcupine: true})
				if err != nil {
					t.Fatal(err)
				}
				if j.Check.LeaseOverlaps == 0 {
					continue
				}
				if why, ok := staleSelfRelease(j); ok {
					t.Fatalf("seed %d: a %s overlap classified as a stale self-release: %s", seed, c.scenario, why)
				}
				return
			}
			t.Fatalf("no %s overlap in seeds 1..3 to test against", c.scenario)
		})
	}
}

// bubbleEpoch is true time 0 on the wall clocks that clients read: a
// testing/synctest bubble's clock starts at midnight UTC, 2000-01-01.
var bubbleEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// strandedExpiry explains getset-expiry's liveness verdict by a key
// nobody holds and nobody will delete: the last write to the lock's key
// in the run is a GETSET that found the key just deleted (reply nil: its
// writer read the holder's expired value, then the holder's DEL landed
// first). The seed's GETSET recreates the key with the writer's expiry
// and no TTL (PEXPIRE follows a win only), and its writer does not hold
// the lock (a nil reply throws), so no DEL follows. The others see the
// key held until that expiry passes on their own clocks; it explains
// the verdict only when that expiry lies past the run's end on every
// client's clock. A writer whose clock is ahead by J stamps J + 10 s; a
// synchronised one stamps 10 s, shorter than the liveness phase.
func strandedExpiry(j *Judged) (string, bool) {
	key := ""
	var last *sim.Event
	for i := range j.Result.History {
		e := &j.Result.History[i]
		f := strings.Fields(e.Cmd)
		if e.Kind != event.KindCmd || len(f) < 2 {
			continue
		}
		switch f[0] {
		case "setnx", "getset", "del", "set", "pexpire", "expire":
		default:
			continue
		}
		if key == "" && f[0] == "setnx" {
			key = f[1]
		}
		if f[1] != key || (f[0] == "setnx" && e.Reply != ":1") || (f[0] == "del" && e.Reply == ":0") {
			continue // not the lock's key, or it changed nothing
		}
		last = e
	}
	if last == nil || last.Reply != "$-1" {
		return "", false
	}
	f := strings.Fields(last.Cmd)
	if f[0] != "getset" || len(f) != 3 {
		return "", false
	}
	ms, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return "", false
	}
	at := time.UnixMilli(ms).Sub(bubbleEpoch) // the stamped expiry, as true time on a clock without offset
	cfg := j.Job.Config
	end := cfg.Duration + cfg.Liveness
	for i := 0; i < cfg.Clients; i++ {
		if at-cfg.ClientClockOffset(i) <= end {
			return "", false // some client sees it expire within the run
		}
	}
	return fmt.Sprintf("%s's GETSET on %s at t=%v found the key just deleted (reply nil) and left it stamped with its expiry, t=%v, past the run's end (%v), with no TTL and no holder",
		last.Peer, last.Proc, time.Duration(last.T), at, end), true
}

// A stranded expiry (strandedExpiry), found by TestNoFalseAlarms over
// getset-expiry: c1's clock jumps 30 s ahead at 1 s; it reads c3's
// expiry (t=10.545 s), finds it passed on its clock and sends GETSET
// with its own, t=41.045 s; c3's DEL lands 62 µs before it. The key
// now says t=41.045 s with no TTL and no holder, and the run ends at
// 40 s: nobody acquires after 0.548 s. Without the jump, the same seed
// is safe and live.
func TestStrandedExpiry(t *testing.T) {
	jump := func(d time.Duration) []faults.Fault {
		return []faults.Fault{{Kind: faults.ClockJump, Start: 999835526, Targets: []string{"c1"}, Jump: d}}
	}
	for _, c := range []struct {
		faults   []faults.Fault
		want     checker.Verdict
		stranded bool
	}{
		{jump(30 * time.Second), checker.VerdictLiveness, true},
		// The same race with a 15 s jump stamps t=26.045 s: the others
		// wait until then, and take the lock again within the run.
		{jump(15 * time.Second), checker.VerdictSafe, false},
		{nil, checker.VerdictSafe, false},
	} {
		t.Run(fmt.Sprint(c.faults), func(t *testing.T) {
			info, err := catalogue.Get("getset-expiry")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := scenarios.World(info, 2690880, noAlarmParams)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Faults = c.faults
			cfg.HistoryCommands = true
			j, err := runChecked(sim.TestBubble(t), cfg, "stranded-expiry", info, checker.Options{SkipPorcupine: true})
			if err != nil {
				t.Fatal(err)
			}
			if j.Check.Verdict != c.want {
				t.Fatalf("verdict %s, want %s: %q", j.Check.Verdict, c.want, j.Check.Reasons)
			}
			why, ok := strandedExpiry(j)
			if ok != c.stranded {
				t.Fatalf("stranded expiry found: %v (%s), want %v", ok, why, c.stranded)
			}
			t.Logf("%s: %s", why, strings.Join(j.Check.Reasons, "; "))
		})
	}
}
