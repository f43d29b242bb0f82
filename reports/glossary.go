package reports

import (
	"cmp"
	"fmt"
	htmltemplate "html/template"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/locksim/locksim/scenarios"
)

// glossEntry is one term of the index's glossary (id "g-"+ID), which the
// report's shorthand links to.
type glossEntry struct{ ID, Term, Text string }

// glossHref is a term's place on the index, from the index.
func glossHref(id string) string { return "#g-" + id }

// glossary explains the shorthand the report's pages use. The debate's
// rows and roles are docs/DEBATE.md's ("The scenarios and their agreed
// outcomes"); every row a built-in scenario measures is listed with its
// scenarios, in this report or not (a page may name a row, as S5's notes
// name S14, whose scenarios a report of some --scenarios leaves out).
func (p *Plan) glossary() []glossEntry {
	order, rows := debateRows()
	in := map[string]bool{}
	for _, s := range p.scenarioOrder() {
		in[s.ID] = true
	}
	var named []string
	for _, r := range order {
		var ids []string
		for _, id := range rows[r] {
			if !in[id] {
				id += " (not in this report)"
			}
			ids = append(ids, id)
		}
		named = append(named, r+": "+strings.Join(ids, ", "))
	}
	srows := "A row of the debate's table of scenarios and agreed outcomes (docs/DEBATE.md): the scenario after a row label measures it. The rows: " + strings.Join(named, "; ") + "."
	return []glossEntry{
		{"rows", rowsTerm(order), srows},
		{"roles", "A1–A6", "The debate's designs, as a scenario file's expect: role names them: A1 a single node (set-nx-cad), A2 a primary with an async replica and failover (primary-replica), A3 Redlock (redlock), A4 Redlock with a delayed restart or fsync always, A5 a lock plus a monotonic fencing token (fencing, fencing-strict, zk-fencing), A6 antirez's random token compared and set at the storage (token-cas)."},
		{"expect", "K, A, =, sim", "What the scenario file expects of a cell: K = Kleppmann's view, A = antirez's, = the outcome both accept, sim = what the simulation is expected to measure where that differs (the file's note says why). \"K -\" or \"A -\": that side says nothing on it."},
		{"rate", "unsafe %", "Of the cell's runs, the share in which the lock's claim broke at least once. Each run is one simulated incident with the scenario's faults injected, so the rate is conditional on those faults: it is not a rate per hour of operation (the per-year chart estimates that). In brackets: the 95% Wilson score interval."},
		{"bit", "faults bit", "A fault bit when it struck while it could matter: a pause of a holder, a crash or clock jump of a node holding a live key, a partition that carried the lock's traffic. \"Injected\" counts every fault, \"reached\" those that reached the code under test."},
		{"untested", "untested (n/t)", "A safe cell that did not test its scenario: none of its faults bit in any run (\"no fault bit\"), or its clients' clocks were set wrong and the lock never read them (\"client clock not reached\"). Its 0% says nothing about the fault."},
		{"ownership", "ownership only", "An unsafe run with no double hold and the resource intact, in which a client deleted or re-timed the key while another held it."},
		{"liveness", "liveness", "No client got the lock after the faults healed (or a fair lock starved a client)."},
		{"pp", "pp", "Percentage points: an interval of ±5 pp around 40% runs from 35% to 45%."},
		{"unfired", "unfired, short", "Of a targeted pause: unfired, it never fired (the lock never reached its point while it waited); short, it did not run in full inside the safety phase (the heal cut it, or it never fired). The pause sweeps (one pause a run) leave a short run out: it did not test the pause asked for. The curves count a run as short when any of its pauses was, count it in the rate, and give beside it how many of the runs' faults bit: a run whose last pause the heal cut has still tested the pauses before it."},
		{"careful", "(careful)", "A curve's holders that would outlast their lease and stop at the end of the validity their own clock shows: only the lock's own drift allowance protects them."},
		{"bubble", "bubble", "The simulated world a run plays in (Go's testing/synctest bubble): one fake clock for all its goroutines, so a library that reads time.Now sees the world's time, not a client's skewed clock."},
		{"real", "real arm", "The same scenarios run against real processes (redis-server, ZooKeeper, etcd) on loopback instead of the simulator (docs/REAL.md): not replayable by seed."},
		{"ttl", "TTL", "The lease a design's source uses, in seconds beside its name; a scenario file may set another for a lock (its params: block). A * after it under a heat-map column: some scenarios set another (hover the column). The pause sweep and the scenario files count durations in multiples of it."},
	}
}

