package reports

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/sim"
)

// readTree is every file under dir, by its path relative to dir.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A report written again after one cell changed takes every chart but
// that cell's scenario's from the store, and its files are byte for byte
// those of a report written from scratch (no store) of the same results.
func TestChartsFromStoreSameBytes(t *testing.T) {
	b := sim.TestBubble(t)
	st, err := OpenStore(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(Options{Scenarios: []string{"clock-jump", "pause-after-check"}, Locks: []string{"set-nx-cad"}, Seeds: 2, Fixed: true})
	if err != nil {
		t.Fatal(err)
	}
	run := t.TempDir()
	os.Mkdir(filepath.Join(run, "timelines"), 0o755)
	if err := p.Run(context.Background(), b, run, Exec{Workers: 1, Store: st}); err != nil {
		t.Fatal(err)
	}
	write := func() map[string]string {
		t.Helper()
		dir := t.TempDir()
		if _, err := p.Write(dir); err != nil {
			t.Fatal(err)
		}
		return readTree(t, dir)
	}
	write() // draws every chart and keeps it
	charts := st.Charts.Load()
	if charts < 2 || st.Drawn.Load() != charts {
		t.Fatalf("first write: %d charts, %d drawn; want every one drawn, at least one a scenario", charts, st.Drawn.Load())
	}
	// One cell's numbers change, as an edit of its scenario's file does.
	c := p.cells[0]
	c.Overlap = (c.Overlap + 1) % (c.Runs + 1)
	st.Charts.Store(0)
	st.Drawn.Store(0)
	cached := write()
	if st.Drawn.Load() != 1 || st.Charts.Load() != charts {
		t.Fatalf("after one cell changed: %d of %d charts drawn, want 1 (its scenario's)", st.Drawn.Load(), st.Charts.Load())
	}
	p.store = nil
	fresh := write()
	if len(fresh) != len(cached) {
		t.Fatalf("%d files written from the store, %d from scratch", len(cached), len(fresh))
	}
	for name, want := range fresh {
		if cached[name] != want {
			t.Errorf("%s differs between the report written with the store and the one drawn from scratch", name)
		}
	}
	if _, ok := fresh[filepath.Join("img", "overlap-vs-resource-"+c.Scenario.ID+".png")]; !ok {
		t.Fatalf("no chart of %s among %d files", c.Scenario.ID, len(fresh))
	}
}

// A damaged chart entry is found by its checksum, redrawn and kept again:
// the files are the drawn chart's bytes.
func TestChartEntryDamagedRedrawn(t *testing.T) {
	st, err := OpenStore(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	spec := charts.FencingChart{Title: "t", Groups: []charts.FencingGroup{{Name: "set-nx-cad", Overlap: stats.Rate{K: 1, N: 4}, Resource: stats.Rate{K: 1, N: 4}}}}
	dir := t.TempDir()
	base := filepath.Join(dir, "img", "c")
	if err := st.saveChart(spec, base); err != nil {
		t.Fatal(err)
	}
	drawn := readTree(t, dir)
	key := st.chartKey(spec)
	entry := filepath.Join(st.Dir(), key[:2], key)
	data, err := os.ReadFile(entry)
	if err != nil {
		t.Fatalf("the chart was not kept: %v", err)
	}
	data[len(data)-3] ^= 0x20
	os.WriteFile(entry, data, 0o644)
	os.RemoveAll(dir)
	if err := st.saveChart(spec, base); err != nil {
		t.Fatal(err)
	}
	if st.Corrupt.Load() != 1 || st.Drawn.Load() != 2 {
		t.Fatalf("after damage: %d corrupt, %d drawn; want 1 and 2", st.Corrupt.Load(), st.Drawn.Load())
	}
	again := readTree(t, dir)
	if len(again) != 2 || again["img/c.png"] != drawn["img/c.png"] || again["img/c.svg"] != drawn["img/c.svg"] {
		t.Fatal("the redrawn chart's files differ from the first drawing")
	}
	if _, ok, _ := st.st.Get(key); !ok {
		t.Fatal("the redrawn chart was not kept again")
	}
	// A third save comes from the store, the same bytes.
	os.RemoveAll(dir)
	if err := st.saveChart(spec, base); err != nil || st.Drawn.Load() != 2 {
		t.Fatalf("third save: %v, %d drawn", err, st.Drawn.Load())
	}
	if third := readTree(t, dir); third["img/c.png"] != drawn["img/c.png"] || third["img/c.svg"] != drawn["img/c.svg"] {
		t.Fatal("the chart from the store differs from the drawn one")
	}
}
