package sim

import (
	"testing"
	"time"

	evt "github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
)

// The nodes' record of ownership: a write that deletes or re-times a
// watched key another client set is a key-touch event naming both; a
// client's writes to its own key, writes that change nothing, and
// unwatched keys are not. After a failover the new primary knows who set
// each key it got by replication.
func TestKeyTouch(t *testing.T) {
	cfg := biteConfig(2, 2, 6*time.Second)
	cfg.Topology = Topology{Replicated: true, DownAfter: 500 * time.Millisecond}
	cfg.WatchKeys = []string{"lock"}
	cfg.Faults = []faults.Fault{{Kind: faults.Failover, Start: 3 * time.Second, Duration: time.Second}}
	cfg.Program = func(p *Proc) {
		c := p.Primary()
		ctx := p.Context()
		step := func(at time.Duration, who int, op string, f func() (string, error)) {
			sleepUntil(p, at)
			if p.ID() == who {
				do(p, op, f)
			}
		}
		cad := `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`
		step(100*time.Millisecond, 0, "c0 sets", func() (string, error) { return c.Set(ctx, "lock", "v0", 0).Result() })
		step(200*time.Millisecond, 1, "c1 cad (deletes nothing)", func() (string, error) {
			v, err := c.Eval(ctx, cad, []string{"lock"}, "v1").Int64()
			return time.Duration(v).String(), err
		})
		step(300*time.Millisecond, 1, "c1 pexpire", func() (string, error) {
			v, err := c.PExpire(ctx, "lock", time.Minute).Result()
			return map[bool]string{true: "1", false: "0"}[v], err
		})
		step(400*time.Millisecond, 0, "c0 pexpire own", func() (string, error) {
			v, err := c.PExpire(ctx, "lock", 2*time.Minute).Result()
			return map[bool]string{true: "1", false: "0"}[v], err
		})
		step(500*time.Millisecond, 1, "c1 del other key", func() (string, error) {
			v, err := c.Del(ctx, "other").Result()
			return time.Duration(v).String(), err
		})
		// n0 fails over to n1 (the key was replicated); c1 deletes c0's key there.
		step(5*time.Second, 1, "c1 del after failover", func() (string, error) {
			v, err := c.Del(ctx, "lock").Result()
			return time.Duration(v).String(), err
		})
		step(5100*time.Millisecond, 0, "c0 sets again", func() (string, error) { return c.Set(ctx, "lock", "v0b", 0).Result() })
		step(5200*time.Millisecond, 0, "c0 del own", func() (string, error) {
			v, err := c.Del(ctx, "lock").Result()
			return time.Duration(v).String(), err
		})
	}
	res := runBite(t, cfg)
	var got []Event
	for _, ev := range res.History {
		if ev.Kind == evt.KindKeyTouch {
			got = append(got, ev)
		}
	}
	want := []struct {
		node, peer string
		result     evt.Result
		owner      string
	}{
		{"n0", "c1", "expire", "c0"},
		{"n1", "c1", "del", "c0"},
	}
	if len(got) != len(want) {
		t.Fatalf("key-touch events %+v, want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Proc != w.node || g.Peer != w.peer || g.Result != w.result || g.Detail != w.owner || g.Lock != "lock" {
			t.Errorf("event %d: %+v, want %+v", i, g, w)
		}
	}
	if fo := engineEvents(res, SentinelName, "failover"); len(fo) != 1 || fo[0].Detail != "n0 -> n1" {
		t.Fatalf("want one failover n0 -> n1, got %+v", fo)
	}
}
