package reports

import (
	"fmt"
	"strings"

	"github.com/locksim/locksim/knownbugs"
)

// knownBugsHref is the known-bugs page, from the index.
const knownBugsHref = "known-bugs.html"

// knownBugsView is the known-bugs page: the suite's entries
// (knownbugs/bugs/*.yaml) as measured and dated there, not rerun by the
// report (their drivers and pinned versions need npm, Debian packages and
// real servers; .ci/run reruns the quick ones).
type knownBugsView struct {
	Href       string
	Reproduced []knownBugRow
	Not        []knownBugRow
	Libraries  int // libraries with a reproduced bug
	NonGo      int // of them, not in Go
	Searched   int // reproduced ones found by a search
	NoFault    int // reproduced ones that need no fault at all
}

type knownBugRow struct {
	ID, Library, Language, Tracker, TrackerHref string
	Buggy, SafeSide                             string
	BuggyRate, SafeRate                         string // "17/20 = 85.0% [64.0%, 94.8%]"
	Verdict, FoundBy, Repro, Measured, Why      string
	Mechanism                                   string
	// The summary table's short forms: "18/20", "v4.12.1: 0/20", "search".
	BuggyShort, SafeShort, FoundByShort string
}

// knownBugs reads the suite; an entry that does not decode is the
// binary's bug (the suite's test refuses it), reported as an error.
func knownBugs() (*knownBugsView, error) {
	all, err := knownbugs.All()
	if err != nil {
		return nil, fmt.Errorf("the known-bugs suite: %v", err)
	}
	v := &knownBugsView{Href: knownBugsHref}
	libs, nonGo := map[string]bool{}, map[string]bool{}
	for _, b := range all {
		r := knownBugRow{ID: b.ID, Library: b.Library, Language: b.Language, Tracker: oneLine(b.Tracker),
			Buggy: b.Buggy, Mechanism: oneLine(b.Mechanism)}
		if f := strings.Fields(b.Tracker); len(f) > 0 && strings.HasPrefix(f[0], "https://") {
			r.TrackerHref = f[0]
		}
		if !b.Reproduced() {
			r.Why = oneLine(b.WhyNot)
			v.Not = append(v.Not, r)
			continue
		}
		m := b.Measured
		r.SafeSide = b.SafeSide()
		if r.SafeSide == "twin" {
			r.SafeSide = "twin: " + oneLine(b.Twin)
		}
		r.BuggyRate, r.SafeRate = m.Buggy.String(), m.Fixed.String()
		r.Verdict, r.FoundBy, r.Repro = b.Verdict, b.FoundBy, oneLine(b.Repro)
		r.BuggyShort = fmt.Sprintf("%d/%d", m.Buggy.Bad, m.Buggy.Runs)
		r.SafeShort = fmt.Sprintf("%s: %d/%d", b.SafeSide(), m.Fixed.Bad, m.Fixed.Runs)
		r.FoundByShort = b.FoundBy
		if b.FoundByWhy != "" {
			r.FoundBy += " (" + oneLine(b.FoundByWhy) + ")"
		}
		r.Measured = m.Date + ": " + oneLine(m.Command)
		v.Reproduced = append(v.Reproduced, r)
		libs[b.Library] = true
		if b.Language != "Go" {
			nonGo[b.Library] = true
		}
		switch b.FoundBy {
		case knownbugs.FoundBySearch:
			v.Searched++
		case knownbugs.FoundByNoFault:
			v.NoFault++
		}
	}
	v.Libraries, v.NonGo = len(libs), len(nonGo)
	return v, nil
}
