package realredis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// renewRun runs testdata/renew_driver.py (its renew replies: mode "ok" or
// "fail") in watchdog's world on drivers/scenarios/renew-long-sections.yaml
// (sections of 1.5 to 2 TTL, no faults) with the careful workload, and
// returns the history, how many renew requests the driver got, and the
// run's end (validities are clamped there).
func renewRun(t *testing.T, mode string) ([]sim.Event, int, int64) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "renewals")
	t.Setenv("LOCKSIM_TEST_RENEW_LOG", log)
	src, err := filepath.Abs(filepath.Join("testdata", "renew_driver.py"))
	if err != nil {
		t.Fatal(err)
	}
	exe := script(t, dir, "driver-renew-"+mode, "exec /usr/bin/python3 "+src+" "+mode+"\n")
	d, err := ResolveDriver(exe)
	if err != nil {
		t.Fatal(err)
	}
	spec := run.Spec{Scenario: filepath.Join("..", "..", "..", "drivers", "scenarios", "renew-long-sections.yaml"), Lock: "watchdog", Seed: 1}
	spec.Params.Careful = true
	j, err := Build(spec, DefaultTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.WithDriver(d); err != nil {
		t.Fatal(err)
	}
	jd, err := j.RunAndJudge(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if jd.Err != nil {
		t.Fatalf("renewals %s: %v", mode, jd.Err)
	}
	b, _ := os.ReadFile(log)
	t.Logf("renewals %s: verdict %s %v", mode, jd.Verdict(), jd.Check.Reasons)
	return jd.Result.History, strings.Count(string(b), "\n"), int64(j.Config.Duration + j.Config.Liveness)
}

// beliefs walks a history per client: for each write call, the
// acquisition's own validity (its acquire ok's Until) and the belief then
// (the latest of it and the renewals recorded before the write).
type writeBelief struct {
	proc            string
	at, acq, belief int64
}

func beliefs(t *testing.T, h []sim.Event, end int64) (ws []writeBelief, renewals int) {
	t.Helper()
	type held struct {
		id, acq, belief int64
	}
	cur := map[string]*held{}
	for _, e := range h {
		switch {
		case e.Op == event.OpAcquire && e.Kind == event.KindOK:
			cur[e.Proc] = &held{e.OpID, e.Until, e.Until}
		case e.Op == event.OpAcquire && e.Kind == event.KindRenew:
			renewals++
			c := cur[e.Proc]
			if c == nil || c.id != e.OpID {
				t.Errorf("a renewal of %s's acquisition %d, which it does not hold: %+v", e.Proc, e.OpID, e)
				continue
			}
			// A validity is clamped at the run's end (driverclient.go's
			// until): an acquisition valid to the end cannot be renewed
			// past it, so its renewal may only equal it.
			if e.Until <= c.acq && c.acq < end {
				t.Errorf("%s's renewal at %d believes until %d, not after the acquire's validity %d", e.Proc, e.T, e.Until, c.acq)
			}
			c.belief = max(c.belief, e.Until)
		case e.Op == event.OpWrite && e.Kind == event.KindCall:
			if c := cur[e.Proc]; c != nil {
				ws = append(ws, writeBelief{e.Proc, e.T, c.acq, c.belief})
			}
		case e.Op == event.OpRelease && e.Kind == event.KindCall:
			delete(cur, e.Proc)
		}
	}
	return ws, renewals
}

// TestDriverRenewals: a driver that declares renew in its start reply is
// sent renew while its section runs on, and the holder's belief follows
// the replies. Sections are 1.5 to 2 TTL and the workload is careful (it
// writes nothing once its belief ran out). When the renewals succeed,
// each is recorded as the Go watchdog's Env.Renewed is (a renew event of
// the acquisition, later than the acquire's validity) and a section
// writes past its acquire's validity, never past its belief. When they
// fail, nothing is recorded and no section writes past its acquire's
// validity (the belief ends there). Both assert orders of events, not
// durations.
func TestDriverRenewals(t *testing.T) {
	requirePythonRedis(t)
	t.Run("ok", func(t *testing.T) {
		h, asked, end := renewRun(t, "ok")
		ws, renewals := beliefs(t, h, end)
		late := 0
		for _, w := range ws {
			if w.at > w.belief {
				t.Errorf("%s wrote at %d, after its belief ended at %d (careful code)", w.proc, w.at, w.belief)
			}
			if w.at > w.acq {
				late++
			}
		}
		if asked == 0 || renewals == 0 || late == 0 {
			t.Errorf("%d renew requests, %d renew events, %d of %d writes past the acquire's validity: want renewals that carry sections past it", asked, renewals, late, len(ws))
		}
		t.Logf("%d renew requests, %d renew events, %d of %d writes past the acquire's validity", asked, renewals, late, len(ws))
	})
	t.Run("fail", func(t *testing.T) {
		h, asked, end := renewRun(t, "fail")
		ws, renewals := beliefs(t, h, end)
		acquired := 0
		for _, e := range h {
			if e.Op == event.OpAcquire && e.Kind == event.KindOK {
				acquired++
			}
		}
		for _, w := range ws {
			if w.at > w.acq {
				t.Errorf("%s wrote at %d, after its acquire's validity %d, though its renewals failed", w.proc, w.at, w.acq)
			}
		}
		if asked == 0 || acquired == 0 || renewals != 0 {
			t.Errorf("%d renew requests, %d acquisitions, %d renew events: want renewals asked for, refused, and none recorded", asked, acquired, renewals)
		}
		t.Logf("%d renew requests, %d acquisitions, %d writes", asked, acquired, len(ws))
	})
}

// TestDriverDiesHolding: a driver process that ends while its client
// holds (no validity: it believed until release) stops believing when it
// ended; the next holder, once the dead one's key expired, overlaps no
// belief. Without endBeliefAtExit the dead client's belief ran on to the
// end of the run and the run was unsafe (a lease overlap with a process
// that was gone).
func TestDriverDiesHolding(t *testing.T) {
	requireRedis(t)
	requirePythonRedis(t)
	dir := t.TempDir()
	src, err := filepath.Abs(filepath.Join("testdata", "dies_driver.py"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := ResolveDriver(script(t, dir, "driver-dies", "exec /usr/bin/python3 "+src+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	j := short(t, "no-faults", "set-nx-cad", 1)
	if err := j.WithDriver(d); err != nil {
		t.Fatal(err)
	}
	jd, err := j.RunAndJudge(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if jd.Err == nil || !strings.Contains(jd.Err.Error(), "exit status 7") {
		t.Errorf("the run's error should say the driver exited: %v", jd.Err)
	}
	var ended, others int
	for _, e := range jd.Result.History {
		if e.Proc == "c0" && e.Kind == event.KindRenewFail && strings.Contains(e.Detail, "driver process ended") {
			ended++
		}
		if e.Proc != "c0" && e.Op == event.OpAcquire && e.Kind == event.KindOK {
			others++
		}
	}
	if ended != 1 {
		t.Errorf("%d belief ends recorded for c0, want 1", ended)
	}
	if others == 0 {
		t.Fatal("no other client acquired: the test proves nothing")
	}
	if jd.Check.Verdict == checker.VerdictUnsafe {
		t.Errorf("verdict unsafe %v: the dead client's belief overlapped", jd.Check.Reasons)
	}
	t.Logf("verdict %s (%d acquisitions by others after c0 died); %v", jd.Check.Verdict, others, jd.Err)
}
