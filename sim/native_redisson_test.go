package sim

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// redissonBodies are the Redisson scripts exactly as locks/catalogue
// sends them, by their name in the native table. This package's own tests
// cannot import the catalogue (it imports sim, through internal/zk), so
// catalogue_ext_test.go (package sim_test) hands them in at init
// (SetRedissonBodies), before any test runs; redissons fails a test that
// finds none.
var redissonBodies map[string]string

// redissons returns redissonBodies, failing tb when none were handed in.
func redissons(tb testing.TB) map[string]string {
	tb.Helper()
	if len(redissonBodies) == 0 {
		tb.Fatal("no Redisson script bodies: catalogue_ext_test.go's init did not hand them in (SetRedissonBodies)")
	}
	return redissonBodies
}

// The keys the Redisson scripts use for a lock "lk" (as locks/ builds them).
const (
	rLock    = "lk"
	rQueue   = "redisson_lock_queue:{lk}"
	rTimeout = "redisson_lock_timeout:{lk}"
	rChannel = "redisson_lock__channel:{lk}"
	rRWChan  = "redisson_rwlock:{lk}"
	rPrefix  = "{lk}"
	rNow     = 1_000_000 // the fair scripts' client time (ARGV[4])
)

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// redissonCase builds a random state (as commands to run on both servers)
// and the keys and arguments of one call of the named script: mostly the
// shapes Redisson's own scripts leave behind, sometimes not (wrong types,
// counters that are not integers, queue entries without a timeout,
// duplicates, odd arguments), so that both the native path and its
// fallbacks are compared.
func redissonCase(r *rand.Rand, name string) (setup [][]string, keys, argv []string) {
	// Half the cases are clean (only the shapes Redisson leaves), so that
	// the native path is taken often; odd is true in the others, where
	// each odd choice is made now and then.
	clean := r.IntN(2) == 0
	odd := func(n int) bool { return !clean && r.IntN(n) == 0 }
	ids := []string{"u1:1", "u2:1", "u3:1"}
	holders := append(ids, "u1:1:write", "u2:1:write")
	counter := func() string {
		if !odd(4) {
			return pick(r, "1", "2", "3")
		}
		return pick(r, "0", "-1", "x", "2.5", " 2", "0x2", "07", "1001", "read")
	}
	lease := func() string {
		if !odd(3) {
			return pick(r, "30000", "1000", "5000")
		}
		return pick(r, "0", "-5", "abc", "2.5", "99999999999999999999", "+30")
	}
	add := func(cmd ...string) { setup = append(setup, cmd) }

	// The lock's hash.
	switch {
	case r.IntN(3) == 0: // missing
	case odd(4):
		add("SET", rLock, "x")
	default:
		switch r.IntN(5) {
		case 0, 1:
			add("HSET", rLock, "mode", "read")
		case 2:
			add("HSET", rLock, "mode", "write")
		case 3:
			add("HSET", rLock, "mode", "junk")
		}
		for _, h := range holders {
			if r.IntN(3) == 0 {
				add("HSET", rLock, h, counter())
			}
		}
		if odd(6) {
			add("HSET", rLock, "mode", counter()) // also a counter field
		}
		if r.IntN(3) > 0 {
			add("PEXPIRE", rLock, pick(r, "100", "5000", "30000"))
		}
	}
	// The fair lock's queue and timeout set.
	var queued []string
	switch {
	case r.IntN(3) == 0:
	case odd(4):
		add("HSET", rQueue, "f", "x")
	default:
		for n := 1 + r.IntN(4); n > 0; n-- {
			q := pick(r, ids...)
			if !slices.Contains(queued, q) || odd(2) { // duplicates: odd
				queued = append(queued, q)
			}
		}
		add(append([]string{"RPUSH", rQueue}, queued...)...)
	}
	switch {
	case len(queued) == 0 && r.IntN(2) == 0, odd(5): // missing
	case odd(4):
		add("SET", rTimeout, "x")
	default:
		members := append([]string{}, queued...)
		if r.IntN(3) == 0 {
			members = append(members, pick(r, ids...))
		}
		for _, mem := range members {
			if odd(4) {
				continue // a queue entry without a timeout
			}
			score := fmt.Sprint(rNow + pick(r, -100, 0, 500, 5000, 12000))
			if odd(6) {
				score = pick(r, "1000000.5", "1e22", "-3")
			}
			add("ZADD", rTimeout, score, mem)
		}
	}
	// Readers' timeout keys ({lk}:uuid:1:rwlock_timeout:N).
	for _, id := range holders {
		for i := 1; i <= 3; i++ {
			if r.IntN(4) == 0 {
				k := fmt.Sprintf("%s:%s:rwlock_timeout:%d", rPrefix, id, i)
				add("SET", k, "1")
				if r.IntN(4) > 0 {
					add("PEXPIRE", k, pick(r, "100", "5000", "40000"))
				}
			}
		}
	}

	id := pick(r, ids...)
	if odd(8) {
		id = "mode"
	}
	writer := id + ":write"
	now := fmt.Sprint(rNow + pick(r, 0, 0, 600, 6000, 20000))
	if odd(8) {
		now = pick(r, "abc", "1000000.5")
	}
	wait := pick(r, "5000", "5000", "0", "-100")
	if odd(6) {
		wait = pick(r, "abc", "2.5", "0x10")
	}
	msg := pick(r, "0", "1")
	timeoutPrefix := rPrefix + ":" + id + ":rwlock_timeout"
	switch name {
	case "redisson-lock":
		return setup, []string{rLock}, []string{lease(), id}
	case "redisson-unlock":
		return setup, []string{rLock, rChannel}, []string{msg, lease(), id}
	case "redisson-renew":
		return setup, []string{rLock}, []string{lease(), id}
	case "redisson-fair-lock":
		return setup, []string{rLock, rQueue, rTimeout}, []string{lease(), id, wait, now}
	case "redisson-fair-unlock":
		return setup, []string{rLock, rQueue, rTimeout, rChannel}, []string{msg, lease(), id, now}
	case "redisson-fair-failed":
		return setup, []string{rQueue, rTimeout}, []string{id, wait}
	case "redisson-read-lock":
		return setup, []string{rLock, timeoutPrefix}, []string{lease(), id, writer}
	case "redisson-read-unlock":
		return setup, []string{rLock, rRWChan, timeoutPrefix, rPrefix}, []string{msg, id}
	case "redisson-read-renew":
		return setup, []string{rLock, rPrefix}, []string{lease(), id}
	case "redisson-write-lock":
		return setup, []string{rLock}, []string{lease(), writer}
	case "redisson-write-unlock":
		return setup, []string{rLock, rRWChan}, []string{msg, lease(), writer}
	}
	panic("no case for " + name)
}

