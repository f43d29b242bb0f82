package sweep_test

import (
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
)

// PauseShort: a targeted pause counts as run in full only when its client
// paused at the point and the pause ended inside the safety phase.
func TestPauseShort(t *testing.T) {
	f := faults.Fault{Kind: faults.ClientPause, Start: time.Second, Duration: 3 * time.Second, Targets: []string{"c0"}, At: run.PausePoint}
	other := faults.Fault{Kind: faults.ClientPause, Start: 0, Duration: time.Second, Targets: []string{"c0"}, At: "acquiring"}
	hist := func(fs []faults.Fault, evs ...checker.Event) checker.History {
		return checker.History{Heal: int64(10 * time.Second), Faults: fs, Events: evs}
	}
	cfg := []faults.Fault{f, other}
	pause := func(at time.Duration) checker.History {
		return hist(cfg, checker.Event{T: int64(at), Proc: "c0", Kind: "pause", Detail: f.String(), Fault: 1},
			checker.Event{T: 0, Proc: "c0", Kind: "pause", Detail: other.String(), Fault: 2})
	}
	for _, c := range []struct {
		name    string
		history checker.History
		want    bool
	}{
		{"in full", pause(2 * time.Second), false},
		{"ends exactly at the heal", pause(7 * time.Second), false},
		{"cut by the heal", pause(8 * time.Second), true},
		{"never reached the point", hist(cfg[:1]), true},
		{"another pause's event", hist(cfg[:1], checker.Event{T: int64(2 * time.Second), Proc: "c0", Kind: "pause", Detail: other.String(), Fault: 2}), true},
	} {
		if got := sweep.PauseShort(c.history); got != c.want {
			t.Errorf("%s: PauseShort = %v, want %v", c.name, got, c.want)
		}
	}
	untargeted := hist([]faults.Fault{{Kind: faults.ClientPause, Start: time.Second, Duration: 30 * time.Second, Targets: []string{"c0"}}})
	if sweep.PauseShort(untargeted) {
		t.Error("a pause by time (no point) is not the sweep's targeted pause")
	}
}
