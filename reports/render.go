package reports

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	texttemplate "text/template"
	"time"
	"unicode"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/internal/stats"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
)

//go:embed templates/report.md.tmpl templates/consensus.md.tmpl templates/drivers.md.tmpl templates/*.html.tmpl
var templateFS embed.FS

var (
	mdTemplate   = texttemplate.Must(texttemplate.New("report.md.tmpl").ParseFS(templateFS, "templates/report.md.tmpl", "templates/consensus.md.tmpl", "templates/drivers.md.tmpl"))
	htmlTemplate = htmltemplate.Must(htmltemplate.New("index.html.tmpl").Funcs(glossFuncs).Funcs(svgFuncs).ParseFS(templateFS, "templates/*.html.tmpl"))
)

// Write writes the report of a plan that has run into dir: results.json,
// the charts (img/), report.md and index.html. It returns the results.
func (p *Plan) Write(dir string) (Results, error) {
	res := p.Results()
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return res, err
	}
	if err := run.WriteFileAtomic(filepath.Join(dir, "results.json"), append(data, '\n')); err != nil {
		return res, err
	}
	figs, err := p.figures(dir)
	if err != nil {
		return res, err
	}
	v := p.view(res, figs)
	if v.Parity, err = p.parityView(dir); err != nil {
		return res, err
	}
	v.Consensus = consensusSection(p.parity, res)
	v.Drivers = p.driversViews()
	if v.KnownBugs, err = knownBugs(); err != nil {
		return res, err
	}
	var md, page bytes.Buffer
	if err := mdTemplate.Execute(&md, v); err != nil {
		return res, err
	}
	if err := htmlTemplate.Execute(&page, v); err != nil {
		return res, err
	}
	if err := run.WriteFileAtomic(filepath.Join(dir, "report.md"), md.Bytes()); err != nil {
		return res, err
	}
	// One page per lock and per scenario.
	write := func(tmpl, path string, data any) error {
		var b bytes.Buffer
		if err := htmlTemplate.ExecuteTemplate(&b, tmpl, data); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return run.WriteFileAtomic(path, b.Bytes())
	}
	for _, lp := range v.Locks {
		if err := write("lock.html.tmpl", filepath.Join(dir, filepath.FromSlash(lockHref(lp.ID))), lp); err != nil {
			return res, err
		}
	}
	if err := write("knownbugs.html.tmpl", filepath.Join(dir, knownBugsHref), v.KnownBugs); err != nil {
		return res, err
	}
	for _, sp := range scenarioPages(v) {
		if err := write("scenario.html.tmpl", filepath.Join(dir, filepath.FromSlash(scenarioHref(sp.ID))), sp); err != nil {
			return res, err
		}
	}
	return res, run.WriteFileAtomic(filepath.Join(dir, "index.html"), page.Bytes())
}

// figure is a chart the documents show.
type figure struct {
	Title, Caption string
	Anchor         string // its section's id on the index
	PNG, SVG       string // paths relative to the report directory
	scenario       string // "" for the pause sweep
	// Table is the pause sweep's numbers, shown under its chart.
	Table *pauseTable
}

type pauseTable struct {
	XLabel string // the first column's heading
	Locks  []string
	Rows   []pauseRow
}

type pauseRow struct {
	Value string
	Cells []string
}

// perYearTitle is the per-year chart's title; its section's anchor is
// "fig-" and its slug, which each per-run rate's caveat links to.
const perYearTitle = "Violations per year of operation"

