package realredis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// NodeClockMechanism names how the real arm moves a Redis node's clock.
//
// libfaketime (the faithful way: the node's own clock jumps or drifts)
// hangs Debian's redis-server 7.0.15 at start-up on this machine kind
// (FACTS.md: "unexpected recursive calls to clock_gettime"), so the arm
// emulates what a node's clock does to a lock, key expiry, with Redis's
// own commands: a forward jump of J expires every key whose PTTL ≤ J and
// shortens the others by J, a backward jump lengthens them, drift is a
// periodic small jump; each adjustment is one atomic Lua script.
const NodeClockMechanism = "lua-pttl (key TTLs moved by a Lua script; libfaketime hangs redis-server 7.0.15)"

// shiftScript moves every key's remaining TTL by -ARGV[1] ms (a clock
// jumping forward by ARGV[1] ms): a key whose PTTL is at most the jump
// expires now. Keys without a TTL are left alone. It returns the number of
// keys expired.
var shiftScript = redis.NewScript(`
local j = tonumber(ARGV[1])
local gone = 0
for _, k in ipairs(redis.call('KEYS', '*')) do
  local t = redis.call('PTTL', k)
  if t > 0 then
    if t <= j then
      redis.call('DEL', k)
      gone = gone + 1
    else
      redis.call('PEXPIRE', k, t - j)
    end
  end
end
return gone
`)

// shiftTimeout bounds one script call.
const shiftTimeout = 2 * time.Second

// jumpNode applies a clock jump of d to node n's keys.
func (w *world) jumpNode(n int, d time.Duration) {
	w.mu.Lock()
	w.clockNote = NodeClockMechanism
	w.mu.Unlock()
	if err := w.shift(n, d.Milliseconds()); err != nil {
		w.harnessError(fmt.Errorf("clock jump on %s: %w", w.servers[n].name, err))
	}
}

func (w *world) shift(n int, ms int64) error {
	s := w.servers[n]
	if ms == 0 || s.isDown() {
		return nil // a crashed node has no keys to move
	}
	s.mu.Lock()
	admin := s.admin
	s.mu.Unlock()
	if admin == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(w.ctx, shiftTimeout)
	defer cancel()
	err := shiftScript.Run(ctx, admin, nil, ms).Err()
	if err != nil && w.ctx.Err() == nil && !s.isDown() {
		return err
	}
	return nil
}

// drift is a running clock drift on some nodes: every tick it shifts
// their keys by tick × ppm / 10^6 (whole milliseconds, the rest carried).
type drift struct {
	stop chan struct{}
	once sync.Once
	done chan struct{}
}

// driftTick is how often a drifting node's keys are moved.
const driftTick = 10 * time.Millisecond

// startDrift starts fault i's drift of ppm on nodes; every tick until
// one is seen it also reads their live lock keys (effects.go).
func (w *world) startDrift(i int, nodes []int, ppm int64) *drift {
	w.mu.Lock()
	w.clockNote = NodeClockMechanism
	d := &drift{stop: make(chan struct{}), done: make(chan struct{})}
	w.drifts = append(w.drifts, d)
	w.mu.Unlock()
	go func() {
		defer close(d.done)
		t := time.NewTicker(driftTick)
		defer t.Stop()
		var carry int64 // ns of clock error not yet applied
		last := time.Now()
		for {
			select {
			case <-d.stop:
				return
			case now := <-t.C:
				w.noteDriftKeys(i, nodes)
				carry += int64(now.Sub(last)) * ppm / 1_000_000
				last = now
				ms := carry / int64(time.Millisecond)
				if ms == 0 {
					continue
				}
				carry -= ms * int64(time.Millisecond)
				for _, n := range nodes {
					if err := w.shift(n, ms); err != nil {
						w.harnessError(fmt.Errorf("clock drift on %s: %w", w.servers[n].name, err))
					}
				}
			}
		}
	}()
	return d
}

func (d *drift) end() {
	d.once.Do(func() { close(d.stop) })
	<-d.done
}

// stopDrift ends every drift (the heal, the stop).
func (w *world) stopDrift() {
	w.mu.Lock()
	ds := w.drifts
	w.drifts = nil
	w.mu.Unlock()
	for _, d := range ds {
		d.end()
	}
}
