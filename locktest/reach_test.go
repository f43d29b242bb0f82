package locktest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
)

// wallClock is time.Now and time.Sleep: myLock given it instead of
// env.Clock is written the way much real Go code is.
type wallClock struct{}

func (wallClock) Now() time.Time        { return time.Now() }
func (wallClock) Sleep(d time.Duration) { time.Sleep(d) }

// A client clock fault reaches a lock that reads env.Clock and is said
// not to reach one that reads time.Now (the simulation has one shared
// clock): the outcome's Effects never count it as reached.
func TestClientClockReach(t *testing.T) {
	jump := []faults.Fault{{Kind: faults.ClockJump, Start: time.Second, Jump: 2 * time.Second, Targets: []string{"c0"}}}
	own := locktest.Run(t, newMyLock(true, false), locktest.Options{}, 1, jump)
	if len(own.Effects) != 1 || !own.Effects[0].Reached {
		t.Fatalf("a lock reading env.Clock: effects %+v, want the jump reached", own.Effects)
	}
	wall := func(env locks.Env) (locks.Lock, error) {
		env.Clock = wallClock{}
		return newMyLock(true, false)(env)
	}
	out := locktest.Run(t, wall, locktest.Options{}, 1, jump)
	if len(out.Effects) != 1 || out.Effects[0].Reached || !strings.Contains(out.Effects[0].Why, "time.Now") {
		t.Fatalf("a lock reading time.Now: effects %+v, want the jump not reached, said why", out.Effects)
	}
	if d := locktest.Describe(t, out); !strings.Contains(d, "did not reach the lock: clock-jump@1s c0 2s") {
		t.Fatalf("Describe does not say the jump missed:\n%s", d)
	}
}