// figures draws the charts into dir/img.
func (p *Plan) figures(dir string) ([]figure, error) {
	var out []figure
	// A chart is drawn only when the store does not hold its pictures
	// (chartcache.go): the same bytes either way.
	save := func(spec chartSpec, name string) (string, string, error) {
		if err := p.store.saveChart(spec, filepath.Join(dir, "img", name)); err != nil {
			return "", "", err
		}
		return "img/" + name + ".png", "img/" + name + ".svg", nil
	}
	if len(p.points) > 0 {
		rc := charts.RateChart{Title: "client pause just before the protected write, in multiples of each lock's TTL (no other faults)", XLabel: "pause (× each lock's TTL; the table gives each TTL in seconds)", YLabel: "runs judged unsafe", Markers: true}
		for _, id := range pauseSweepLocks {
			s := charts.RateSeries{Name: id}
			for _, pt := range p.points {
				if pt.lock == id {
					s.Points = append(s.Points, charts.RatePoint{X: pt.value, Rate: stats.Rate{K: pt.Unsafe, N: pt.Runs}})
				}
			}
			if len(s.Points) > 0 {
				rc.Series = append(rc.Series, s)
			}
		}
		png, svg, err := save(rc, "pause-sweep")
		if err != nil {
			return nil, err
		}
		out = append(out, figure{Title: "Violation rate vs pause length in multiples of the TTL", PNG: png, SVG: svg, Table: p.pauseTable(),
			Caption: fmt.Sprintf("Scenario %s with %d clients; client c0 stops just before its first write to the storage at or after %v, once, for the given multiple of its lock's TTL (so the same x is a different pause for each lock: the pause in seconds is the next chart). %s, less the runs where c0 did not pause in full inside the safety phase (%d of %d, counted in the table); each marker is a measured point, bars are 95%% Wilson score intervals, and no line joins the points (nothing was measured between them). %s",
				pauseSweepScenario, pauseSweepClients, run.PauseStart, p.perPoint(p.pauseSeeds), p.pauseShort(), p.pauseSeedsRun(), p.pauseSeconds())})
	}
	if c := p.pauseSecs; c != nil {
		rc := c.chart()
		rc.Title, rc.Markers = "client pause just before the protected write, in seconds (no other faults)", true
		png, svg, err := save(rc, "pause-seconds")
		if err != nil {
			return nil, err
		}
		out = append(out, figure{Title: pauseSecsTitle, PNG: png, SVG: svg, Table: c.secsTable(), Caption: p.pauseSecsCaption()})
	}
	for _, c := range p.curves {
		png, svg, err := save(c.chart(), strings.ReplaceAll(c.ID, "_", "-"))
		if err != nil {
			return nil, err
		}
		out = append(out, figure{Title: c.Title, PNG: png, SVG: svg, Table: c.table(c.XLabel),
			Caption: fmt.Sprintf("The debate's question: %s Scenario %s (its sweep: block), %s: %s Bars are 95%% Wilson score intervals; a line only joins measured points (markers), and says nothing of the rate between them; in the table, \"short\" counts runs in which some targeted pause did not run in full inside the safety phase and \"unfired\" runs in which one never fired (both counted in the rate), beside how many of those runs' faults bit: a run of nine pauses a client is short when the heal cuts its last; a point's first unsafe seed and its repro command are in results.json (%s).",
				c.Question, c.Scenario, p.perPoint(p.curveSeeds), c.Reading, c.ID)})
	}
	if py := p.perYear; py != nil && len(py.Locks) > 0 {
		pf, err := perYearFigures(py, save)
		if err != nil {
			return nil, err
		}
		out = append(out, pf...)
	}
	// One overlap-vs-resource chart per scenario.
	for _, s := range p.scenarioOrder() {
		fc := charts.FencingChart{Title: s.ID + ": lease overlap, resource violation, stale section"}
		for _, c := range p.cells {
			if c.Scenario.ID == s.ID {
				fc.Groups = append(fc.Groups, charts.FencingGroup{Name: c.Lock.ID, Overlap: stats.Rate{K: c.Overlap, N: c.Runs}, Resource: stats.Rate{K: c.Resource, N: c.Runs},
					Stale: stats.Rate{K: c.Stale, N: c.Runs}})
			}
		}
		png, svg, err := save(fc, "overlap-vs-resource-"+s.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, figure{Title: s.ID, scenario: s.ID, PNG: png, SVG: svg,
			Caption: "Runs in which two clients believed they held the lock at once (orange) beside runs in which the storage lost an update or accepted a stale write (red). Fencing designs may overlap without harm; a lock without fencing turns overlaps into lost updates."})
	}
	return out, nil
}

