package run

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

var updateCause = flag.Bool("locksim.update-cause", false, "rewrite testdata/cause.golden from the runs")

// userLock is a lock as a user writes it: SET NX PX, released
// by compare-and-delete. factoryValue draws its value once, in the
// factory, so every hold of a client has the same value; ttlUnit is the
// unit its TTL is passed in (time.Millisecond for the right one: the TTL
// in ms; a wrong one makes "3 s" a 3 ms key while the holder believes 3 s).
type userLock struct {
	env   locks.Env
	value string
	ttl   time.Duration
}

var cad = redis.NewScript(catalogue.CompareAndDelete)

func userInfo(id string, factoryValue bool, ttlUnit time.Duration) locks.Info {
	const ttl = 3 * time.Second
	return locks.Info{ID: id, Design: "a user's SET NX PX lock", Source: "a user's own code", Topology: locks.Single, TTL: ttl,
		New: func(env locks.Env) (locks.Lock, error) {
			l := &userLock{env: env, ttl: time.Duration(ttl.Milliseconds()) * ttlUnit}
			if factoryValue {
				l.value = fmt.Sprintf("%016x", env.Rand.Uint64())
			}
			return l, nil
		}}
}

func (l *userLock) Acquire(ctx context.Context) (locks.Lease, error) {
	v := l.value
	if v == "" {
		v = fmt.Sprintf("%016x", l.env.Rand.Uint64())
	}
	start := l.env.Clock.Now()
	ok, err := l.env.Primary.SetNX(ctx, l.env.Key, v, l.ttl).Result()
	if err != nil {
		return locks.Lease{}, err
	}
	if !ok {
		return locks.Lease{}, locks.ErrNotAcquired
	}
	return locks.Lease{Value: v, Start: start, ValidUntil: start.Add(3 * time.Second)}, nil
}

func (l *userLock) Release(ctx context.Context, lease locks.Lease) error {
	n, err := cad.Run(ctx, l.env.Primary, []string{l.env.Key}, lease.Value).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return locks.ErrNotOwner
	}
	return nil
}

// causeCase is one bug run in the simulator whose first violation's
// cause is pinned: the run, and a phrase the cause must hold whatever
// else its wording becomes.
type causeCase struct {
	name, want string
	run        func(t *testing.T) *Judged
}

// scenarioRun runs a built-in scenario's cell.
func scenarioRun(scenario, lock string, seed uint64) func(t *testing.T) *Judged {
	return func(t *testing.T) *Judged {
		info, err := catalogue.Get(lock)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := scenarios.Build(scenario, lock, seed, scenarios.Params{})
		if err != nil {
			t.Fatal(err)
		}
		j, err := runChecked(sim.TestBubble(t), cfg, scenario, info, checker.Options{SkipPorcupine: true})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
}

// worldRun runs lock info in the default world with schedule fs.
func worldRun(info locks.Info, seed uint64, p scenarios.Params, fs ...faults.Fault) func(t *testing.T) *Judged {
	return func(t *testing.T) *Judged {
		cfg, err := scenarios.World(info, seed, p)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Faults = fs
		j, err := runChecked(sim.TestBubble(t), cfg, "default", info, checker.Options{SkipPorcupine: true})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
}

var causeCases = []causeCase{
	// Issue 34's reference lock: the value drawn once in the factory. c0's
	// compare-and-delete, sent into a 1 s delay spike, times out; go-redis
	// sends it again after the spike (deleted: ok), c0 locks again with the
	// same value, and the first copy lands and deletes that hold.
	{"stale self-release (value drawn in the factory)", "deleted by c0's own evalsha",
		worldRun(userInfo("factory-value", true, time.Millisecond), 1, scenarios.Params{Clients: 2, Duration: 10 * time.Second, Liveness: 5 * time.Second},
			faults.Fault{Kind: faults.Delay, Start: 2128 * time.Millisecond, Duration: 100 * time.Millisecond, From: []string{"c0"}, To: []string{"n0"}, OneWay: true, Delay: time.Second})},
	// Redisson's unlock: the holder field is the same for every hold of a
	// client (TestStaleSelfRelease's case, README's example).
	{"stale self-release (redisson-lock)", "deleted by c2's own eval",
		func(t *testing.T) *Judged {
			info, _ := catalogue.Get("redisson-lock")
			return worldRun(info, 22, noAlarmParams, mustReadFaults(t, "../examples/faults/redisson-stale-unlock.json")...)(t)
		}},
	// Kleppmann: the holder pauses after its check; its key expires.
	{"expiry under a pause", "expired by n0's clock", scenarioRun("pause-after-check", "set-nx-cad", 1)},
	// GET then DEL: c0's GET sees its value, its reply is held up, the key
	// expires, c1's SET NX wins, and c0's DEL lands before c1 hears its
	// reply.
	{"GET-then-DEL between another's SET and its reply", "before the reply to that write reached c1",
		func(t *testing.T) *Judged {
			info, _ := catalogue.Get("set-nx-getdel")
			return worldRun(info, 1, scenarios.Params{Clients: 2, Duration: 10 * time.Second, Liveness: 5 * time.Second, HoldMin: 2900 * time.Millisecond, HoldMax: 2950 * time.Millisecond},
				faults.Fault{Kind: faults.Delay, Start: 2424 * time.Millisecond, Duration: 600 * time.Millisecond, From: []string{"n0"}, To: []string{"c0", "c1"}, OneWay: true, Delay: 450 * time.Millisecond})(t)
		}},
	// A TTL of 3 s passed in the wrong unit (µs for ms): the key lives 3 ms.
	{"TTL in the wrong unit", "a TTL of 3ms",
		worldRun(userInfo("ttl-unit", false, time.Microsecond), 1, scenarios.Params{Clients: 2, Duration: 10 * time.Second, Liveness: 5 * time.Second})},
	{"crash without persistence", "was lost when n0 crashed", scenarioRun("restart-no-persistence", "set-nx-cad", 1)},
	{"failover losing the key", "promoted by the failover", scenarioRun("failover", "set-nx-cad", 1)},
}

// Each bug runs in the simulator; its first violation's cause holds the
// phrase its bug shows, and the whole line is pinned in
// testdata/cause.golden (go test -run TestCauseGolden
// -locksim.update-cause to accept a new wording).
func TestCauseGolden(t *testing.T) {
	var got strings.Builder
	for _, c := range causeCases {
		j := c.run(t)
		v := j.Check.First
		if v == nil {
			t.Fatalf("%s: no violation: %s", c.name, j.Check.Reasons)
		}
		if !strings.Contains(v.Cause, c.want) {
			t.Errorf("%s: the cause lacks %q:\n%s", c.name, c.want, v.Cause)
		}
		if story := Explain(j); !strings.HasSuffix(story, v.Cause) {
			t.Errorf("%s: the story does not end with the cause:\n%s", c.name, story)
		}
		if r := j.Report(""); r.Cause != v.Cause {
			t.Errorf("%s: the report's cause %q differs", c.name, r.Cause)
		}
		fmt.Fprintf(&got, "%s: %s: %s\n", c.name, v.Kind, v.Cause)
	}
	path := filepath.Join("testdata", "cause.golden")
	if *updateCause {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Fatalf("the causes changed (-locksim.update-cause to accept):\n--- got\n%s--- want\n%s", got.String(), want)
	}
}
