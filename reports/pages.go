package reports

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/locks/catalogue"
)

// The report answers first: index.html opens with what it found and a
// heat map of every cell (rates as colour, labels sticky, designs grouped
// by family), and every lock and every scenario has its own page
// (lock/ID.html, scenario/ID.html) reachable from it.

// families group the heat map's columns, in order. A lock not listed
// falls in "other".
var families = []struct {
	Name  string
	Locks []string
}{
	{"single node", []string{"setnx-del", "setnx-expire", "set-nx-del", "getset-expiry", "set-nx-getdel", "set-nx-cad", "spin-retry", "watchdog", "redisson-lock", "redisson-rw", "redisson-fair", "primary-replica"}},
	{"Redlock family", []string{"redlock", "redsync", "redisson-multilock"}},
	{"fencing", []string{"fencing", "fencing-strict", "token-cas", "version-cas"}},
	{"consensus", []string{"zk-lock", "zk-fencing"}},
	{"libraries", []string{"redislock", "go-zero", "gocron"}},
}

// familyOf names a lock's family.
func familyOf(id string) string {
	for _, f := range families {
		if slices.Contains(f.Locks, id) {
			return f.Name
		}
	}
	return "other"
}

// heatMap is the index's matrix: one row a scenario, one column a lock,
// the columns grouped by family.
type heatMap struct {
	Groups  []heatGroup
	Columns []heatColumn
	Rows    []heatRow
	// ZeroBound says, in the legend beside the map, what a 0 means: the
	// 95% upper bound of a cell with no unsafe run, by its run count ("0
	// of 20 runs: at most 16.1%"), since the cell shows only the 0.
	ZeroBound string
}

type heatGroup struct {
	Name string
	Span int
}

// heatColumn is a lock's column: its TTL in seconds under its name
// (the pause sweep and the scenario files count in TTLs), and its line
// (blurbs.go) as the header's title.
type heatColumn struct{ ID, Href, TTL, Title string }

type heatRow struct {
	ID, Label, Href string
	Cells           []heatCell
}

// heatCell is one cell: its colour class, a short text (the unsafe
// percentage), and the rest in its title (hover) and on its pages.
type heatCell struct {
	Empty              bool
	Class, Text, Title string
	Href               string
}

// findings is the index's opening: what the report found, in sentences,
// and the cells that differ from their expectation, by name.
type findings struct {
	Lines  []string
	Differ []link
	More   int // differing cells past maxDiffer, not linked here
}

// maxDiffer bounds the differing cells the findings link by name.
const maxDiffer = 12

type link struct{ Text, Href string }

// lockPage is lock/ID.html: where a lock breaks and how often.
type lockPage struct {
	Root                                  string // "../": the report folder from the page
	ID, Family, Design, Source, Weakness  string
	Summary                               string
	Blurb, TTL                            string // its line (blurbs.go) and lease ("TTL 10 s")
	Rows                                  []lockPageRow
	Worst                                 *timelineView
	WorstScenario, WorstRate, WorstAnchor string
	ScenarioCount, UnsafeCount, SafeCount int
}

type lockPageRow struct {
	Scenario, Href                      string
	Verdict, Class, Rate, Expected      string
	Marks, Story, Repro, Faults, Length string
}

// scenarioPage is scenario/ID.html: one scenario's table, chart and
// counterexamples.
type scenarioPage struct {
	Root string
	scenarioView
	Prev, Next *link
}

// columnOrder is the heat map's columns: by family, then the report's
// own order within it.
func columnOrder(ids []string) []string {
	out := slices.Clone(ids)
	rank := func(id string) int {
		for i, f := range families {
			if slices.Contains(f.Locks, id) {
				return i*100 + slices.Index(f.Locks, id)
			}
		}
		return len(families) * 100
	}
	slices.SortStableFunc(out, func(a, b string) int { return rank(a) - rank(b) })
	return out
}

// heatClass is a cell's colour: the verdict, shaded by the unsafe rate,
// framed when it differs from the expectation.
func heatClass(j *CellResult) string {
	c := string(j.Verdict)
	switch {
	case j.Verdict == checker.VerdictUnsafe:
		p := 0.0
		if j.Runs > 0 {
			p = float64(j.UnsafeRuns) / float64(j.Runs)
		}
		c = fmt.Sprintf("u%d", min(5, 1+int(p*5)))
	case j.Verdict == checker.VerdictSafe && j.Untested() != "":
		c = "untested"
	}
	return c + frame(j)
}

