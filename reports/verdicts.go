package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
)

// The index opens with a verdict per design, built from its cells: where
// it broke and how often, where it held, how many scenarios tried it, and
// its lease in seconds (the heat map's columns and the pause sweep are in
// multiples of it).

// designVerdict is one design's sentence: "ID (TTL): Head Text".
type designVerdict struct {
	ID, Href string
	Blurb    string // what the design is, in a line (blurbs.go)
	TTL      string // "TTL 10 s", "TTL 10 s; 1 s in redlock-2-of-5", "no TTL"
	// Head is the verdict in short ("unsafe in 8 of 14 scenarios
	// tried", "never unsafe in the 18 scenarios tried"), Class its colour
	// ("vu", "vs"); Text the rest of the sentence.
	Head, Class, Text string
	// Few is set when the design was tried in few scenarios: its "never
	// unsafe" says less than another's.
	Few bool
}

// fewScenarios is how many scenarios a design must be tried in not to be
// flagged as tried in few: a third of the most any design was tried in,
// at least 3.
func fewScenarios(most int) int { return max(3, most/3) }

// cellTTL is the lease a cell's runs gave the lock: the catalogue's TTL
// (locks.Info.TTL), unless the scenario file's params: block sets it for
// this lock (scenarios.File.Parts applies it, as the run does) or the
// report plays the scenario at another TTL (scenarios.Params.TTL).
func cellTTL(c *Cell) time.Duration {
	if c.Scenario.File != nil {
		if parts, err := c.Scenario.File.Parts(c.Lock, 1, c.Spec.Params); err == nil {
			return parts.Lock.TTL
		}
	}
	if c.Spec.Params.TTL > 0 {
		return c.Spec.Params.TTL
	}
	return c.Lock.TTL
}

// seconds writes a duration in seconds ("10 s", "1.5 s", "0.25 s").
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'g', 3, 64) + " s"
}

// lockTTL is a lock's lease over its cells: the catalogue's when any
// cell runs with it (else the one most cells use), and the scenarios that
// set another.
type lockTTL struct {
	Main   time.Duration
	Others []string // "1 s in redlock-2-of-5"
}

func (t lockTTL) String() string {
	s := "TTL " + seconds(t.Main)
	if t.Main == 0 {
		s = "no TTL"
	}
	if len(t.Others) > 0 {
		s += "; " + strings.Join(t.Others, ", ")
	}
	return s
}

// Short is the heat map column's reading: "10 s", "10 s*" when some
// scenarios set another (the column's title names them), or "no TTL".
func (t lockTTL) Short() string {
	if t.Main == 0 {
		return "no TTL"
	}
	s := seconds(t.Main)
	if len(t.Others) > 0 {
		s += "*"
	}
	return s
}

// lockTTLs are the locks' leases, by id (computed once a plan).
func (p *Plan) lockTTLs() map[string]lockTTL {
	if p.ttls != nil {
		return p.ttls
	}
	per := map[string][]*Cell{}
	for _, c := range p.cells {
		per[c.Lock.ID] = append(per[c.Lock.ID], c)
	}
	out := map[string]lockTTL{}
	for id, cells := range per {
		count := map[time.Duration]int{}
		ttls := make([]time.Duration, len(cells))
		for i, c := range cells {
			ttls[i] = cellTTL(c)
			count[ttls[i]]++
		}
		t := lockTTL{Main: cells[0].Lock.TTL}
		if count[t.Main] == 0 {
			for d, n := range count {
				if n > count[t.Main] || (n == count[t.Main] && d < t.Main) {
					t.Main = d
				}
			}
		}
		for i, c := range cells {
			if ttls[i] != t.Main {
				t.Others = append(t.Others, seconds(ttls[i])+" in "+c.Scenario.ID)
			}
		}
		out[id] = t
	}
	p.ttls = out
	return out
}

// rateText is a cell's unsafe rate and its 95% interval:
// "90% [83.6%, 93.6%]".
func rateText(j *CellResult) string {
	return fmt.Sprintf("%s%% [%s, %s]", heatText(j), pct(j.UnsafeRateCI95[0]), pct(j.UnsafeRateCI95[1]))
}

