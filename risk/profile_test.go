package risk

import (
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
)

// cited is a source text that names where a number comes from: a paper
// ("et al."), a site or document (a domain, an option or file name) with
// a year or a quotation, or the word "assumption".
var cited = regexp.MustCompile(`assumption|et al\.|ntp\.org|redis\.io|OpenJDK|go\.dev|reports/perhour\.go`)

// Every number of the shipped profile has a source or says "assumption":
// each class's rate and size sources are checked, and each number the size
// gives (min, alpha, median, sigma...) must appear in its source or the
// source must say assumption for the class's size.
func TestDefaultProfileEveryNumberSourced(t *testing.T) {
	p, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Classes) < 7 {
		t.Fatalf("%d classes; the default covers pauses, steps, drift, crashes, failovers, partitions and delays", len(p.Classes))
	}
	kinds := map[Kind]bool{}
	for _, c := range p.Classes {
		kinds[c.Kind] = true
		for what, src := range map[string]string{"rate": c.Source.Rate, "size": c.Source.Size} {
			if !cited.MatchString(src) {
				t.Errorf("class %s: source.%s %q cites nothing and does not say assumption", c.ID, what, src)
			}
		}
		// Each number of the size must be named in the size's source,
		// or the size source must call that part an assumption.
		for _, n := range sizeNumbers(c.Size) {
			if !strings.Contains(c.Source.Size, n) && !strings.Contains(c.Source.Size, "assumption") {
				t.Errorf("class %s: size number %s is neither in source.size nor called an assumption", c.ID, n)
			}
		}
		if c.DownAfter != "" && !strings.Contains(c.Source.Size+c.Source.Rate, "down-after") {
			t.Errorf("class %s: down_after %s has no source", c.ID, c.DownAfter)
		}
	}
	if len(kinds) != len(Kinds()) {
		t.Errorf("default profile covers %d kinds of %d", len(kinds), len(Kinds()))
	}
}

// sizeNumbers are the numbers a size distribution states, as its source
// would write them ("200 ms" for 200ms, "500 ppm").
func sizeNumbers(d Dist) []string {
	spaced := func(s string) string { return regexp.MustCompile(`^([0-9.]+)([a-z]+)$`).ReplaceAllString(s, "$1 $2") }
	var out []string
	switch {
	case d.Fixed != "":
		out = append(out, spaced(d.Fixed))
	case d.Pareto != nil:
		out = append(out, spaced(d.Pareto.Min))
	case d.Lognormal != nil:
		out = append(out, spaced(d.Lognormal.Median))
	case d.LogUniform != nil:
		out = append(out, spaced(d.LogUniform.Min), spaced(d.LogUniform.Max))
	}
	return out
}