func (p *Plan) pauseTable() *pauseTable {
	c := &curve{points: p.points}
	t := c.table("pause (× TTL)")
	// Each lock's TTL in seconds: a multiple of it is a pause that long.
	for i, id := range t.Locks {
		t.Locks[i] = fmt.Sprintf("%s (1 TTL = %s)", id, seconds(pauseTTL(id)))
	}
	return t
}

// view is what both documents show, computed once.
type view struct {
	Intro     string
	Absent    []string   // locks this binary lacks, with why
	Missing   []lockNote // the matrix's empty cells: scenario × lock, why
	Columns   []string
	Matrix    []matrixRow
	Figures   []figure // not per scenario
	Scenarios []scenarioView
	Settings  []string
	Parity    *parityView    // the "simulation vs real Redis" section (Options.Parity)
	Consensus *consensusView // its consensus cells, in a section of their own (consensus.go)
	Drivers   []*driversView // the drivers sections (Options.Parity's drivers.json; drivers.go)
	KnownBugs *knownBugsView // the known-bugs page (knownbugs.go)
	// Findings, Heat and Locks open the index: what the report found, the
	// heat map, and each lock's page (pages.go).
	Findings findings
	Heat     heatMap
	Locks    []lockPage
	// Verdicts and Surprises head the index: a sentence a design and the
	// cells the debate did not expect (verdicts.go); Glossary explains
	// the report's shorthand (glossary.go).
	Verdicts []designVerdict
	// Pause answers "which designs survive a 2 s pause?" under the
	// verdicts (pausesecs.go; nil when the seconds sweep did not run).
	Pause *pauseAnswer
	// Wait says what WAIT buys, with the WAIT designs' rates (wait.go;
	// "" when none ran).
	Wait      string
	Surprises surprises
	Glossary  []glossEntry
	// PerHour is where each per-run rate's caveat ("not per hour of
	// operation") sends the reader: the per-hour chart's section, or,
	// when the report left it out, the settings line that says why.
	PerHour link
}

// LockHref and ScenarioHref are a lock's and a scenario's page, from the
// index.
func (view) LockHref(id string) string     { return lockHref(id) }
func (view) ScenarioHref(id string) string { return scenarioHref(id) }

type matrixRow struct {
	ID, Label string
	Cells     []matrixCell // one a column; Empty where the scenario does not run the lock
}

type matrixCell struct {
	Empty        bool
	Why          string // for an empty cell: why the lock does not run there
	Anchor       string
	Verdict      string
	Class        string // the verdict, and "miss" when it differs from the expectation
	Unsafe, Runs int
	Expected     string // the expectation in short ("K unsafe, A safe")
	Miss         bool
	// Unseen says, for a cell expected unsafe that no run broke, how rare
	// a violation may still be ("not seen in 20 runs: below 16.1% at
	// 95%"): a rare violation a few seeds miss, or a real disagreement;
	// more seeds tell them apart. Its class is "unseen", not "miss".
	Unseen string
	// Marks say what the verdict does not show: unsafe runs of class
	// ownership only, a client clock the lock never read, faults that
	// never bit (CellResult.Untested; such a safe cell is not green).
	Marks string
}

type scenarioView struct {
	ID, Title, Description, Source string
	Rows                           []lockRow
	Notes                          []lockNote
	Figures                        []figure
	Timelines                      []timelineView
}

type lockRow struct {
	Anchor, Lock                       string
	Runs                               int
	Rate                               string
	Overlap, Resource, Ownership       int
	Stale                              string // "runs (accepted)"
	Fenced, Liveness, Starved, Unknown int
	Verdict, Class, Expected, Length   string
	// Faults is "bit/injected (reached)": how many of the runs' faults
	// struck while they could matter (run.Effects).
	Faults string
	Stop   string // why the cell stopped after Runs seeds (StopText)
	// Bit is Faults without what reached (in the HTML table's title);
	// Other names the rarely needed counts that are not zero, and
	// OtherAll every one of them with the run length: the scenario
	// page folds them into one column (scenario.html.tmpl).
	Bit, Other, OtherAll string
	// Cx is the anchor of the cell's counterexample on the page ("" if
	// none): the table row links down to it.
	Cx string
}

type lockNote struct{ Lock, Text string }

