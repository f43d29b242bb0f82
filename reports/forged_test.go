package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/sim"
)

// Entries rewritten with a recomputed checksum (a forger's, or another
// build's bug) are not trusted: a payload no run gives is corrupt and
// rerun; an outcome that passes every check but disagrees with its own
// rerun (the timeline's) drops its cell's entries and runs the cell anew,
// once, not "did not reproduce" on every later report.
func TestForgedEntries(t *testing.T) {
	b := sim.TestBubble(t)
	opt := Options{Scenarios: []string{"no-faults", "clock-jump"}, Locks: []string{"set-nx-cad"}, Seeds: 4}
	report := func(t *testing.T, st *Store) (string, string) {
		t.Helper()
		p, err := NewPlan(opt)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, "timelines"), 0o755)
		var log bytes.Buffer
		if err := p.Run(context.Background(), b, dir, Exec{Workers: 1, Store: st, Log: &log}); err != nil {
			t.Fatalf("report: %v (log %q)", err, log.String())
		}
		res := p.Results()
		for i := range res.Cells {
			res.Cells[i].CPUNS = 0
		}
		js, _ := json.Marshal(res)
		var pics []string // every picture drawn, none of a wrong run's
		ents, _ := os.ReadDir(filepath.Join(dir, "timelines"))
		for _, e := range ents {
			pics = append(pics, e.Name())
		}
		return string(js) + strings.Join(pics, ","), log.String()
	}
	plain, _ := report(t, nil)
	cache := t.TempDir()
	open := func() *Store {
		st, err := OpenStore(cache, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	report(t, open())
	p, _ := NewPlan(opt)
	cell := func(scenario string) []string { // its seeds' outcome keys, by seed
		var keys []string
		for _, j := range p.jobs {
			if j.cell != nil && j.cell.Scenario.ID == scenario {
				keys = append(keys, open().key(j.req))
			}
		}
		return keys
	}
	safe, unsafe := cell("no-faults"), cell("clock-jump")
	if len(safe) != 4 || len(unsafe) != 4 {
		t.Fatalf("%d and %d seeds", len(safe), len(unsafe))
	}
	read := func(k string) storedRun {
		t.Helper()
		payload, ok, _ := open().st.Get(k)
		var e storedRun
		if !ok || json.Unmarshal(payload, &e) != nil {
			t.Fatalf("entry %s: missing or unreadable", k)
		}
		return e
	}
	forge := func(k string, e storedRun) {
		t.Helper()
		payload, _ := json.Marshal(e)
		if err := open().st.Put(k, payload); err != nil { // the checksum recomputed
			t.Fatal(err)
		}
	}
	var unsafeTrace string
	for _, k := range unsafe {
		if e := read(k); e.Outcome.Verdict == checker.VerdictUnsafe {
			unsafeTrace = e.Outcome.TraceSHA256
		}
	}
	if unsafeTrace == "" || read(safe[0]).Outcome.Verdict != checker.VerdictSafe {
		t.Fatal("want a safe cell and an unsafe one to forge entries of")
	}
	for _, c := range []struct {
		name    string
		forge   func()
		corrupt int64  // entries found corrupt
		log     string // what the report says ("": nothing)
	}{
		{"banana", func() {
			e := read(safe[0])
			e.Outcome.Verdict, e.Outcome.LeaseOverlaps = "banana", -5
			forge(safe[0], e)
		}, 1, ""},
		{"negative count", func() {
			e := read(safe[1])
			e.Outcome.LeaseOverlaps = -5
			forge(safe[1], e)
		}, 1, ""},
		{"another run's entry copied", func() {
			payload, _, _ := open().st.Get(unsafe[0])
			open().st.Put(safe[2], payload)
		}, 1, ""},
		{"a safe cell made unsafe", func() { // the trace kept: only the verdicts lie
			for _, k := range safe {
				e := read(k)
				e.Outcome.Verdict, e.Outcome.Class, e.Outcome.LeaseOverlaps = checker.VerdictUnsafe, checker.ClassDoubleHold, 1
				forge(k, e)
			}
		}, 0, "no-faults × set-nx-cad seed 1 is unsafe"},
		{"another run's outcome under each key", func() {
			for _, k := range safe {
				e := read(k)
				e.Outcome.Verdict, e.Outcome.Class, e.Outcome.TraceSHA256 = checker.VerdictUnsafe, checker.ClassDoubleHold, unsafeTrace
				forge(k, e)
			}
		}, 0, "no-faults × set-nx-cad seed 1 is unsafe"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.forge()
			st := open()
			got, log := report(t, st)
			if got != plain {
				t.Errorf("the forged entries changed the results")
			}
			if st.Corrupt.Load() != c.corrupt {
				t.Errorf("%d entries found corrupt, want %d", st.Corrupt.Load(), c.corrupt)
			}
			if c.log == "" && log != "" || !strings.Contains(log, c.log) {
				t.Errorf("log %q, want %q", log, c.log)
			}
			// The next report takes everything from the store, which holds
			// the runs' true outcomes again.
			st = open()
			if got, log := report(t, st); got != plain || st.Misses.Load() != 0 || st.Corrupt.Load() != 0 || log != "" {
				t.Errorf("the report after: same results %v, %d misses, %d corrupt, log %q", got == plain, st.Misses.Load(), st.Corrupt.Load(), log)
			}
		})
	}
}