// The test above fails on a profile with an unsourced number.
func TestSourcedRuleCatchesAnUnsourcedNumber(t *testing.T) {
	p, err := Decode([]byte(`id: x
classes:
  - id: p
    kind: pause
    per_hour: 1
    size: {pareto: {min: 300ms, alpha: 1.5}}
    source: {rate: "Smith 2020", size: "min 200 ms: G1"}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Classes[0]
	if cited.MatchString(c.Source.Rate) {
		t.Errorf("rate source %q passes the citation rule", c.Source.Rate)
	}
	for _, n := range sizeNumbers(c.Size) {
		if strings.Contains(c.Source.Size, n) {
			t.Errorf("size number %s found in %q", n, c.Source.Size)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	head := "id: x\nclasses:\n  - id: p\n"
	src := "    source: {rate: assumption, size: assumption}\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown top field", "id: x\nfoo: 1\nclasses: []\n", "foo"},
		{"unknown class field", head + "    kind: pause\n    per_hour: 1\n    size: {fixed: 1s}\n    color: red\n" + src, "color"},
		{"no classes", "id: x\nclasses: []\n", "classes: none"},
		{"bad id", "id: X Y\nclasses: []\n", "id \"X Y\""},
		{"bad kind", head + "    kind: meteor\n    per_hour: 1\n    size: {fixed: 1s}\n" + src, "kind: \"meteor\" is not one of"},
		{"both rates", head + "    kind: pause\n    per_hour: 1\n    per_year: 3\n    size: {fixed: 1s}\n" + src, "give one, not both"},
		{"no rate", head + "    kind: pause\n    size: {fixed: 1s}\n" + src, "required"},
		{"negative rate", head + "    kind: pause\n    per_hour: -1\n    size: {fixed: 1s}\n" + src, "positive"},
		{"two sizes", head + "    kind: pause\n    per_hour: 1\n    size: {fixed: 1s, empirical: [1s]}\n" + src, "exactly one"},
		{"no size", head + "    kind: pause\n    per_hour: 1\n" + src, "size.none"},
		{"bad duration", head + "    kind: pause\n    per_hour: 1\n    size: {fixed: soon}\n" + src, "size.fixed: \"soon\" is not a duration"},
		{"ppm on a pause", head + "    kind: pause\n    per_hour: 1\n    size: {fixed: 5ppm}\n" + src, "not a duration"},
		{"duration on drift", head + "    kind: clock-drift\n    per_hour: 1\n    size: {fixed: 5s}\n" + src, "a rate in ppm"},
		{"alpha", head + "    kind: pause\n    per_hour: 1\n    size: {pareto: {min: 1s, alpha: 0}}\n" + src, "pareto.alpha"},
		{"loguniform order", head + "    kind: pause\n    per_hour: 1\n    size: {loguniform: {min: 2s, max: 1s}}\n" + src, "not above min"},
		{"empirical item", head + "    kind: pause\n    per_hour: 1\n    size: {empirical: [1s, x]}\n" + src, "empirical[1]"},
		{"no rate source", head + "    kind: pause\n    per_hour: 1\n    size: {fixed: 1s}\n    source: {size: assumption}\n", "source.rate: required"},
		{"persistence on a pause", head + "    kind: pause\n    persistence: none\n    per_hour: 1\n    size: {fixed: 1s}\n" + src, "only a crash"},
		{"bad persistence", head + "    kind: crash\n    persistence: sometimes\n    per_hour: 1\n    size: {fixed: 1s}\n" + src, "not one of none"},
		{"down_after on a crash", head + "    kind: crash\n    down_after: 5s\n    per_hour: 1\n    size: {fixed: 1s}\n" + src, "only a failover"},
		{"twice", head + "    kind: pause\n    per_hour: 1\n    size: {fixed: 1s}\n" + src + "  - id: p\n    kind: pause\n    per_hour: 1\n    size: {fixed: 1s}\n" + src, "twice"},
	} {
		_, err := Decode([]byte(tc.yaml), "f.yaml")
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "f.yaml") {
			t.Errorf("%s: error %q, want one naming f.yaml and containing %q", tc.name, err, tc.want)
		}
	}
}

// Each distribution's strata weights add to 1 and a draw in a stratum
// lies in it.
func TestDistributionsStrata(t *testing.T) {
	for _, size := range []string{"{fixed: 2s}", "{empirical: [100ms, 3s, 3s, 40s]}", "{pareto: {min: 200ms, alpha: 1.5}}",
		"{lognormal: {median: 5s, sigma: 1}}", "{loguniform: {min: 1s, max: 60s}}"} {
		p, err := Decode([]byte("id: x\nclasses:\n  - id: p\n    kind: pause\n    per_hour: 1\n    size: "+size+"\n    source: {rate: assumption, size: assumption}\n"), "f")
		if err != nil {
			t.Fatal(err)
		}
		c := p.Classes[0]
		o := Options{TTL: 10e9, Profile: p}
		sum := 0.0
		for _, s := range o.strata(c) {
			sum += s.Weight
			if s.Weight < minWeight {
				continue
			}
			a, b := o.base_(c, s.FromTTL), math.Inf(1)
			if s.ToTTL != nil {
				b = o.base_(c, *s.ToTTL)
			}
			for _, u := range []float64{0, 0.3, 0.999999} {
				x := c.Size.d.Draw(a, b, u)
				if !(x > a || (x == a && a == 0)) || x > b {
					t.Errorf("%s: draw %v in stratum (%v, %v] out of it", size, x, a, b)
				}
			}
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("%s: strata weights add to %v", size, sum)
		}
	}
}

// The survival functions of the report's former per-hour model, in words:
// Pareto from 500 ms, α 1.5: 1 in 8 lasts 2 s or more; from 128 ms, α 1:
// 1 in 10 is 1.28 s or more; log-uniform 1 s..60 s: none past 60 s.
func TestSurvivalFunctions(t *testing.T) {
	for _, tc := range []struct{ got, want float64 }{
		{ParetoSurvival(0.5, 1.5, 2), 0.125},
		{ParetoSurvival(0.128, 1, 1.28), 0.1},
		{ParetoSurvival(0.5, 1.5, 0.1), 1},
		{LogUniformSurvival(1, 60, 60), 0},
		{LogUniformSurvival(1, 60, math.Sqrt(60)), 0.5},
		{LogUniformSurvival(1, 60, 0.5), 1},
	} {
		if math.Abs(tc.got-tc.want) > 1e-12 {
			t.Errorf("got %v, want %v", tc.got, tc.want)
		}
	}
}

// A committed gctrace imports to a pause class at the trace's rate, with
// each stop-the-world phase a size, and the profile written decodes back.
func TestFromGCTrace(t *testing.T) {
	f, err := os.Open("testdata/gctrace.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, skipped, err := FromGCTrace(f, "gctrace.txt")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Classes[0]
	if skipped != 2 || c.Kind != Pause || len(c.Size.Empirical) != 10 || math.Abs(c.PerHour-10/7.2*3600) > 1e-9 {
		t.Errorf("skipped %d, class %+v", skipped, c)
	}
	if s := c.Size.d.Survival(0.0026); s != 0 { // the longest phase is 2.6 ms
		t.Errorf("P(pause > 2.6ms) = %v", s)
	}
	if !strings.Contains(c.Source.Size, "VM's stolen time") {
		t.Errorf("the source does not say what a gctrace cannot see: %q", c.Source.Size)
	}
	var b strings.Builder
	if err := p.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	back, err := Decode([]byte(b.String()), "round.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if back.Classes[0].PerHour != c.PerHour || len(back.Classes[0].Size.Empirical) != 10 {
		t.Errorf("round trip: %+v", back.Classes[0])
	}
	if _, _, err := FromGCTrace(strings.NewReader("nothing here\n"), "empty.txt"); err == nil || !strings.Contains(err.Error(), "empty.txt: no gctrace lines") {
		t.Errorf("a log without gctrace lines: %v", err)
	}
}

// A committed chrony log imports its forward steps (the backward one left
// out) at the log's rate; a committed Sentinel log its failover at the
// log's rate with the old primary's downtime; both write profiles that
// decode back.
func TestFromChronyAndSentinel(t *testing.T) {
	open := func(name string) *os.File {
		f, err := os.Open("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	p, backward, err := FromChrony(open("chrony.log"), "chrony.log")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Classes[0]
	span := 10 * 24 // Oct 20 08:00:01 to Oct 30 08:00:01, hours
	if backward != 1 || c.Kind != ClockStep || strings.Join(c.Size.Empirical, " ") != "212345us 4005564us" || math.Abs(c.PerYear-2/(float64(span)/hoursPerYear)) > 1e-6 {
		t.Errorf("chrony: backward %d, class %+v", backward, c)
	}
	s, open2, err := FromSentinel(open("sentinel.log"), "sentinel.log")
	if err != nil {
		t.Fatal(err)
	}
	f := s.Classes[0]
	// One failover (the second +sdown healed without one); the old
	// primary was down from 04:10:02.5 to 04:11:17.5: 75 s.
	if open2 != 0 || f.Kind != Failover || strings.Join(f.Size.Empirical, " ") != "1m15s" || math.Abs(f.PerYear-1/((60*24+45.0/3600)/hoursPerYear)) > 1e-9 {
		t.Errorf("sentinel: open %d, class %+v", open2, f)
	}
	for _, pr := range []*Profile{p, s} {
		var b strings.Builder
		if err := pr.WriteYAML(&b); err != nil {
			t.Fatal(err)
		}
		if _, err := Decode([]byte(b.String()), "round.yaml"); err != nil {
			t.Errorf("%v\n%s", err, b.String())
		}
	}
	if _, _, err := FromSentinel(strings.NewReader("1:X 01 Nov 2026 10:00:00.000 # +monitor master m 10.0.0.1 6379 quorum 2\n"), "quiet.log"); err == nil || !strings.Contains(err.Error(), "no \"+switch-master\"") {
		t.Errorf("a log without failovers: %v", err)
	}
	if _, _, err := FromChrony(strings.NewReader("Oct 20 08:00:01 n chronyd[1]: hello\n"), "quiet.log"); err == nil || !strings.Contains(err.Error(), "no forward") {
		t.Errorf("a log without steps: %v", err)
	}
}
