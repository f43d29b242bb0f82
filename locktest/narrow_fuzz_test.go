package locktest_test

import (
	"testing"

	"github.com/locksim/locksim/locktest"
)

// The narrow bugs a 100-schedule aimed search finds at fewer than 19 of
// 20 seeds (docs/FINDINGS.md, "Armed faults and narrow-window bugs"), as
// fuzz targets: planted bugs for go test -fuzz to find, skipped by plain
// go test (their seed corpus may find them).
//
//	go test -run='^$' -fuzz='^FuzzNarrowAdoptOwnKey$' -fuzztime=60s ./locktest/
func FuzzNarrowAdoptOwnKey(f *testing.F)       { fuzzNarrow(f, bugAdoptOwnKey, false) }
func FuzzNarrowWatchdogLeak(f *testing.F)      { fuzzNarrow(f, bugWatchdogLeak, true) }
func FuzzNarrowValidityFromReply(f *testing.F) { fuzzNarrow(f, bugValidityFromReply, false) }

func fuzzNarrow(f *testing.F, bug string, renews bool) {
	skipUnlessFuzzed(f)
	o := narrowOptions(renews, 0)
	o.Checks, o.Seed = 0, 0
	locktest.Fuzz(f, newNarrowLock(bug, renews), o)
}
