package run

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// pausedAt runs lockID in pause-after-check's world with one targeted
// pause of c0 at point, and returns the judged run.
func pausedAt(t *testing.T, lockID, point string) *Judged {
	t.Helper()
	info, err := catalogue.Get(lockID)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := scenarios.Build("pause-after-check", lockID, 1, scenarios.Params{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faults = []faults.Fault{{Kind: faults.ClientPause, Start: time.Second, Duration: 2 * info.TTL, Targets: []string{"c0"}, At: point}}
	j, err := runChecked(sim.TestBubble(t), cfg, "pause-after-check", info, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// The library adapters reach the pause points a scenario targets: a
// go-redis hook marks acquiring (after each reply inside the library's lock call), the
// adapter marks after-check (after the library's lock call returned).
// Before, neither fired inside a library, and such scenarios gave false
// safe verdicts.
func TestLibrariesReachPausePoints(t *testing.T) {
	for _, id := range []string{"redsync", "redislock", "gocron"} {
		for _, pt := range []string{string(locks.PointAcquiring), string(locks.PointAfterCheck)} {
			t.Run(id+"/"+pt, func(t *testing.T) {
				j := pausedAt(t, id, pt)
				if u := UnfiredPauses(j.History); len(u) != 0 {
					t.Fatalf("the pause at %s never fired: %v", pt, u)
				}
				paused := 0
				for _, e := range j.History.Events {
					if e.Kind == event.KindPause && e.Proc == "c0" && e.Fault == 1 {
						paused++
					}
				}
				if paused != 1 {
					t.Fatalf("want one pause event of c0 for the fault, got %d", paused)
				}
			})
		}
	}
}

// A targeted pause the lock never reaches (no library adapter renews) is
// said in the summary and the JSON, and not counted as injected.
func TestUnfiredPauseIsReported(t *testing.T) {
	j := pausedAt(t, "redislock", string(locks.PointRenewing))
	r := j.Report("")
	if len(r.UnfiredPauses) != 1 || r.UnfiredPauses[0].At != string(locks.PointRenewing) {
		t.Fatalf("UnfiredPauses = %v, want the renewing pause", r.UnfiredPauses)
	}
	if r.Stats.Faults != 1 || r.FaultsInjected != 0 {
		t.Fatalf("stats count %d faults, injected %d: want 1 armed, 0 injected", r.Stats.Faults, r.FaultsInjected)
	}
	var b bytes.Buffer
	r.WriteSummary(&b)
	for _, want := range []string{"1 scheduled, 0 injected", "1 targeted pause: its client never reached its point", "c0 at renewing"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	// The same pause at a point the lock marks: injected, nothing unfired.
	r = pausedAt(t, "redislock", string(locks.PointAfterCheck)).Report("")
	if len(r.UnfiredPauses) != 0 || r.FaultsInjected != 1 {
		t.Fatalf("after-check: unfired %v, injected %d", r.UnfiredPauses, r.FaultsInjected)
	}
}
