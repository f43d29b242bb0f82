package reports

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/locksim/locksim/internal/store"
	"github.com/locksim/locksim/sim"
)

// A report run twice on one store runs nothing the second time and gives
// the same results and timeline; a corrupt entry is found, rerun and
// stored again.
func TestStoreReusesRuns(t *testing.T) {
	b := sim.TestBubble(t)
	cache := t.TempDir()
	report := func(st *Store) (Results, []byte, int) {
		t.Helper()
		p, err := NewPlan(Options{Scenarios: []string{"clock-jump"}, Locks: []string{"set-nx-cad"}, Seeds: 4})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, "timelines"), 0o755)
		if err := p.Run(context.Background(), b, dir, Exec{Workers: 1, Store: st}); err != nil {
			t.Fatal(err)
		}
		res := p.Results()
		var pic []byte
		if tl := res.Cells[0].Timeline; tl != "" {
			pic, _ = os.ReadFile(filepath.Join(dir, tl))
		}
		return res, pic, p.Runs() + p.Reruns()
	}
	js := func(r Results, keepCPU bool) string {
		r.Cells = slices.Clone(r.Cells)
		if !keepCPU {
			for i := range r.Cells {
				r.Cells[i].CPUNS = 0
			}
		}
		b, _ := json.Marshal(r)
		return string(b)
	}
	plain, plainPic, _ := report(nil)
	if plain.Cells[0].UnsafeRuns == 0 || len(plainPic) == 0 {
		t.Fatalf("want an unsafe cell with a timeline to test the store with: %+v", plain.Cells[0])
	}
	open := func() *Store {
		st, err := OpenStore(cache, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st1 := open()
	first, _, runs := report(st1)
	if st1.Hits.Load() != 0 || st1.Misses.Load() != int64(runs) {
		t.Fatalf("first report: %d hits, %d misses of %d runs", st1.Hits.Load(), st1.Misses.Load(), runs)
	}
	if js(first, false) != js(plain, false) {
		t.Fatal("the store changed the results")
	}
	// The dry run's costs: the model's before any run, then the store's
	// measured ones (the cell's CPU exactly).
	pl, _ := NewPlan(Options{Scenarios: []string{"clock-jump"}, Locks: []string{"set-nx-cad"}, Seeds: 4})
	if cells, _ := pl.Expect(nil); cells[0].Measured != 0 || cells[0].CPU <= 0 || cells[0].Runs != 4 {
		t.Fatalf("model cost without a store: %+v", cells[0])
	}
	if cells, _ := pl.Expect(open()); cells[0].Measured != 4 || int64(cells[0].CPU) != first.Cells[0].CPUNS {
		t.Fatalf("expected cost from the store: %+v, want the measured %d ns", cells[0], first.Cells[0].CPUNS)
	}
	st2 := open()
	second, secondPic, _ := report(st2)
	if st2.Misses.Load() != 0 || st2.Hits.Load() != int64(runs) {
		t.Fatalf("second report: %d hits, %d misses of %d runs", st2.Hits.Load(), st2.Misses.Load(), runs)
	}
	if js(second, true) != js(first, true) || string(secondPic) != string(plainPic) {
		t.Fatal("the second report's results or timeline differ from the first's (CPU included: the store keeps it)")
	}
	// Damage one entry: it is rerun, not trusted.
	var entries []string
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != store.MarkerFile {
			entries = append(entries, p)
		}
		return nil
	})
	if len(entries) != runs {
		t.Fatalf("%d entries for %d runs", len(entries), runs)
	}
	data, _ := os.ReadFile(entries[0])
	data[len(data)-2] ^= 0x20
	os.WriteFile(entries[0], data, 0o644)
	st3 := open()
	third, _, _ := report(st3)
	if st3.Corrupt.Load() != 1 || st3.Misses.Load() != 1 || st3.Hits.Load() != int64(runs-1) {
		t.Fatalf("after damaging one entry: %d corrupt, %d misses, %d hits", st3.Corrupt.Load(), st3.Misses.Load(), st3.Hits.Load())
	}
	if js(third, false) != js(plain, false) {
		t.Fatal("the rerun changed the results")
	}
	if _, ok, _ := st3.st.Get(filepath.Base(entries[0])); !ok {
		t.Fatal("the rerun entry was not stored again")
	}
}