// debateRows are the debate's rows the built-in scenarios measure, in
// order (S1, S2, ...), each with its scenarios.
func debateRows() ([]string, map[string][]string) {
	var scens []scenarios.Scenario
	for _, id := range scenarios.IDs() {
		if s, err := scenarios.Get(id); err == nil && debateRow(s) != "" {
			scens = append(scens, s)
		}
	}
	slices.SortStableFunc(scens, func(a, b scenarios.Scenario) int {
		return cmp.Or(cmp.Compare(debateRank(a), debateRank(b)), cmp.Compare(a.ID, b.ID))
	})
	rows := map[string][]string{}
	var order []string
	for _, s := range scens {
		r := debateRow(s)
		if rows[r] == nil {
			order = append(order, r)
		}
		rows[r] = append(rows[r], s.ID)
	}
	return order, rows
}

// rowsTerm names the rows in short, runs of consecutive rows as a range:
// "S1–S8, S14".
func rowsTerm(order []string) string {
	num := func(r string) int {
		if m := debateRowRE.FindStringSubmatch(r); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return -1
	}
	var out []string
	for i := 0; i < len(order); {
		k := i
		for k+1 < len(order) && num(order[k+1]) == num(order[k])+1 && num(order[k]) >= 0 {
			k++
		}
		if k-i >= 2 {
			out = append(out, order[i]+"–"+order[k])
		} else {
			out = append(out, order[i:k+1]...)
		}
		i = k + 1
	}
	return strings.Join(out, ", ")
}

// glossTerm finds the shorthand the glossary explains in a text: the
// debate's rows and roles, and the words below.
var glossTerm = regexp.MustCompile(`\b(S1[0-4]|S[1-9]|A[1-6]|bubble|real arm|unfired|careful|pp|faults? bit)\b`)

// glossID is the glossary entry a term found by glossTerm links to.
func glossID(term string) string {
	switch {
	case term[0] == 'S' && term != "S":
		return "rows"
	case term[0] == 'A':
		return "roles"
	case term == "real arm":
		return "real"
	case strings.HasPrefix(term, "fault"):
		return "bit"
	}
	return term
}

// glossed is text, escaped, with the first use of each term the glossary
// explains linked to it; index is the index page's path from the page
// the text is on ("" on the index itself, "../index.html" below it).
func glossed(index, text string) htmltemplate.HTML {
	seen := map[string]bool{}
	var b strings.Builder
	last := 0
	for _, m := range glossTerm.FindAllStringIndex(text, -1) {
		term := text[m[0]:m[1]]
		id := glossID(term)
		if seen[id] {
			continue
		}
		seen[id] = true
		b.WriteString(htmltemplate.HTMLEscapeString(text[last:m[0]]))
		fmt.Fprintf(&b, `<a class="gloss" href="%s#g-%s">%s</a>`, index, id, htmltemplate.HTMLEscapeString(term))
		last = m[1]
	}
	b.WriteString(htmltemplate.HTMLEscapeString(text[last:]))
	return htmltemplate.HTML(b.String())
}

// glossFuncs give the templates glossed: gloss on the index, glossPage on
// a lock's or a scenario's page.
var glossFuncs = htmltemplate.FuncMap{
	"gloss":     func(s string) htmltemplate.HTML { return glossed("", s) },
	"glossPage": func(s string) htmltemplate.HTML { return glossed("../index.html", s) },
}
