package reports

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/run"
)

// TestPauseSecondsLayout: the seconds sweep runs each design of the
// no-faults row that has a lease at each length, the pause of each run
// lasting that many seconds whatever the design's TTL (2 s of a 3 s lease
// is 2 s, not 1.999…), leaves out the designs without a lease and the
// consensus ones with why, and leaves a short run out of its rate.
func TestPauseSecondsLayout(t *testing.T) {
	p, err := NewPlan(Options{Scenarios: []string{"no-faults"}, Locks: []string{"set-nx-cad", "redlock", "watchdog", "setnx-del", "zk-lock"}, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	c := p.pauseSecs
	if c == nil {
		t.Fatal("no seconds sweep")
	}
	if want := []string{"set-nx-cad", "watchdog", "redlock"}; !slices.Equal(columnOrder(c.Locks), columnOrder(want)) || len(c.Locks) != len(want) {
		t.Errorf("seconds sweep runs %v, want %v", c.Locks, want)
	}
	_, left := p.pauseSecsLocks()
	if got := strings.Join(left, "; "); !strings.Contains(got, "setnx-del (no TTL") || !strings.Contains(got, "zk-lock (consensus") {
		t.Errorf("left out: %s", got)
	}
	if len(c.points) != len(c.Locks)*len(pauseSecsQuick) {
		t.Errorf("%d points, want %d", len(c.points), len(c.Locks)*len(pauseSecsQuick))
	}
	for _, pt := range c.points {
		j, err := pt.run.Build()
		if err != nil {
			t.Fatal(err)
		}
		var got time.Duration
		for _, f := range j.Config.Faults {
			if f.Kind == faults.ClientPause {
				got = f.Duration
			}
		}
		if want := time.Duration(pt.value * float64(time.Second)); got != want {
			t.Errorf("%s at %v s: the pause lasts %v", pt.lock, pt.value, got)
		}
	}
	// A short run is counted apart, not in the rate.
	var jb job
	for _, j := range p.jobs {
		if j.point != nil && j.point.curve == c {
			jb = j
			break
		}
	}
	p.count(jb, run.Outcome{PauseShort: true}, false)
	if jb.point.Runs != 0 || jb.point.short != 1 {
		t.Errorf("a short run: %d runs, %d short; want 0 and 1", jb.point.Runs, jb.point.short)
	}
}

// TestShortNote: a curve's point gives its short and unfired runs beside
// how many of its faults bit (a run of nine pauses is short when the heal
// cuts its last, yet its other pauses ran: "6 short" alone read as six
// runs that tested nothing); the pause sweep's, one pause a run, does not.
func TestShortNote(t *testing.T) {
	c := &curve{ID: "acquire_pause_sweep"}
	pt := &point{curve: c, short: 6}
	pt.Runs, pt.Unfired, pt.Injected, pt.Bit = 6, 1, 107, 29
	if got, want := shortNote(pt), " (6 short, 1 unfired runs; 29 of the point's 107 faults bit)"; got != want {
		t.Errorf("curve point: %q, want %q", got, want)
	}
	if got := shortNote(&point{short: 3}); got != " (3 short)" {
		t.Errorf("pause sweep point: %q", got)
	}
	if got := shortNote(&point{curve: c}); got != "" {
		t.Errorf("a point with none short: %q", got)
	}
}
