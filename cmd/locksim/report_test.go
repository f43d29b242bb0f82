package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/bench"
	"github.com/locksim/locksim/reports"
)

// checkReportLinks checks every page of the report in dir: nothing
// refers outside the folder, and every local link (src or href) names a
// file that exists, and its #anchor an id in that file. It returns all the
// pages' text, index.html first.
func checkReportLinks(t *testing.T, dir string) string {
	t.Helper()
	pages, _ := filepath.Glob(filepath.Join(dir, "*", "*.html"))
	pages = append([]string{filepath.Join(dir, "index.html")}, pages...)
	if len(pages) < 3 {
		t.Errorf("the report has only %d pages", len(pages))
	}
	hrefRE := regexp.MustCompile(`(?:src|href)="([^"]*)"`)
	ids := map[string]string{} // page -> its text, for anchors
	var all strings.Builder
	for _, p := range pages {
		text := readFile(t, p)
		ids[p] = text
		all.WriteString(text)
		if strings.Contains(text, "http://") || strings.Contains(text, "https://") || strings.Contains(text, "<script") {
			t.Errorf("%s refers to something outside the directory", p)
		}
		refs := hrefRE.FindAllStringSubmatch(text, -1)
		if len(refs) < 3 {
			t.Errorf("%s has only %d references", p, len(refs))
		}
		for _, m := range refs {
			file, frag, _ := strings.Cut(m[1], "#")
			target := p
			if file != "" {
				target = filepath.Join(filepath.Dir(p), filepath.FromSlash(file))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s refers to %s: %v", p, m[1], err)
					continue
				}
			}
			if frag == "" {
				continue
			}
			text, ok := ids[target]
			if !ok {
				text = readFile(t, target)
				ids[target] = text
			}
			if !strings.Contains(text, `id="`+frag+`"`) {
				t.Errorf("%s refers to %s: no id %q there", p, m[1], frag)
			}
		}
	}
	return all.String()
}

// tinyReport runs in a few seconds (also under -race): two scenarios, two
// locks, two seeds per cell, the quick pause sweep with one seed a point.
func tinyReport(out string) []string {
	return []string{"report", "--out", out, "--quick", "--seeds", "2", "--scenarios", "no-faults,pause-after-check", "--locks", "set-nx-cad,fencing", "-j", "2"}
}