// pct writes a proportion as a percentage with one decimal, none at 0 and
// 100 ("0%", "83.6%", "100%").
func pct(x float64) string {
	if x <= 0 || x >= 1 {
		return fmt.Sprintf("%.0f%%", 100*x)
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

// rateGroups names every unsafe cell of a design with its rate, worst
// first, the cells of one rate and interval together: "clock-jump 95%
// [76.4%, 99.1%]", "100% [83.9%, 100%] in split-brain, failover".
func rateGroups(unsafe []*CellResult) string {
	var out []string
	for i := 0; i < len(unsafe); {
		r := rateText(unsafe[i])
		k := i + 1
		for k < len(unsafe) && rateText(unsafe[k]) == r {
			k++
		}
		if k == i+1 {
			out = append(out, unsafe[i].Scenario+" "+r)
		} else {
			var names []string
			for _, j := range unsafe[i:k] {
				names = append(names, j.Scenario)
			}
			out = append(out, r+" in "+strings.Join(names, ", "))
		}
		i = k
	}
	return strings.Join(out, " · ")
}

// listSome names up to n items, then how many more.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// verdicts are the designs' sentences, in the heat map's column order.
func (p *Plan) verdicts(res map[string]*CellResult) []designVerdict {
	ttls := p.lockTTLs()
	tried := map[string][]*CellResult{}
	most := 0
	for _, s := range p.scenarioOrder() {
		for _, id := range p.lockColumns() {
			if j := res[anchor(s.ID, id)]; j != nil && p.cell(s.ID, id) != nil {
				tried[id] = append(tried[id], j)
				most = max(most, len(tried[id]))
			}
		}
	}
	var out []designVerdict
	for _, id := range columnOrder(p.lockColumns()) {
		cells := tried[id]
		if len(cells) == 0 {
			continue
		}
		var unsafe, live, unknown, untested, safe []*CellResult
		for _, j := range cells {
			switch {
			case j.Verdict == checker.VerdictUnsafe:
				unsafe = append(unsafe, j)
			case j.Verdict == checker.VerdictLiveness:
				live = append(live, j)
			case j.Verdict == checker.VerdictUnknown:
				unknown = append(unknown, j)
			case j.Untested() != "":
				untested = append(untested, j)
			default:
				safe = append(safe, j)
			}
		}
		slices.SortStableFunc(unsafe, func(a, b *CellResult) int {
			return cmp.Or(cmp.Compare(b.UnsafeRate, a.UnsafeRate), cmp.Compare(b.UnsafeRateCI95[0], a.UnsafeRateCI95[0]))
		})
		names := func(js []*CellResult) []string {
			var s []string
			for _, j := range js {
				s = append(s, j.Scenario)
			}
			return s
		}
		n := len(cells)
		v := designVerdict{ID: id, Href: lockHref(id), Blurb: blurb(id), TTL: ttls[id].String()}
		var parts []string
		if len(unsafe) == 0 {
			v.Head, v.Class = "never unsafe in the "+plural(n, "scenario")+" tried", "vs"
			if len(safe) > 0 {
				v.Text = ": " + listSome(names(safe), 4)
			}
		} else {
			v.Head, v.Class = fmt.Sprintf("unsafe in %d of %s tried", len(unsafe), plural(n, "scenario")), "vu"
			v.Text = " — " + rateGroups(unsafe)
		}
		if len(live) > 0 {
			parts = append(parts, "no client got the lock after the heal (liveness) in "+listSome(names(live), 3))
		}
		if len(unknown) > 0 {
			parts = append(parts, "unknown in "+listSome(names(unknown), 3))
		}
		if len(untested) > 0 {
			var why []string
			for _, j := range untested {
				why = append(why, j.Scenario+" ("+j.Untested()+")")
			}
			parts = append(parts, "untested in "+listSome(why, 3))
		}
		if len(safe) > 0 && len(unsafe) > 0 {
			parts = append(parts, "safe in "+listSome(names(safe), 5))
		}
		if r := p.pauseReading(id); r != "" {
			parts = append(parts, "a client pause before its write (the pause sweep): "+r)
		}
		for _, part := range parts {
			v.Text += "; " + part
		}
		v.Text += "."
		if n < fewScenarios(most) {
			v.Few = true
			v.Text = strings.TrimSuffix(v.Text, ".") + fmt.Sprintf(" (tried in %s only).", plural(n, "scenario"))
		}
		out = append(out, v)
	}
	return out
}

// surprises are the cells the debate did not see coming: a verdict that
// contradicts what a side of the debate expected (on safety: unsafe or
// not), and the cells that never tested their scenario.
type surprises struct {
	// Neither: the verdict is one neither side (nor their agreed outcome)
	// expected: a violation where both said safe.
	Neither []link
	// NotSeen: both sides expected a violation that no run showed (how
	// rare it may still be in its text).
	NotSeen []link
	// Sided: the two sides disagreed and the cell sided with one.
	Sided []link
	// Untested: safe cells whose faults never bit (or whose wrong clock
	// the lock never read): their 0 tested nothing.
	Untested []link
}

// Any reports whether there is anything to headline.
func (s surprises) Any() bool {
	return len(s.Neither)+len(s.NotSeen)+len(s.Sided)+len(s.Untested) > 0
}

// unsafeSaid reads a side's expectation on safety: said is false when the
// side said nothing a verdict can contradict.
func unsafeSaid(v string) (unsafe, said bool) {
	switch v {
	case "unsafe":
		return true, true
	case "safe", "liveness":
		return false, true
	}
	return false, false
}

func (p *Plan) surprises(res Results) surprises {
	var s surprises
	for i := range res.Cells {
		j := &res.Cells[i]
		href := scenarioHref(j.Scenario) + "#" + anchor(j.Scenario, j.Lock)
		name := j.Scenario + " × " + j.Lock
		if j.Verdict == checker.VerdictSafe && j.Untested() != "" {
			s.Untested = append(s.Untested, link{name + " (" + j.Untested() + ")", href})
			continue
		}
		e := j.Expected
		if e == nil || j.Verdict == checker.VerdictUnknown || j.Runs == 0 {
			continue
		}
		got := j.Verdict == checker.VerdictUnsafe
		k, kSaid := unsafeSaid(e.Kleppmann)
		a, aSaid := unsafeSaid(e.Antirez)
		g, gSaid := unsafeSaid(e.Agreed)
		rate := rateText(j)
		switch {
		case kSaid && aSaid && k != a:
			right, wrong := "Kleppmann", "antirez"
			if a == got {
				right, wrong = wrong, right
			}
			s.Sided = append(s.Sided, link{fmt.Sprintf("%s: %s (%s), as %s expected, not %s", name, j.Verdict, rate, right, wrong), href})
		case (kSaid || aSaid || gSaid) && (!kSaid || k != got) && (!aSaid || a != got) && (!gSaid || g != got):
			if got {
				text := fmt.Sprintf("%s: unsafe in %s", name, rate)
				if e.Want == string(j.Verdict) && e.Note != "" {
					text += " (the scenario file expects it: " + firstSentence(e.Note) + ")"
				}
				if e.OutsideAssumptions {
					text += " (outside the lock's assumptions)"
				}
				s.Neither = append(s.Neither, link{text, href})
			} else {
				why := fmt.Sprintf("no violation in %d runs", j.Runs)
				if u := unseen(j); u != "" {
					why = u
				}
				s.NotSeen = append(s.NotSeen, link{fmt.Sprintf("%s: %s (%s)", name, j.Verdict, why), href})
			}
		}
	}
	return s
}

// firstSentence is a note's first sentence, up to its first ". " (the
// whole note, trimmed, if it has none), at most 200 bytes.
func firstSentence(note string) string {
	note = strings.Join(strings.Fields(note), " ")
	if i := strings.Index(note, ". "); i >= 0 {
		note = note[:i+1]
	}
	if len(note) > 200 {
		cut := strings.LastIndex(note[:200], " ")
		note = note[:max(cut, 0)] + " …"
	}
	return note
}

// pauseTTL is the lease the pause sweep runs a lock with: its TTL in the
// sweep's scenario (whose params: block may set it).
func pauseTTL(id string) time.Duration {
	info, err := catalogue.Get(id)
	if err != nil {
		return 0
	}
	if s, err := scenarios.Get(pauseSweepScenario); err == nil && s.File != nil {
		if parts, err := s.File.Parts(info, 1, scenarios.Params{}); err == nil {
			return parts.Lock.TTL
		}
	}
	return info.TTL
}

// pauseReading is the pause sweep's result for a lock in seconds: the
// longest pause it held through and the shortest that broke it ("no
// violation up to 1.5 s, unsafe from 3 s"); "" when the sweep did not
// run it.
func (p *Plan) pauseReading(id string) string {
	ttl := pauseTTL(id)
	held, broke, any := -1.0, -1.0, false
	for _, pt := range p.points {
		if pt.lock != id || pt.Runs == 0 {
			continue
		}
		any = true
		if pt.Unsafe > 0 && (broke < 0 || pt.value < broke) {
			broke = pt.value
		}
	}
	if !any {
		return ""
	}
	for _, pt := range p.points {
		if pt.lock == id && pt.Runs > 0 && pt.Unsafe == 0 && (broke < 0 || pt.value < broke) && pt.value > held {
			held = pt.value
		}
	}
	at := func(x float64) string { return seconds(time.Duration(x * float64(ttl))) }
	switch {
	case broke < 0:
		return fmt.Sprintf("no violation at any pause tried, up to %s", at(held))
	case held < 0:
		return fmt.Sprintf("unsafe from the shortest pause tried, %s", at(broke))
	}
	return fmt.Sprintf("no violation up to %s, unsafe from %s", at(held), at(broke))
}

// pauseSeconds reads the pause sweep in seconds, a lock at a time
// ("set-nx-cad (1 TTL = 3 s): no violation up to 1.5 s, unsafe from 3 s").
func (p *Plan) pauseSeconds() string {
	var out []string
	for _, id := range pauseSweepLocks {
		if r := p.pauseReading(id); r != "" {
			out = append(out, fmt.Sprintf("%s (1 TTL = %s): %s", id, seconds(pauseTTL(id)), r))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "In seconds: " + strings.Join(out, "; ") + "."
}
