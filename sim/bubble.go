package sim

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// This file is the engine's one documented place that touches Go's own
// clock: inside a testing/synctest bubble, time.Now, timers and sleeps are
// the bubble's virtual clock, which the engine advances only when every
// goroutine in the bubble is blocked. Nothing else in sim/, clock/, faults/
// or checker/ reads the wall clock (a guard test enforces it).

// Bubble runs f inside a fresh testing/synctest bubble and returns when f
// and every goroutine it started have exited. Library code that calls
// time.Now or time.Sleep (redsync, redislock) sees virtual time inside it.
type Bubble func(f func())

// TestBubble returns a Bubble hosted by a running test.
func TestBubble(t *testing.T) Bubble {
	return func(f func()) {
		synctest.Test(t, func(*testing.T) { f() })
	}
}

// HostMain runs body inside a test so that a normal binary (the CLI) can host
// synctest bubbles, then exits the process with body's exit code. The
// process's own flags must already be parsed: os.Args is reset so that the
// testing package sees none of them.
func HostMain(body func(b Bubble) int) {
	os.Args = os.Args[:1]
	testing.Main(
		func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "locksim", F: func(t *testing.T) {
			code := body(TestBubble(t))
			os.Stdout.Sync()
			os.Exit(code)
		}}},
		nil, nil)
	fmt.Fprintln(os.Stderr, "locksim: internal error: host returned")
	os.Exit(70)
}

// bubbleClock is the engine's view of the bubble clock.
type bubbleClock struct {
	epoch time.Time
	timer *time.Timer
}

func newBubbleClock() bubbleClock {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return bubbleClock{epoch: time.Now(), timer: t}
}

// trueNow is the true time of the world: nanoseconds since the bubble began.
func (b *bubbleClock) trueNow() int64 { return int64(time.Since(b.epoch)) }

// at converts a true time to the bubble's time.Time.
func (b *bubbleClock) at(t int64) time.Time { return b.epoch.Add(time.Duration(t)) }

// fromTime converts a bubble time.Time (e.g. a connection deadline) to true time.
func (b *bubbleClock) fromTime(t time.Time) int64 { return int64(t.Sub(b.epoch)) }

// quiesce returns once every other goroutine in the bubble is durably blocked.
func quiesce() { synctest.Wait() }

// clusterReloadCooldown is how long go-redis's ClusterClient sleeps, on a
// goroutine of its own, after a slot map reload (LazyReload's cooldown,
// 200 ms in go-redis v9.23).
const clusterReloadCooldown = 200 * time.Millisecond

// settleClusterReloads lets a closed ClusterClient's reload goroutine end:
// it may sleep out its cooldown after a reload near the end of a run, and a
// bubble whose main goroutine returned no longer moves time, so it would
// be left blocked. A sleep of the bubble's virtual time, after the run's
// trace and statistics are final.
func settleClusterReloads() { time.Sleep(clusterReloadCooldown + time.Millisecond) }

// InTest runs f as a test of its own inside a running test binary, for code
// that has no *testing.T to host bubbles with (Example functions,
// benchmarks). It reports whether f passed. Outside a test binary (the
// testing flags not parsed) it returns false without running f.
func InTest(f func(t *testing.T)) bool {
	if !flag.Parsed() || flag.Lookup("test.run") == nil {
		return false
	}
	saved := map[string]string{}
	for name, v := range map[string]string{"test.run": "", "test.skip": "", "test.count": "1", "test.failfast": "false", "test.v": "false"} {
		if fl := flag.Lookup(name); fl != nil {
			saved[name] = fl.Value.String()
			flag.Set(name, v)
		}
	}
	defer func() {
		for name, v := range saved {
			flag.Set(name, v)
		}
	}()
	ran := false
	ok := testing.RunTests(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "locksim", F: func(t *testing.T) {
			if ran {
				return // -cpu lists run tests once per entry
			}
			ran = true
			f(t)
		}}})
	return ran && ok
}