// frame is the class a cell's frame adds: " unseen" for an expected
// violation no run showed, " miss" for a verdict that differs from the
// expectation, "" otherwise.
func frame(j *CellResult) string {
	switch {
	case unseen(j) != "":
		return " unseen"
	case j.Missed():
		return " miss"
	}
	return ""
}

// heatText is a cell's text: the unsafe percentage, rounded ("<1" below
// one per cent but above zero).
func heatText(j *CellResult) string {
	if j.Runs == 0 {
		return "n/a"
	}
	p := 100 * float64(j.UnsafeRuns) / float64(j.Runs)
	if p > 0 && p < 1 {
		return "<1"
	}
	return fmt.Sprintf("%.0f", math.Round(p))
}

func (p *Plan) heat(res map[string]*CellResult) heatMap {
	var h heatMap
	zeros := map[int]int{} // run count → cells with no unsafe run
	cols := columnOrder(p.lockColumns())
	ttls := p.lockTTLs()
	for _, id := range cols {
		t := ttls[id]
		h.Columns = append(h.Columns, heatColumn{ID: id, Href: lockHref(id), TTL: t.Short(), Title: id + " (" + t.String() + "): " + blurb(id)})
		f := familyOf(id)
		if n := len(h.Groups); n > 0 && h.Groups[n-1].Name == f {
			h.Groups[n-1].Span++
		} else {
			h.Groups = append(h.Groups, heatGroup{Name: f, Span: 1})
		}
	}
	for _, s := range p.scenarioOrder() {
		label := s.ID
		if row := debateRow(s); row != "" {
			label += " (" + row + ")"
		}
		r := heatRow{ID: s.ID, Label: label, Href: scenarioHref(s.ID)}
		for _, id := range cols {
			j := res[anchor(s.ID, id)]
			if p.cell(s.ID, id) == nil || j == nil {
				why := whyNot(s, id)
				if why == "" {
					why = "not in this report"
				}
				r.Cells = append(r.Cells, heatCell{Empty: true, Title: s.ID + " × " + id + ": " + why})
				continue
			}
			title := fmt.Sprintf("%s × %s: %s, %s", s.ID, id, j.Verdict, stats.Rate{K: j.UnsafeRuns, N: j.Runs})
			if e := expectShort(j.Expected); e != "" {
				title += "; expected " + e
			}
			if u := unseen(j); u != "" {
				title += "; " + u
			} else if j.Missed() {
				title += "; differs from the expectation"
			}
			if m := marks(j); m != "" {
				title += "; " + m
			}
			text := heatText(j)
			if j.Verdict == checker.VerdictSafe && j.Untested() != "" {
				text = "n/t" // not "0": nothing struck (the glossary's "untested")
			}
			r.Cells = append(r.Cells, heatCell{Class: heatClass(j), Text: text, Title: title, Href: scenarioHref(s.ID) + "#" + anchor(s.ID, id)})
			if j.UnsafeRuns == 0 && j.Runs > 0 {
				zeros[j.Runs]++
			}
		}
		h.Rows = append(h.Rows, r)
	}
	h.ZeroBound = zeroBound(zeros)
	return h
}

