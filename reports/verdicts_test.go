package reports

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/sim"
)

// TestIndexVerdicts: the index opens with one sentence per design, built
// from its cells (its TTL in seconds, how many scenarios tried it, where
// it broke), names each design's TTL in seconds under its heat-map column
// with its one-line description as the title, and reads the pause sweep
// in seconds.
func TestIndexVerdicts(t *testing.T) {
	lockIDs := []string{"set-nx-cad", "redlock", "fencing"}
	p, err := NewPlan(Options{Seeds: 1, Scenarios: []string{"no-faults", "clock-jump"}, Locks: lockIDs})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Stage(filepath.Join(t.TempDir(), "report"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Discard()
	dir := out.Dir()
	if err := p.Run(context.Background(), sim.TestBubble(t), dir, Exec{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	start, end := strings.Index(page, `<ul class="verdicts">`), strings.Index(page, `<div class="top">`)
	if start < 0 || end < start {
		t.Fatalf("index has no verdicts before the heat map")
	}
	verdicts := page[start:end]
	line := regexp.MustCompile(`<li[^>]*><a href="lock/([a-z-]+)\.html" title="[^"]+"><b>[a-z-]+</b></a> \((TTL [0-9.]+ s|no TTL)[^)]*\): <span class="v[us]">(unsafe in \d+ of \d+ scenarios tried</span> — |never unsafe in the \d+ scenarios tried</span>)`)
	got := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(verdicts, -1) {
		got[m[1]] = true
	}
	for _, id := range lockIDs {
		if !got[id] {
			t.Errorf("no verdict line for %s:\n%s", id, verdicts)
		}
	}
	for _, want := range []string{"(TTL 10 s): ", "(TTL 3 s): ", "; a client pause before its write (the pause sweep): "} {
		if !strings.Contains(verdicts, want) {
			t.Errorf("verdicts lack %q:\n%s", want, verdicts)
		}
	}
	// "Which designs survive a 2 s pause?": answered beside the verdicts,
	// before the heat map, each design once with its TTL in seconds and
	// its counts, with a link to the seconds chart and table.
	answer := regexp.MustCompile(`<p class="pause" id="pause-answer"><b>A pause of 2 s</b> \([^<]*<a href="#(fig-[a-z-]+)">every design at 0\.5 s to 30 s</a>\): .*</p>`).FindStringSubmatch(verdicts)
	if answer == nil {
		t.Fatalf("no answer to a 2 s pause beside the verdicts:\n%s", verdicts)
	}
	if !strings.Contains(page, `<h2 id="`+answer[1]+`">Violation rate vs pause length in seconds</h2>`) {
		t.Errorf("the 2 s answer links to #%s, which is not the seconds chart", answer[1])
	}
	if !regexp.MustCompile(`<span class="v[su]">(safe|unsafe)</span> \(\d+ of \d+ runs unsafe, (at most [0-9.]+% at 95%|95% interval \[[0-9.]+%, [0-9.]+%\])\): [a-z]`).MatchString(answer[0]) {
		t.Errorf("the 2 s answer gives no counts with a bound:\n%s", answer[0])
	}
	named := regexp.MustCompile(`([a-z-]+) \(TTL ([0-9.]+) s\)`).FindAllStringSubmatch(answer[0], -1)
	ttl := map[string]string{"set-nx-cad": "3", "redlock": "10", "fencing": "3"} // the catalogue's
	seen := map[string]int{}
	for _, m := range named {
		seen[m[1]]++
		if ttl[m[1]] != m[2] {
			t.Errorf("the 2 s answer gives %s a TTL of %s s, want %s s", m[1], m[2], ttl[m[1]])
		}
	}
	for _, id := range lockIDs {
		if seen[id] != 1 {
			t.Errorf("the 2 s answer names %s %d times:\n%s", id, seen[id], answer[0])
		}
	}
	rowsDefined(t, dir)
	// A 0 at the cap reads with its upper bound beside the map, not only
	// on hover.
	if zero := regexp.MustCompile(`<p class="legend small">.*A 0 is not &#34;never&#34;: at 95%, 0 of 1 runs: at most 79\.3% of runs unsafe\.`); !zero.MatchString(page) {
		t.Errorf("the heat map's legend does not say what a 0 of 1 run bounds")
	}
	for _, want := range []string{"<td class=\"num\">set-nx-cad (3 s)</td>", "<th>2 s</th>", "<th>30 s</th>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the seconds table lacks %q", want)
		}
	}
	for _, want := range []string{
		`redlock <span class="ttl">10 s</span>`, `set-nx-cad <span class="ttl">3 s</span>`, // heat-map columns
		`title="redlock (TTL 10 s): Redlock: SET NX PX`, // the column's title
		"redlock (1 TTL = 10 s)",                        // the pause sweep's table
		"In seconds: set-nx-cad (1 TTL = 3 s): ",        // and its caption
		`<dt id="g-rate">`, "per run under that scenario's injected faults",
		`<a href="#pause-answer">A 2 s pause</a>`, // one click from the first screen
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q", want)
		}
	}
}

// TestSurprises: a violation where both sides expected safe, an expected
// violation no run showed, a disagreement settled, and a cell whose
// faults never bit are each headlined; a cell as both sides expected is
// not.
func TestSurprises(t *testing.T) {
	both := func(v string) *Expectation { return &Expectation{Kleppmann: v, Antirez: v, Agreed: v} }
	res := Results{Cells: []CellResult{
		{Scenario: "split-brain", Lock: "fencing", Runs: 20, UnsafeRuns: 7, Verdict: checker.VerdictUnsafe,
			Expected: &Expectation{Kleppmann: "safe", Antirez: "safe", Agreed: "safe", Want: "unsafe", Note: "The token counter lives on the lock's primary.  A promoted replica repeats a token."}},
		{Scenario: "drift", Lock: "redlock", Runs: 20, Verdict: checker.VerdictSafe, Expected: both("unsafe")},
		{Scenario: "clock-jump", Lock: "redlock", Runs: 20, UnsafeRuns: 18, Verdict: checker.VerdictUnsafe, Expected: &Expectation{Kleppmann: "unsafe", Antirez: "safe"}},
		{Scenario: "failover", Lock: "redislock", Runs: 20, Verdict: checker.VerdictSafe, Faults: CellFaults{Injected: 20}, Expected: both("unsafe")},
		{Scenario: "no-faults", Lock: "set-nx-cad", Runs: 20, Verdict: checker.VerdictSafe, Expected: both("safe")},
	}}
	s := (&Plan{}).surprises(res)
	if len(s.Neither) != 1 || !strings.Contains(s.Neither[0].Text, "split-brain × fencing: unsafe in 35%") ||
		!strings.HasSuffix(s.Neither[0].Text, "(the scenario file expects it: The token counter lives on the lock's primary.)") {
		t.Errorf("neither: %+v", s.Neither)
	}
	if len(s.NotSeen) != 1 || !strings.HasPrefix(s.NotSeen[0].Text, "drift × redlock: safe") {
		t.Errorf("not seen: %+v", s.NotSeen)
	}
	if len(s.Sided) != 1 || !strings.Contains(s.Sided[0].Text, "as Kleppmann expected, not antirez") {
		t.Errorf("sided: %+v", s.Sided)
	}
	if len(s.Untested) != 1 || s.Untested[0].Text != "failover × redislock (no fault bit)" {
		t.Errorf("untested: %+v", s.Untested)
	}
}

// TestBlurbs: every design in the catalogue has its line, and no line
// names a design the catalogue lacks.
func TestBlurbs(t *testing.T) {
	ids := catalogue.AllIDs()
	for _, id := range ids {
		info, _ := catalogue.Get(id)
		if _, ok := blurbs[id]; !ok && !info.Canary {
			t.Errorf("%s has no line in blurbs", id)
		}
	}
	for id := range blurbs {
		if _, err := catalogue.Get(id); err != nil {
			t.Errorf("blurbs names %s, not in the catalogue", id)
		}
	}
}

// TestGlossed: the first use of each term the glossary explains links to
// it, the rest of the text stays escaped text.
func TestGlossed(t *testing.T) {
	got := string(glossed("../index.html", "S3 & S14 <b>: the bubble's clock, one bubble; real arm, no fault bit, A5; 5 pp"))
	want := `<a class="gloss" href="../index.html#g-rows">S3</a> &amp; S14 &lt;b&gt;: the <a class="gloss" href="../index.html#g-bubble">bubble</a>&#39;s clock, one bubble; ` +
		`<a class="gloss" href="../index.html#g-real">real arm</a>, no <a class="gloss" href="../index.html#g-bit">fault bit</a>, <a class="gloss" href="../index.html#g-roles">A5</a>; 5 <a class="gloss" href="../index.html#g-pp">pp</a>`
	if got != want {
		t.Errorf("glossed:\n%s\nwant\n%s", got, want)
	}
	ids := map[string]bool{}
	for _, e := range (&Plan{}).glossary() {
		ids[e.ID] = true
	}
	for _, term := range []string{"S1", "A1", "bubble", "real arm", "unfired", "careful", "pp", "faults bit"} {
		if !ids[glossID(term)] {
			t.Errorf("%s links to g-%s, which the glossary lacks", term, glossID(term))
		}
	}
}