// subscribers listen on a server to every channel the Redisson scripts
// publish to (by channel, and by pattern) and log what they get.
type subscribers struct {
	m      *miniredis.Miniredis
	ch, pt *miniredis.Subscriber
	// one log per subscriber: miniredis visits its subscribers in map
	// order, so only each one's own order is defined.
	logCh, logPt strings.Builder
	wg           sync.WaitGroup
}

func subscribe(m *miniredis.Miniredis) *subscribers {
	s := &subscribers{m: m, ch: m.NewSubscriber(), pt: m.NewSubscriber()}
	for _, c := range []string{rChannel, rRWChan, rChannel + ":u1:1", rChannel + ":u2:1", "end"} {
		s.ch.Subscribe(c)
	}
	s.pt.Psubscribe("redisson_lock__channel:*")
	s.pt.Psubscribe("end")
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		for msg := range s.ch.Messages() {
			fmt.Fprintf(&s.logCh, "channel %q %q\n", msg.Channel, msg.Message)
		}
	}()
	go func() {
		defer s.wg.Done()
		for msg := range s.pt.Pmessages() {
			fmt.Fprintf(&s.logPt, "pattern %q %q %q\n", msg.Pattern, msg.Channel, msg.Message)
		}
	}()
	return s
}

// done publishes a last message (delivered only after every earlier one),
// stops the subscribers and returns what they got.
func (s *subscribers) done() string {
	if n := s.m.Publish("end", "end"); n != 2 {
		panic(fmt.Sprintf("end reached %d subscribers, want 2", n))
	}
	s.ch.Close()
	s.pt.Close()
	s.wg.Wait()
	return s.logCh.String() + s.logPt.String()
}

// BenchmarkRedissonFairPoll: one waiter's poll of a held fair lock (the
// redisson-fair run's commonest EVAL), natively and through the
// interpreter.
func BenchmarkRedissonFairPoll(b *testing.B) {
	body := redissons(b)["redisson-fair-lock"]
	keys := []string{rLock, rQueue, rTimeout}
	argv := []string{"30000", "u2:1", "5000", fmt.Sprint(rNow)}
	setup := func(b *testing.B) (*miniredis.Miniredis, func(...string) string) {
		m, do := startMini(b)
		do("HSET", rLock, "u1:1", "1")
		do("PEXPIRE", rLock, "30000")
		do("RPUSH", rQueue, "u2:1")
		do("ZADD", rTimeout, fmt.Sprint(rNow+35000), "u2:1")
		return m, do
	}
	b.Run("native", func(b *testing.B) {
		m, _ := setup(b)
		s := nativeScripts[sha1hex(body)]
		p := server.NewPeer(bufio.NewWriter(io.Discard))
		b.ReportAllocs()
		for b.Loop() {
			if !s.run(m, p, keys, argv) {
				b.Fatal("fell back")
			}
		}
	})
	b.Run("lua", func(b *testing.B) {
		m, _ := setup(b)
		args := append(append([]string{"EVAL", body, "3"}, keys...), argv...)
		p := server.NewPeer(bufio.NewWriter(io.Discard))
		b.ReportAllocs()
		for b.Loop() {
			m.Server().Dispatch(p, args)
		}
	})
}