type timelineView struct {
	Scenario, Lock string
	Seed           uint64
	Repro, Path    string
	Story          string
	Hash           string       // the run's trace SHA-256
	Minimal        *minimalView // its minimal history, shown first (minimal.go)
}

func (p *Plan) view(res Results, figs []figure) view {
	v := view{Intro: fmt.Sprintf("Every built-in scenario run with every lock whose topology fits it (— marks one that does not, with why), %s; "+
		"a cell is unsafe when any seed broke the lock's claim, in one of three classes: double-hold (two clients believed they held it at the same instant), resource (the protected resource lost an update or took a stale write), ownership (neither, but a client deleted or re-timed the key while another client held it: counted apart as \"ownership only\"). "+
		"Rates carry 95%% Wilson score intervals. Each run is reproducible with its repro command. Generated by %s.", p.methodText(), p.opt.Version),
		Columns: p.lockColumns(), Absent: Absent()}
	results := map[string]*CellResult{}
	for i := range res.Cells {
		results[anchor(res.Cells[i].Scenario, res.Cells[i].Lock)] = &res.Cells[i]
	}
	class := func(j *CellResult) string {
		switch {
		case frame(j) != "":
			return string(j.Verdict) + frame(j)
		case j.Verdict == checker.VerdictSafe && j.Untested() != "":
			return "untested"
		}
		return string(j.Verdict)
	}
	for _, s := range p.scenarioOrder() {
		label := s.ID
		if row := debateRow(s); row != "" {
			label += " (" + row + ")"
		}
		mr := matrixRow{ID: s.ID, Label: label}
		for _, id := range v.Columns {
			c := p.cell(s.ID, id)
			if c == nil {
				why := whyNot(s, id)
				mr.Cells = append(mr.Cells, matrixCell{Empty: true, Why: why})
				if why != "" {
					v.Missing = append(v.Missing, lockNote{s.ID + " × " + id, why})
				}
				continue
			}
			j := results[anchor(s.ID, id)]
			mr.Cells = append(mr.Cells, matrixCell{Anchor: anchor(s.ID, id), Verdict: string(j.Verdict), Class: class(j), Unsafe: j.UnsafeRuns, Runs: j.Runs,
				Expected: expectShort(c.expect), Miss: j.Missed(), Unseen: unseen(j), Marks: marks(j)})
		}
		v.Matrix = append(v.Matrix, mr)

		title := s.ID
		if row := debateRow(s); row != "" {
			title += " (debate " + row + ")"
		}
		sv := scenarioView{ID: s.ID, Title: title, Description: oneLine(s.Description)}
		if s.File != nil && s.File.Source != "" {
			sv.Source = oneLine(s.File.Source)
		}
		for _, c := range p.cells {
			if c.Scenario.ID != s.ID {
				continue
			}
			j := results[anchor(s.ID, c.Lock.ID)]
			sv.Rows = append(sv.Rows, lockRow{Anchor: anchor(s.ID, c.Lock.ID), Lock: c.Lock.ID, Runs: c.Runs, Rate: stats.Rate{K: c.Unsafe, N: c.Runs}.String(),
				Overlap: c.Overlap, Resource: c.Resource, Ownership: c.Ownership, Stale: fmt.Sprintf("%d (%d)", c.Stale, c.StaleAccepted),
				Fenced: c.Fenced, Liveness: c.Liveness, Starved: c.Starved, Unknown: c.Unknown,
				Verdict: string(j.Verdict), Class: class(j), Expected: expectLong(c.expect), Length: fmt.Sprintf("%v + %v", c.SafetyPhase, c.LivenessPhase),
				Faults: fmt.Sprintf("%d/%d (%d reached)", c.Bit, c.Injected, c.Reached), Stop: StopText(j.Stop),
				Bit: fmt.Sprintf("%d/%d", c.Bit, c.Injected), Other: otherCounts(c, false), OtherAll: otherCounts(c, true)})
			if c.expect != nil && c.expect.Note != "" {
				sv.Notes = append(sv.Notes, lockNote{c.Lock.ID, c.expect.Note})
			}
			if c.Unfired > 0 {
				sv.Notes = append(sv.Notes, lockNote{c.Lock.ID, fmt.Sprintf("in %d of %d runs a targeted pause never fired (the lock never reached its point while the pause waited), so those runs did not test it", c.Unfired, c.Runs)})
			}
			if c.Timeline != "" {
				sv.Rows[len(sv.Rows)-1].Cx = "timeline-" + c.Lock.ID
				sv.Timelines = append(sv.Timelines, timelineView{Scenario: s.ID, Lock: c.Lock.ID, Seed: c.FirstUnsafe, Repro: c.Repro(c.FirstUnsafe), Path: filepath.ToSlash(c.Timeline), Story: c.Story,
					Hash: c.FirstUnsafeSHA, Minimal: newMinimalView(c.Minimal)})
			}
		}
		for _, f := range figs {
			if f.scenario == s.ID {
				sv.Figures = append(sv.Figures, f)
			}
		}
		v.Scenarios = append(v.Scenarios, sv)
	}
	for _, f := range figs {
		if f.scenario == "" {
			f.Anchor = "fig-" + slug(f.Title)
			v.Figures = append(v.Figures, f)
		}
	}
	v.PerHour = perHourLink(v.Figures)
	v.Findings, v.Heat = p.findings(res), p.heat(results)
	v.Verdicts, v.Surprises, v.Glossary = p.verdicts(results), p.surprises(res), p.glossary()
	v.Pause = p.pauseAnswer()
	v.Wait = p.waitReading(results)
	v.Locks = p.lockPages(results, v)
	var lengths []string
	for _, id := range slices.Sorted(maps.Keys(reportLengths)) {
		l := reportLengths[id]
		lengths = append(lengths, fmt.Sprintf("%s %v + %v", id, l.Duration, l.Liveness))
	}
	v.Settings = []string{
		fmt.Sprintf("seeds per cell: at most %d (seeds 1..%d); %s", p.seeds, p.seeds, settingsRule(p.opt.Fixed)),
		fmt.Sprintf("run lengths (safety + liveness phase) set by the report: %s; every other scenario runs at its file's lengths (the tables' last column)", strings.Join(lengths, ", ")),
		"liveness phase: " + livenessEnd(p.opt.EndWhenLive),
	}
	if len(p.points) > 0 {
		v.Settings = append(v.Settings, fmt.Sprintf("pause sweep: scenario %s with %d clients, %d seeds per point, safety phase %v + %v + the pause + one TTL, liveness phase %v",
			pauseSweepScenario, pauseSweepClients, p.pauseSeeds, run.PauseStart, pauseSweepSlack, pauseSweepLiveness))
	}
	if py := p.perYear; py != nil {
		v.Settings = append(v.Settings, fmt.Sprintf("per-year estimate: %s at TTL %v, 3 clients, profile %s, %d runs a stratum on average (seed 1)",
			strings.Join(p.perYearDesigns(), ", "), time.Duration(py.TTLNS), py.Profile, py.Seeds))
	}
	if c := p.pauseSecs; c != nil {
		v.Settings = append(v.Settings, fmt.Sprintf("pause sweep in seconds: as the pause sweep, at %s s, %d seeds per point, for %s",
			strings.Join(secsValues(c), ", "), p.pauseSeeds, strings.Join(c.Locks, ", ")))
	}
	for _, c := range p.curves {
		v.Settings = append(v.Settings, fmt.Sprintf("%s: scenario %s stepped through its sweep: block, %d seeds per point, liveness phase two TTLs (at least %v)",
			c.ID, c.Scenario, p.curveSeeds, pauseSweepLiveness))
	}
	v.Settings = append(v.Settings, p.opt.Version)
	for _, id := range catalogue.IDs() {
		if info, _ := catalogue.Get(id); info.Unavailable != "" {
			v.Settings = append(v.Settings, fmt.Sprintf("not run: %s (%s)", id, info.Unavailable))
		}
	}
	return v
}