// zeroBound is the legend's reading of a 0: for the run counts of the
// cells with no unsafe run, most cells first (three at most), the 95%
// upper bound on the unsafe rate ("" when no cell is 0).
func zeroBound(zeros map[int]int) string {
	ns := slices.Collect(maps.Keys(zeros))
	slices.SortFunc(ns, func(a, b int) int { return cmp.Or(cmp.Compare(zeros[b], zeros[a]), cmp.Compare(a, b)) })
	var parts []string
	for i, n := range ns {
		if i == 3 {
			parts = append(parts, "other counts: hover a cell")
			break
		}
		_, hi := stats.Wilson(0, n)
		parts = append(parts, fmt.Sprintf("0 of %d runs: at most %s", n, pct(hi)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "A 0 is not \"never\": at 95%, " + strings.Join(parts, "; ") + " of runs unsafe."
}

func lockHref(id string) string     { return "lock/" + id + ".html" }
func scenarioHref(id string) string { return "scenario/" + id + ".html" }

// findings says what the report found: its size, the verdicts, the locks
// never broken and the ones broken most widely, and the cells that differ
// from their expectation.
func (p *Plan) findings(res Results) findings {
	var f findings
	unsafe, missed := res.Unsafe()
	count := map[checker.Verdict]int{}
	untested := 0
	type tally struct{ unsafe, cells int }
	byLock := map[string]*tally{}
	for i := range res.Cells {
		c := &res.Cells[i]
		count[c.Verdict]++
		if c.Verdict == checker.VerdictSafe && c.Untested() != "" {
			untested++
		}
		t := byLock[c.Lock]
		if t == nil {
			t = &tally{}
			byLock[c.Lock] = t
		}
		t.cells++
		if c.Verdict == checker.VerdictUnsafe {
			t.unsafe++
		}
		if c.Missed() && len(f.Differ) == maxDiffer {
			f.More++
		} else if c.Missed() {
			f.Differ = append(f.Differ, link{c.Scenario + " × " + c.Lock, scenarioHref(c.Scenario) + "#" + anchor(c.Scenario, c.Lock)})
		}
	}
	seeds := plural(p.seeds, "seed") + " each (the same seeds for every lock)"
	if !p.opt.Fixed {
		runs := 0
		for _, c := range res.Cells {
			runs += c.Runs
		}
		seeds = fmt.Sprintf("seeds 1, 2, 3, … each until its result is settled, at most %d (%s in the cells, the sweeps and charts not counted; the runs column says how many and why a cell stopped)", p.seeds, plural(runs, "run"))
	}
	f.Lines = append(f.Lines, fmt.Sprintf("%s × %s: %s, %s.",
		plural(len(p.scenarioOrder()), "scenario"), plural(len(p.lockColumns()), "lock"), plural(len(res.Cells), "cell"), seeds))
	line := fmt.Sprintf("%s unsafe, %s safe", plural(unsafe, "cell"), plural(count[checker.VerdictSafe]-untested, "cell"))
	if untested > 0 {
		line += fmt.Sprintf(", %d safe but untested (yellow: no fault bit, or the lock never read the clock set wrong)", untested)
	}
	if n := count[checker.VerdictLiveness]; n > 0 {
		line += fmt.Sprintf(", %d failing liveness (no client got the lock after the heal)", n)
	}
	if n := count[checker.VerdictUnknown]; n > 0 {
		line += fmt.Sprintf(", %d unknown", n)
	}
	f.Lines = append(f.Lines, line+".")
	var never, worst []string
	most := 0
	for _, t := range byLock {
		most = max(most, t.cells)
	}
	for _, id := range columnOrder(p.lockColumns()) {
		if t := byLock[id]; t != nil && t.unsafe == 0 {
			// With its coverage: a design tried in 2 scenarios is not
			// one tried in 18.
			if t.cells < fewScenarios(most) {
				never = append(never, fmt.Sprintf("%s (tried in %s only)", id, plural(t.cells, "scenario")))
			} else {
				never = append(never, fmt.Sprintf("%s (in %s)", id, plural(t.cells, "scenario")))
			}
		}
	}
	ids := columnOrder(p.lockColumns())
	slices.SortStableFunc(ids, func(a, b string) int {
		ta, tb := byLock[a], byLock[b]
		if ta == nil || tb == nil {
			return 0
		}
		return tb.unsafe - ta.unsafe
	})
	for _, id := range ids[:min(4, len(ids))] {
		if t := byLock[id]; t != nil && t.unsafe > 0 {
			worst = append(worst, fmt.Sprintf("%s (unsafe in %d of its %d scenarios)", id, t.unsafe, t.cells))
		}
	}
	if len(never) > 0 {
		f.Lines = append(f.Lines, "Never unsafe in any scenario here: "+strings.Join(never, ", ")+".")
	}
	if len(worst) > 0 {
		f.Lines = append(f.Lines, "Broken most widely: "+strings.Join(worst, ", ")+".")
	}
	if missed == 0 {
		f.Lines = append(f.Lines, "Every cell matches what its scenario file expects.")
	} else {
		f.Lines = append(f.Lines, fmt.Sprintf("%s from the expectation of %s (framed on the map: solid where the verdict differs, dashed where an expected violation was not seen; more seeds tell a rare violation from a real disagreement):",
			plural(missed, "cell differs", "cells differ"), map[bool]string{true: "its scenario file", false: "their scenario files"}[missed == 1]))
	}
	return f
}

// plural writes n and the noun, singular for one: plural(1, "cell") is
// "1 cell", plural(2, "cell") "2 cells"; a third argument is the plural
// form when it is not the noun plus "s".
func plural(n int, noun string, pl ...string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	if len(pl) > 0 {
		return fmt.Sprintf("%d %s", n, pl[0])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// lockPages are the locks' pages, in column order.
func (p *Plan) lockPages(res map[string]*CellResult, v view) []lockPage {
	timelines := map[string]*timelineView{}
	for i := range v.Scenarios {
		for k := range v.Scenarios[i].Timelines {
			t := &v.Scenarios[i].Timelines[k]
			timelines[anchor(t.Scenario, t.Lock)] = t
		}
	}
	var out []lockPage
	ttls := p.lockTTLs()
	for _, id := range columnOrder(p.lockColumns()) {
		info, _ := catalogue.Get(id)
		lp := lockPage{Root: "../", ID: id, Family: familyOf(id), Design: oneLine(info.Design), Source: oneLine(info.Source), Weakness: oneLine(info.Weakness),
			Blurb: blurb(id), TTL: ttls[id].String()}
		worst := -1.0
		for _, s := range p.scenarioOrder() {
			c := p.cell(s.ID, id)
			j := res[anchor(s.ID, id)]
			if c == nil || j == nil {
				continue
			}
			lp.ScenarioCount++
			row := lockPageRow{Scenario: s.ID, Href: "../" + scenarioHref(s.ID) + "#" + anchor(s.ID, id), Verdict: string(j.Verdict), Class: heatClass(j),
				Rate: stats.Rate{K: j.UnsafeRuns, N: j.Runs}.String(), Expected: expectShort(j.Expected), Marks: marks(j), Story: j.Story,
				Faults: fmt.Sprintf("%d/%d", j.Faults.Bit, j.Faults.Injected), Length: fmt.Sprintf("%v + %v", c.SafetyPhase, c.LivenessPhase)}
			if j.FirstUnsafeSeed != nil {
				row.Repro = j.Repro
			}
			switch j.Verdict {
			case checker.VerdictUnsafe:
				lp.UnsafeCount++
			case checker.VerdictSafe:
				lp.SafeCount++
			}
			if r := j.UnsafeRate; j.Verdict == checker.VerdictUnsafe && r > worst {
				if t := timelines[anchor(s.ID, id)]; t != nil {
					worst, lp.Worst, lp.WorstScenario = r, t, s.ID
					lp.WorstRate, lp.WorstAnchor = stats.Rate{K: j.UnsafeRuns, N: j.Runs}.String(), row.Href
				}
			}
			lp.Rows = append(lp.Rows, row)
		}
		// Worst first: by unsafe rate, then the report's scenario order.
		slices.SortStableFunc(lp.Rows, func(a, b lockPageRow) int {
			ra, rb := res[anchor(a.Scenario, id)].UnsafeRate, res[anchor(b.Scenario, id)].UnsafeRate
			switch {
			case ra > rb:
				return -1
			case ra < rb:
				return 1
			}
			return 0
		})
		var broke []string
		for _, r := range lp.Rows {
			if r.Verdict == string(checker.VerdictUnsafe) {
				j := res[anchor(r.Scenario, id)]
				broke = append(broke, fmt.Sprintf("%s (%s)", r.Scenario, heatText(j)+"%"))
			}
		}
		switch {
		case len(broke) == 0:
			lp.Summary = fmt.Sprintf("%s: no run was unsafe in any of its %s.", id, plural(lp.ScenarioCount, "scenario"))
		default:
			lp.Summary = fmt.Sprintf("%s is unsafe in %d of its %s: %s.", id, len(broke), plural(lp.ScenarioCount, "scenario"), strings.Join(broke, ", "))
		}
		out = append(out, lp)
	}
	return out
}

// scenarioPages are the scenarios' pages, each linking its neighbours.
func scenarioPages(v view) []scenarioPage {
	out := make([]scenarioPage, len(v.Scenarios))
	for i, s := range v.Scenarios {
		out[i] = scenarioPage{Root: "../", scenarioView: s}
		if i > 0 {
			out[i].Prev = &link{v.Scenarios[i-1].ID, v.Scenarios[i-1].ID + ".html"}
		}
		if i+1 < len(v.Scenarios) {
			out[i].Next = &link{v.Scenarios[i+1].ID, v.Scenarios[i+1].ID + ".html"}
		}
	}
	return out
}
