package scenarios

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"testing"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

var fullDeterminism = flag.Bool("locksim.determinism-full", false,
	"run the full determinism set: 200 seeds of the default scenario per lock, each twice")

// TestDeterminism runs the default scenario (a random mix of every fault
// kind) twice per seed and lock and demands identical trace hashes. On a
// divergence it reports the first differing trace event.
//
// Sizes: -short 2 seeds per lock (CI, under -race), default 20,
// -locksim.determinism-full 200.
func TestDeterminism(t *testing.T) {
	seeds := 20
	switch {
	case *fullDeterminism:
		seeds = 200
	case testing.Short():
		seeds = 2
	}
	kinds := map[faults.Kind]int{}
	runs := 0
	for _, lock := range []string{"set-nx-cad", "primary-replica", "redlock", "redsync", "redislock", "fencing", "zk-fencing"} {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			a, cfg := traceRun(t, lock, seed)
			b, _ := traceRun(t, lock, seed)
			runs += 2
			if a.hash != b.hash {
				t.Fatalf("lock %s seed %d: trace hashes differ (%s vs %s)\n%s", lock, seed, a.hash, b.hash, firstDiff(a.trace, b.trace))
			}
			for _, f := range cfg.Faults {
				kinds[f.Kind]++
			}
		}
	}
	for _, k := range faults.Kinds {
		if kinds[k] == 0 {
			t.Errorf("fault kind %s never drawn in %d runs: the determinism set does not cover it", k, runs)
		}
	}
	t.Logf("%d runs, identical in pairs; fault kinds drawn: %v", runs, kinds)
}

type traced struct {
	hash  string
	trace []byte
}

func traceRun(t *testing.T, lock string, seed uint64) (traced, sim.Config) {
	t.Helper()
	cfg, err := Build("default", lock, seed, Params{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	cfg.Trace = &buf
	res, err := sim.Run(sim.TestBubble(t), cfg)
	if err != nil {
		t.Fatalf("lock %s seed %d: %v", lock, seed, err)
	}
	return traced{hash: res.TraceSHA256, trace: buf.Bytes()}, cfg
}

// firstDiff names the first trace line on which two runs disagree.
func firstDiff(a, b []byte) string {
	err := eachLinePair(a, b, func(line int, la, lb []byte) error {
		if !bytes.Equal(la, lb) {
			return fmt.Errorf("first divergence at event %d:\n  run 1: %s\n  run 2: %s", line, la, lb)
		}
		return nil
	})
	if err != nil {
		return err.Error()
	}
	return "traces equal line by line (hash mismatch elsewhere)"
}

// eachLinePair calls f with each pair of trace lines, numbered from 1,
// until f fails; traces of different lengths fail where the shorter ends.
func eachLinePair(a, b []byte, f func(line int, la, lb []byte) error) error {
	sa, sb := bufio.NewScanner(bytes.NewReader(a)), bufio.NewScanner(bytes.NewReader(b))
	sa.Buffer(nil, 1<<20)
	sb.Buffer(nil, 1<<20)
	for line := 1; ; line++ {
		okA, okB := sa.Scan(), sb.Scan()
		if !okA || !okB {
			if okA != okB {
				return fmt.Errorf("traces differ in length at event %d", line)
			}
			return nil
		}
		if err := f(line, sa.Bytes(), sb.Bytes()); err != nil {
			return err
		}
	}
}
