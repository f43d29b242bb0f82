package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/locksim/locksim/sim"
)

// TestLazyAcksAsEager runs replicated worlds twice, once with every replica
// ack an event (sim.Config.EagerAcks) and once with the acks nobody waits
// for kept out of the queue (the default), and demands the same trace: the
// same events in the same order with the same fields. Times may differ by
// a few nanoseconds only: an ack event that fell on the very instant of
// another event pushed that one 1 ns later (every event runs at an
// instant of its own), which the lazy ack no longer does. The worlds cover
// WAIT (failover-wait: acks decide its replies), failovers, a Sentinel
// split brain, three groups, and the default random mix of faults.
func TestLazyAcksAsEager(t *testing.T) {
	seeds := uint64(4)
	if testing.Short() {
		seeds = 2
	}
	cells := []struct{ scenario, lock string }{
		{"failover-wait", "primary-replica"},
		{"failover", "primary-replica"},
		{"split-brain", "primary-replica"},
		{"token-regression", "fencing"},
		{"default", "primary-replica"},
		{"default", "redisson-multilock"},
		{"multilock-bare-majority", "redisson-multilock"},
	}
	waits := 0
	for _, c := range cells {
		for seed := uint64(1); seed <= seeds; seed++ {
			lazy, lazyStats := ackRun(t, c.scenario, c.lock, seed, false)
			eager, eagerStats := ackRun(t, c.scenario, c.lock, seed, true)
			if err := sameTrace(eager, lazy); err != nil {
				t.Errorf("%s × %s seed %d: lazy acks change the trace: %v", c.scenario, c.lock, seed, err)
			}
			if lazyStats.Events >= eagerStats.Events {
				t.Errorf("%s × %s seed %d: %d events with lazy acks, %d eager: no ack was kept out of the queue", c.scenario, c.lock, seed, lazyStats.Events, eagerStats.Events)
			}
			waits += bytes.Count(lazy, []byte(`"cmd":"WAIT(done)"`)) + bytes.Count(lazy, []byte(`"cmd":"wait `))
		}
	}
	if waits == 0 {
		t.Fatal("no WAIT ran: the test does not cover the acks' one reader")
	}
}

func ackRun(t *testing.T, scenario, lock string, seed uint64, eager bool) ([]byte, sim.Stats) {
	t.Helper()
	cfg, err := Build(scenario, lock, seed, Params{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	cfg.Trace = &buf
	cfg.EagerAcks = eager
	res, err := sim.Run(sim.TestBubble(t), cfg)
	if err != nil {
		t.Fatalf("%s × %s seed %d: %v", scenario, lock, seed, err)
	}
	return buf.Bytes(), res.Stats
}

// sameTrace compares two traces event by event: every field equal, the
// times ("t", "local", "until") within 3 ns.
func sameTrace(a, b []byte) error {
	return eachLinePair(a, b, func(line int, la, lb []byte) error {
		var ea, eb map[string]any
		if err := json.Unmarshal(la, &ea); err != nil {
			return err
		}
		if err := json.Unmarshal(lb, &eb); err != nil {
			return err
		}
		for _, k := range []string{"t", "local", "until"} {
			va, _ := ea[k].(float64)
			vb, _ := eb[k].(float64)
			if d := va - vb; d > 3 || d < -3 {
				return fmt.Errorf("event %d: %s %v against %v\n  eager: %s\n  lazy:  %s", line, k, va, vb, la, lb)
			}
			delete(ea, k)
			delete(eb, k)
		}
		ja, _ := json.Marshal(ea)
		jb, _ := json.Marshal(eb)
		if !bytes.Equal(ja, jb) {
			return fmt.Errorf("event %d:\n  eager: %s\n  lazy:  %s", line, la, lb)
		}
		return nil
	})
}