func TestReportFiles(t *testing.T) {
	if _, err := os.Stat("../../scenarios/builtin/pause-after-check.yaml"); err != nil {
		t.Skip("no pause-after-check scenario in this tree")
	}
	dir := filepath.Join(t.TempDir(), "report")
	code, stdout, stderr := cli(t, testHost(t), tinyReport(dir)...)
	if code != exitSafe {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "report: "+filepath.Join(dir, "index.html")) {
		t.Errorf("stdout: %q", stdout)
	}
	for _, f := range []string{"index.html", "report.md", "results.json", "img/pause-sweep.png", "img/pause-sweep.svg",
		"img/overlap-vs-resource-no-faults.png", "img/overlap-vs-resource-pause-after-check.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	checkResultsJSON(t, filepath.Join(dir, "results.json"), 2)

	// The last line counts what the time was spent on: the planned runs
	// and the timeline reruns (one per unsafe cell, here at least
	// pause-after-check × set-nx-cad).
	// The very last line says where the CPU went (no store in a test:
	// every run ran).
	last := regexp.MustCompile(`locksim: report: (\d+) runs in \S+ \(\d+ runs/s, 2 workers; (\d+) of them reran an unsafe cell's first unsafe seed to draw its timeline\)\nlocksim: report: no result store \(every run ran\); CPU \S+ in all; dearest cells: \S+ × \S+ \S+ \(\d+ runs\)(, \S+ × \S+ \S+ \(\d+ runs\))*\n$`).FindStringSubmatch(stderr)
	if last == nil {
		t.Errorf("stderr does not end with the runs line and the cost line: %q", stderr[max(0, len(stderr)-600):])
	} else if runs, reruns := atoiT(t, last[1]), atoiT(t, last[2]); reruns < 1 || !strings.Contains(stdout, fmt.Sprintf("; %d runs)", runs-reruns)) {
		t.Errorf("runs line says %d runs, %d reruns; stdout %q", runs, reruns, stdout)
	}

	// Self-contained: no external reference; every local link and
	// anchor resolves, from every page.
	page := checkReportLinks(t, dir)
	md := readFile(t, filepath.Join(dir, "report.md"))
	for _, want := range []string{"## Outcome matrix", "pause-after-check", "repro", "## Settings"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}

	// The pause-after-check × set-nx-cad cell is unsafe: its timeline and
	// repro command are there.
	var res struct {
		Cells []reports.CellResult `json:"cells"`
	}
	json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "results.json"))), &res)
	// Fencing made visible: under Kleppmann's pause the fenced lock's
	// holders act on dead leases and the storage refuses them; the matrix
	// shows the columns.
	if i := slices.IndexFunc(res.Cells, func(c reports.CellResult) bool { return c.Scenario == "pause-after-check" && c.Lock == "fencing" }); i < 0 {
		t.Error("no pause-after-check × fencing cell")
	} else if c := res.Cells[i]; c.StaleSectionRuns == 0 || c.FencedRejectionRuns == 0 || c.Verdict != checker.VerdictSafe {
		t.Errorf("pause-after-check × fencing: stale section runs %d, fenced rejection runs %d, verdict %s; want both > 0, safe", c.StaleSectionRuns, c.FencedRejectionRuns, c.Verdict)
	}
	for _, col := range []string{"stale section runs (write accepted)", "fenced runs", "starved runs"} {
		if !strings.Contains(md, col) || !strings.Contains(page, col) {
			t.Errorf("the matrix lacks the column %q", col)
		}
	}
	i := slices.IndexFunc(res.Cells, func(c reports.CellResult) bool { return c.Scenario == "pause-after-check" && c.Lock == "set-nx-cad" })
	if i < 0 {
		t.Fatal("no pause-after-check × set-nx-cad cell")
	}
	if c := res.Cells[i]; c.Verdict == checker.VerdictUnsafe {
		if c.Timeline == "" || c.Repro == "" || !strings.Contains(page, c.Repro) {
			t.Errorf("unsafe cell without timeline or repro: %+v", c)
		}
		// The repro command gives the same trace.
		args := append(strings.Fields(strings.TrimPrefix(c.Repro, "locksim ")), "--json")
		_, out, _ := cli(t, testHost(t), args...)
		var r struct {
			Verdict     checker.Verdict `json:"verdict"`
			TraceSHA256 string          `json:"trace_sha256"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.TraceSHA256 != c.ReproTraceSHA256 || r.Verdict != checker.VerdictUnsafe {
			t.Errorf("%s: verdict %q, trace %s; the report recorded unsafe, %s", c.Repro, r.Verdict, r.TraceSHA256, c.ReproTraceSHA256)
		}
	}

	// The same flags, the same bytes, but for the cells' measured CPU.
	again := filepath.Join(t.TempDir(), "again")
	if code, _, stderr := cli(t, testHost(t), tinyReport(again)...); code != exitSafe {
		t.Fatal(stderr)
	}
	cpu := regexp.MustCompile(`"cpu_ns": \d+`)
	for _, f := range []string{"results.json", "report.md", "index.html", "img/pause-sweep.png"} {
		if cpu.ReplaceAllString(readFile(t, filepath.Join(dir, f)), "") != cpu.ReplaceAllString(readFile(t, filepath.Join(again, f)), "") {
			t.Errorf("%s differs between two runs", f)
		}
	}
	// With a result store, the same bytes, CPU included: the second report
	// runs nothing and says so.
	cache := filepath.Join(t.TempDir(), "cache")
	stored := filepath.Join(t.TempDir(), "stored")
	if code, _, stderr := cli(t, testHost(t), append(tinyReport(stored), "--cache", cache)...); code != exitSafe {
		t.Fatal(stderr)
	}
	fromStore := filepath.Join(t.TempDir(), "from-store")
	code, _, stderr = cli(t, testHost(t), append(tinyReport(fromStore), "--cache", cache)...)
	if code != exitSafe {
		t.Fatal(stderr)
	}
	runs := regexp.MustCompile(`locksim: report: (\d+) runs in `).FindStringSubmatch(stderr)
	if runs == nil || !strings.Contains(stderr, fmt.Sprintf("locksim: report: %s of %s runs from the result store %s;", runs[1], runs[1], cache)) {
		t.Errorf("the second report on one store did not take every run from it: %q", stderr[max(0, len(stderr)-600):])
	}
	for _, f := range []string{"results.json", "report.md", "index.html", "img/pause-sweep.png", firstTimeline(t, dir)} {
		if readFile(t, filepath.Join(stored, f)) != readFile(t, filepath.Join(fromStore, f)) {
			t.Errorf("%s differs between a report and the same report from the store", f)
		}
	}
}

// firstTimeline is a timeline of the report in dir (the first by name), relative
// to it.
func firstTimeline(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "timelines", "*.png"))
	if len(m) == 0 {
		t.Fatal("no timeline drawn")
	}
	return filepath.Join("timelines", filepath.Base(m[0]))
}

// checkResultsJSON checks the shape of results.json (docs/CLI.md).
func checkResultsJSON(t *testing.T, path string, runs int) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &doc); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	cells, ok := doc["cells"].([]any)
	if !ok || len(cells) == 0 {
		t.Fatalf("results.json: no cells array")
	}
	for i, raw := range cells {
		c, ok := raw.(map[string]any)
		if !ok {
			t.Fatalf("cell %d is not an object", i)
		}
		for _, k := range []string{"scenario", "lock", "verdict"} {
			if s, ok := c[k].(string); !ok || s == "" {
				t.Errorf("cell %d: %q is not a non-empty string: %v", i, k, c[k])
			}
		}
		for _, k := range []string{"runs", "lease_overlap_runs", "resource_violation_runs"} {
			if v, ok := c[k].(float64); !ok || v < 0 || v != float64(int(v)) {
				t.Errorf("cell %d: %q is not a count: %v", i, k, c[k])
			}
		}
		if c["runs"] != float64(runs) {
			t.Errorf("cell %d: runs %v, want %d", i, c["runs"], runs)
		}
		if v := c["verdict"]; v != "safe" && v != "unsafe" && v != "liveness" && v != "unknown" {
			t.Errorf("cell %d: verdict %v", i, v)
		}
	}
}

// TestReportQuick builds the CLI and runs the real --quick report with
// its worker processes (about a minute on 2 cores); skipped with -short.
func TestReportQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("the --quick report takes about a minute; skipped with -short")
	}
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "quick")
	start := time.Now()
	if out, err := exec.Command(bin, "report", "--out", dir, "--quick").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("report --quick: %v", time.Since(start).Round(time.Second))
	checkResultsJSON(t, filepath.Join(dir, "results.json"), reports.QuickSeeds)
}

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "--out: required"},
		{[]string{"report", "--out", dir, "--scenarios", "nope"}, `--scenarios: unknown scenario "nope"`},
		{[]string{"report", "--out", dir, "--locks", "nope"}, `--locks: unknown lock "nope"`},
		{[]string{"report", "--out", dir, "--seeds", "0"}, `--seeds: "0" is out of range`},
		{[]string{"report", "--out", dir, "--scenarios", "no-faults", "--locks", "redsync", "--seeds", "1", "--jobs", "0"}, `--jobs: "0" is out of range`},
	} {
		code, stdout, stderr := cli(t, noHost(t), c.args...)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "locksim: "+c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 64, one line starting %q", c.args, code, stderr, c.want)
		}
	}
}

func TestBench(t *testing.T) {
	code, stdout, stderr := cli(t, testHost(t), "bench", "--seeds", "1", "--duration", "3s")
	if code != exitSafe {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"simulated Redis commands", "miniredis Dispatch", "go-redis over net.Pipe", "time compression", "checker throughput"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("bench output lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = cli(t, testHost(t), "bench", "--seeds", "1", "--duration", "3s", "--lock", "set-nx-cad", "--json")
	var r bench.Result
	if code != exitSafe || json.Unmarshal([]byte(stdout), &r) != nil {
		t.Fatalf("--json: exit %d, %q, %s", code, stdout, stderr)
	}
	if r.Lock != "set-nx-cad" || r.CommandsPerSec <= 0 || r.FloorDispatchPerSec <= 0 || r.FloorPipePerSec <= 0 || r.Compression <= 0 || r.CheckEventsPerSec <= 0 ||
		r.EngineVsPipe != r.CommandsPerSec/r.FloorPipePerSec || r.Allocs == 0 || r.AllocsPerCommand != float64(r.Allocs)/float64(r.Commands) {
		t.Errorf("--json: %+v", r)
	}
	// Measured as the workers run, unless the environment says otherwise.
	if os.Getenv("GOMAXPROCS") == "" && r.GOMAXPROCS != 1 || os.Getenv("GOGC") == "" && r.GOGC != 400 {
		t.Errorf("--json: GOMAXPROCS %d, GOGC %d; want the workers' 1 and 400", r.GOMAXPROCS, r.GOGC)
	}
	if !strings.Contains(stdout, `"engine_vs_pipe_ratio":`) || !strings.Contains(stdout, `"allocs_per_command":`) || !strings.Contains(stdout, `"time_compression":`) {
		t.Errorf("--json lacks a field: %s", stdout)
	}
	if code, _, stderr := cli(t, noHost(t), "bench", "--lock", "nope"); code != exitUsage || !strings.HasPrefix(stderr, `locksim: --lock: unknown lock "nope"`) {
		t.Errorf("bad lock: exit %d, %q", code, stderr)
	}
}

// A report is written beside its folder and moved into place when
// complete: a rerun replaces what a report writes (no stale timeline of the
// previous run stays), keeps the user's own files, and leaves no staging
// folder behind; an --out that is a file is refused before anything runs.
func TestReportRerunReplacesItsFiles(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "report")
	args := []string{"report", "--out", dir, "--quick", "--seeds", "1", "--scenarios", "no-faults", "--locks", "set-nx-cad", "-j", "1"}
	if code, _, stderr := cli(t, testHost(t), args...); code != exitSafe {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	stale := filepath.Join(dir, "timelines", "old-scenario--old-lock.png")
	mine := filepath.Join(dir, "notes.txt")
	for _, f := range []string{stale, mine} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := cli(t, testHost(t), args...); code != exitSafe {
		t.Fatalf("rerun: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the previous run's timeline %s is still there (%v)", stale, err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the user's file was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		t.Error(err)
	}
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("beside the report: %v, want only the report folder", names)
	}
	file := filepath.Join(parent, "a-file")
	os.WriteFile(file, []byte("keep"), 0o644)
	code, _, stderr := cli(t, noHost(t), "report", "--out", file, "--quick")
	if code != exitUsage || !strings.Contains(stderr, "exists and is not a directory") {
		t.Errorf("--out onto a file: exit %d, %q", code, stderr)
	}
}

// TestReportOutNotAReport: 'report --out docs' once deleted
// the README's images. A folder that is not empty and holds no earlier
// report is refused before anything runs, naming the folder and --force,
// and left as it was; --force writes the report there, replacing only
// what a report writes; after that the folder is a report and reruns
// need no --force.
func TestReportOutNotAReport(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "docs")
	files := map[string]string{"README.md": "# mine", "img/diagram.png": "png", "index.html": "<p>mine</p>"}
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"report", "--out", dir, "--quick", "--seeds", "1", "--scenarios", "no-faults", "--locks", "set-nx-cad", "-j", "1"}
	code, stdout, stderr := cli(t, noHost(t), args...)
	want := fmt.Sprintf("locksim: --out: %q is not empty and holds no locksim report", dir)
	if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "--force") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 64, one line starting %q and naming --force", code, stdout, stderr, want)
	}
	for name, data := range files {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil || string(b) != data {
			t.Errorf("refused, yet %s changed: %q, %v", name, b, err)
		}
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("%d entries beside the folder, want 1: a staging folder left behind", len(ents))
	}

	if code, _, stderr := cli(t, testHost(t), append(args, "--force")...); code != exitSafe {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "README.md")); err != nil || string(b) != files["README.md"] {
		t.Errorf("--force: README.md %q, %v; other files stay", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "img", "diagram.png")); !os.IsNotExist(err) {
		t.Errorf("--force: img/ was not replaced (%v)", err)
	}
	if !reports.IsReport(dir) {
		t.Error("--force: the folder is not a report afterwards")
	}
	if code, _, stderr := cli(t, testHost(t), args...); code != exitSafe {
		t.Errorf("rerun into the report: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Errorf("rerun: %v", err)
	}
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The terminal names the cells that differ from their expectation (it
// said only how many), at most maxNamed of them.
func TestReportNamesDifferingCells(t *testing.T) {
	no, yes := false, true
	var res reports.Results
	res.Cells = append(res.Cells,
		reports.CellResult{Scenario: "pause-after-check", Lock: "fencing", Verdict: checker.VerdictUnsafe, UnsafeRuns: 3, Runs: 20, Expected: &reports.Expectation{Want: "safe"}, MatchesExpected: &no},
		reports.CellResult{Scenario: "no-faults", Lock: "fencing", Verdict: checker.VerdictSafe, Runs: 20, Expected: &reports.Expectation{Want: "safe"}, MatchesExpected: &yes})
	var b strings.Builder
	writeDiffers(&b, res)
	if b.String() != "  differs: pause-after-check × fencing: measured unsafe (3/20 runs unsafe), expected safe\n" {
		t.Errorf("named %q", b.String())
	}
	for range maxNamed + 5 {
		res.Cells = append(res.Cells, res.Cells[0])
	}
	b.Reset()
	writeDiffers(&b, res)
	if lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); len(lines) != maxNamed+1 || lines[maxNamed] != "  ... and 6 more (results.json: matches_expected false)" {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}