func anchor(scenario, lock string) string { return scenario + "--" + lock }

// otherCounts are a cell's rarely needed counts (stale sections, fenced,
// liveness, starved and unknown runs): those not zero ("fenced 20,
// starved 2"; "—" when all are), or all of them and the run length.
func otherCounts(c *Cell, all bool) string {
	var out []string
	for _, x := range []struct {
		name string
		n    int
		text string
	}{
		{"stale section runs (write accepted)", c.Stale, fmt.Sprintf("%d (%d)", c.Stale, c.StaleAccepted)},
		{"fenced runs", c.Fenced, ""}, {"liveness runs", c.Liveness, ""}, {"starved runs", c.Starved, ""}, {"unknown runs", c.Unknown, ""},
	} {
		if x.text == "" {
			x.text = fmt.Sprint(x.n)
		}
		if all || x.n > 0 {
			out = append(out, x.name+" "+x.text)
		}
	}
	if all {
		out = append(out, fmt.Sprintf("run length %v + %v", c.SafetyPhase, c.LivenessPhase))
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

// unseen is a matrix cell's note when the scenario file expects a
// violation and none of its runs showed one: the top of the unsafe rate's
// 95% interval ("" otherwise).
func unseen(j *CellResult) string {
	if !j.Missed() || j.UnsafeRuns > 0 || j.Expected == nil || j.Expected.Want != "unsafe" {
		return ""
	}
	return fmt.Sprintf("not seen in %d runs: below %.1f%% at 95%%", j.Runs, 100*j.UnsafeRateCI95[1])
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// expectShort renders an expectation compactly ("K unsafe, A safe, = safe").
func expectShort(e *Expectation) string {
	if e == nil {
		return ""
	}
	var parts []string
	for _, x := range []struct{ k, v string }{{"K", e.Kleppmann}, {"A", e.Antirez}, {"=", e.Agreed}} {
		if x.v != "" {
			parts = append(parts, x.k+" "+x.v)
		}
	}
	if e.Want != "" && e.Want != e.Agreed {
		parts = append(parts, "sim "+e.Want)
	}
	return strings.Join(parts, ", ")
}

func expectLong(e *Expectation) string {
	if e == nil {
		return ""
	}
	var parts []string
	for _, x := range []struct{ k, v string }{{"role", e.Role}, {"Kleppmann", e.Kleppmann}, {"antirez", e.Antirez}, {"agreed", e.Agreed}} {
		if x.v != "" {
			parts = append(parts, x.k+" "+x.v)
		}
	}
	if e.Want != "" && e.Want != e.Agreed {
		parts = append(parts, "simulation expected "+e.Want)
	}
	if e.OutsideAssumptions {
		parts = append(parts, "outside the lock's assumptions")
	}
	return strings.Join(parts, "; ")
}

// marks says, in a few words, what a cell's verdict does not show: how
// many of its unsafe runs are of class ownership only, and why its faults
// did not test the lock (CellResult.Untested).
func marks(j *CellResult) string {
	var out []string
	if n := j.OwnershipOnlyRuns; n > 0 {
		out = append(out, fmt.Sprintf("%d ownership only", n))
	}
	if u := j.Untested(); u != "" {
		out = append(out, u)
	} else if n := j.ClockUnreachedRuns; n > 0 {
		out = append(out, fmt.Sprintf("client clock not read by the lock in %d runs", n))
	}
	return strings.Join(out, "; ")
}

// slug is an id for a title: lower-case letters and digits, words joined
// by "-" ("Violation rate vs node clock drift (S8)" is
// "violation-rate-vs-node-clock-drift-s8").
func slug(title string) string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(title), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		words = append(words, w)
	}
	return strings.Join(words, "-")
}

// perHourLink is the per-run rates' caveat link (view.PerHour).
func perHourLink(figs []figure) link {
	for _, f := range figs {
		if f.Title == perYearTitle {
			return link{"the per-year chart below estimates that", "#" + f.Anchor}
		}
	}
	return link{"the per-year chart of a full report or --per-year estimates that (left out here: see Settings)", "#settings"}
}

// PerHourMD is PerHour's anchor in report.md, where a heading's anchor is
// its slug.
func (v view) PerHourMD() string {
	if v.PerHour.Href == "#settings" {
		return "#settings"
	}
	return "#" + slug(perYearTitle)
}
