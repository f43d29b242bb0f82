package locktest

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
)

// Two searches in parallel tests run at the same time (nothing
// serializes them, neither rapid's flags nor a lock of locktest's): each
// one's first world waits in its lock factory until the other's first
// world has started. Searches that took turns would never meet; the wait
// gives up after a minute of wall time (a guard against hanging, not a
// measure of speed) and fails. Run under -race it also checks that two
// searches share nothing unguarded (fail-file names, progress lines).
func TestParallelSearchesOverlap(t *testing.T) {
	if fl := flag.Lookup("test.parallel"); fl != nil {
		if n, err := strconv.Atoi(fl.Value.String()); err == nil && n < 2 {
			t.Skipf("-test.parallel %d runs one parallel test at a time", n)
		}
	}
	arrived := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	meet := func(t *testing.T, me int, giveUp <-chan time.Time) Factory {
		var once sync.Once
		inner := Library("set-nx-cad")
		return func(env locks.Env) (locks.Lock, error) {
			if env.Client == "c0" {
				once.Do(func() {
					close(arrived[me])
					select {
					case <-arrived[1-me]:
					case <-giveUp:
						t.Errorf("search %d waited a minute for the other to start: the searches took turns", me)
					}
				})
			}
			return inner(env)
		}
	}
	t.Run("group", func(t *testing.T) {
		for i, seed := range []uint64{3, 0} { // one pinned, one reading rapid's flags
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				giveUp := time.After(time.Minute) // a wall-clock timer, made outside every bubble
				if out := Find(t, meet(t, i, giveUp), Options{NoFaults: true, Checks: 3, Seed: seed}); out != nil {
					t.Errorf("a correct lock failed with no faults: %v", out.Check.Reasons)
				}
			})
		}
	})
}

// A search with a pinned Seed writes no fail file, even when it finds a
// violation (it finds the same one every run without one), and so leaves
// nothing under testdata/rapid for the next run to replay.
// (TestSeedReplaysNoFailFile checks that it replays none either.)
func TestPinnedSeedWritesNoFailFile(t *testing.T) {
	dir := failFileDir(t.Name())
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("%s exists before the test", dir)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	o := Options{Duration: 10 * time.Second, Liveness: 5 * time.Second, Kinds: []faults.Kind{faults.Delay}, Checks: 50, Seed: 1}
	out := Find(t, Library("canary-no-owner-release"), o) // a plain-DEL release
	if out == nil {
		t.Fatal("no delay schedule of 50 found a plain-DEL release unsafe")
	}
	if out.FailFile != "" {
		t.Errorf("a pinned search wrote fail file %s", out.FailFile)
	}
	if paths, _ := filepath.Glob(filepath.Join("testdata", "rapid", filepath.Base(dir)+"*")); len(paths) > 0 {
		t.Errorf("a pinned search left %v", paths)
	}
}
