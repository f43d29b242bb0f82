package run

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/sim"
)

// Report is a judged run as the user reads it: the 'locksim run --json'
// object and the human summary's data (WriteSummary).
type Report struct {
	Scenario string          `json:"scenario"`
	Lock     string          `json:"lock"`
	Seed     uint64          `json:"seed"`
	Verdict  checker.Verdict `json:"verdict"`
	// Class is an unsafe run's class: double-hold | resource | ownership
	// (checker.Class); absent for any other verdict.
	Class               checker.Class  `json:"class,omitempty"`
	VerdictReason       string         `json:"verdict_reason"`
	LeaseOverlaps       int            `json:"lease_overlaps"`
	LeaseOverlapNS      int64          `json:"lease_overlap_ns"`
	FirstOverlap        *OverlapReport `json:"first_overlap,omitempty"`
	ResourceViolations  int            `json:"resource_violations"`
	Porcupine           string         `json:"porcupine"`
	Claim               string         `json:"claim"`
	OwnershipViolations int            `json:"ownership_violations"`
	StaleSections       int            `json:"stale_sections"`
	StaleAccepted       int            `json:"stale_accepted"`
	FencedRejections    int            `json:"fenced_rejections"`
	Starved             []string       `json:"starved"`
	LongestWaitNS       int64          `json:"longest_wait_ns"`
	// Grants and Overtakes: acquisitions that began a hold, and those
	// granted ahead of an earlier waiting request (checker.Overtaking).
	Grants           int               `json:"grants"`
	Overtakes        int               `json:"overtakes"`
	Blockers         []checker.Blocker `json:"blockers,omitempty"`
	Acquisitions     OutcomeCounts     `json:"acquisitions"`
	LivenessAcquired int               `json:"liveness_acquisitions"`
	Clients          int               `json:"clients"`
	Nodes            int               `json:"nodes"`
	DurationNS       int64             `json:"duration_ns"`
	LivenessNS       int64             `json:"liveness_ns"`
	// LivenessShownNS is when the run ended its liveness phase early,
	// every client having acquired after the heal (Spec.EndWhenLive;
	// sim.Result.LiveAt); absent when it ran the phase to its end.
	LivenessShownNS int64          `json:"liveness_shown_ns,omitempty"`
	FaultSchedule   []faults.Fault `json:"fault_schedule"`
	// FaultsInjected counts the faults that took effect: Stats.Faults less
	// the targeted pauses that never fired (UnfiredPauses).
	FaultsInjected int            `json:"faults_injected"`
	UnfiredPauses  []faults.Fault `json:"unfired_pauses"`
	// FaultEffects says, per fault of the schedule, whether it was
	// injected, reached the code under test, and bit (Effects); Faults
	// counts them. ClientClocks lists the clients whose clocks the world
	// set wrong from the start and whether their lock read them. Absent
	// when the history was capped.
	FaultEffects  []FaultEffect `json:"fault_effects,omitempty"`
	Faults        *EffectCounts `json:"faults,omitempty"`
	ClientClocks  []ClockReach  `json:"client_clocks,omitempty"`
	Stats         sim.Stats     `json:"stats"`
	TraceEvents   int64         `json:"trace_events"`
	HistoryCapped bool          `json:"history_capped"`
	TraceSHA256   string        `json:"trace_sha256"`
	TraceFile     string        `json:"trace_file,omitempty"`
	// TraceError says why a --trace file asked for was not written (a
	// full disk, --trace-max-mb): the verdict stands without it.
	TraceError     string          `json:"trace_error,omitempty"`
	Error          string          `json:"error,omitempty"`
	Counterexample *Counterexample `json:"counterexample,omitempty"`
	Story          string          `json:"story,omitempty"`  // the first violation in a sentence (Explain)
	Replay         *ReplayReport   `json:"replay,omitempty"` // set by 'replay'
	// Cause: why the first violation's first holder lost its key (Cause).
	Cause string `json:"cause,omitempty"`

	// Outcome is the run's outcome (Judged.Outcome), as a sweep's line
	// and a report's cell count it: the verdict, class, claim, the
	// checkers' counts and the trace hash above are its, spelled as
	// --json has always spelled them.
	Outcome Outcome `json:"-"`

	judged *Judged
	source string
}

// OutcomeCounts counts acquisitions by outcome.
type OutcomeCounts struct {
	OK      int `json:"ok"`
	Fail    int `json:"fail"`
	Unknown int `json:"unknown"`
}

// OverlapReport is the first lease overlap.
type OverlapReport struct {
	A       string `json:"a"`
	B       string `json:"b"`
	StartNS int64  `json:"start_ns"`
	EndNS   int64  `json:"end_ns"`
}

// Counterexample is an unsafe run's evidence and how to run it again.
type Counterexample struct {
	Repro     string             `json:"repro"`
	Faults    int                `json:"faults"`
	Clients   int                `json:"clients"`
	Violation *checker.Violation `json:"violation,omitempty"`
	// Files written by WriteCounterexample.
	SliceFile string `json:"slice_file,omitempty"`
	HTMLFile  string `json:"html_file,omitempty"`
	// Shrink is set when the run was shrunk (Report.Shrunk): Repro,
	// Faults and Clients are then the shrunk run's.
	Shrink *ShrinkReport `json:"shrink,omitempty"`
}

// ShrinkReport is counterexample.shrink in --json.
type ShrinkReport struct {
	Runs        int            `json:"runs"`
	Exhausted   bool           `json:"exhausted"` // the run bound was reached: the best so far, maybe not minimal
	Kind        checker.Kind   `json:"kind"`      // the violation kind kept
	FromFaults  int            `json:"from_faults"`
	FromClients int            `json:"from_clients"`
	FaultsFile  string         `json:"faults_file"`
	Schedule    []faults.Fault `json:"schedule"`
	Reason      string         `json:"reason"` // the shrunk run's first verdict reason
}

// ReplayReport is the --json object's "replay" member.
type ReplayReport struct {
	File      string `json:"file,omitempty"` // empty: compared with a first run of the same seed
	Identical bool   `json:"identical"`
	Events    int    `json:"events"` // event lines compared
	Diff      *Diff  `json:"first_difference,omitempty"`
}

// Report turns the judged run into what the user reads. repro is the
// command that runs it again (the spec's Repro, or a replay's).
func (jd *Judged) Report(repro string) *Report {
	cfg := jd.Job.Config
	res := jd.Result
	o := jd.Outcome()
	r := &Report{
		Scenario:        jd.Job.Scenario,
		Lock:            jd.Job.Lock.ID,
		Seed:            cfg.Seed,
		Clients:         cfg.Clients,
		Nodes:           len(cfg.Nodes),
		DurationNS:      int64(cfg.Duration),
		LivenessNS:      int64(cfg.Liveness),
		LivenessShownNS: res.LiveAt,
		FaultSchedule:   cfg.Faults,
		Stats:           res.Stats,
		TraceEvents:     res.TraceEvents,
		HistoryCapped:   res.TraceCapped,
		TraceSHA256:     o.TraceSHA256,
		Outcome:         o,
		judged:          jd,
		source:          jd.Job.Lock.Source,
	}
	if r.FaultSchedule == nil {
		r.FaultSchedule = []faults.Fault{}
	}
	r.UnfiredPauses = UnfiredPauses(jd.History)
	if r.UnfiredPauses == nil {
		r.UnfiredPauses = []faults.Fault{}
	}
	r.FaultsInjected = res.Stats.Faults - len(r.UnfiredPauses)
	if es := Effects(jd.History, res, cfg); es != nil {
		r.FaultEffects = es
		c := Count(es)
		r.Faults = &c
	}
	r.ClientClocks = ClockReaches(cfg, res)
	r.Story = Explain(jd)
	if v := jd.Check.First; v != nil {
		r.Cause = v.Cause
	}
	if jd.Err != nil {
		r.Error = jd.Err.Error()
	}
	h, chk := jd.History, jd.Check
	for _, ev := range res.History {
		if ev.Op != event.OpAcquire {
			continue
		}
		switch ev.Kind {
		case event.KindOK:
			r.Acquisitions.OK++
			if ev.T >= h.Heal {
				r.LivenessAcquired++
			}
		case event.KindFail:
			r.Acquisitions.Fail++
		case event.KindUnknown:
			r.Acquisitions.Unknown++
		}
	}
	r.LeaseOverlaps = o.LeaseOverlaps
	r.LeaseOverlapNS = chk.OverlapNS
	if ov := chk.FirstOverlap; ov != nil {
		r.FirstOverlap = &OverlapReport{A: ov.A, B: ov.B, StartNS: ov.Start, EndNS: ov.End}
	}
	r.ResourceViolations = o.ResourceViolations
	r.Porcupine = o.Porcupine
	r.OwnershipViolations = o.OwnershipViolations
	r.StaleSections, r.StaleAccepted, r.FencedRejections = o.StaleSections, o.StaleAccepted, o.FencedRejections
	r.Starved, r.LongestWaitNS = chk.Liveness.Starved, chk.Liveness.LongestWaitNS
	r.Grants, r.Overtakes = chk.Liveness.Grants, chk.Liveness.Overtakes
	if r.Starved == nil {
		r.Starved = []string{}
	}
	if chk.Verdict == checker.VerdictLiveness {
		r.Blockers = chk.Liveness.Blockers
	}
	r.Claim = o.Claim
	r.Verdict, r.Class = o.Verdict, o.Class
	if len(chk.Reasons) > 0 {
		r.VerdictReason = chk.Reasons[0]
	}
	if r.Verdict == checker.VerdictUnsafe {
		r.Counterexample = &Counterexample{Repro: repro, Faults: len(cfg.Faults), Clients: cfg.Clients, Violation: chk.First}
	}
	return r
}

// Judged is the run the report was made from.
func (r *Report) Judged() *Judged { return r.judged }

// ShrinkKind is the violation kind a shrink of this unsafe run keeps ("":
// the verdict names none).
func (r *Report) ShrinkKind() checker.Kind {
	switch {
	case r.Counterexample == nil:
		return ""
	case r.Counterexample.Violation != nil:
		return r.Counterexample.Violation.Kind
	case r.judged != nil && r.judged.Check.Porcupine == checker.LinIllegal:
		return checker.KindLinearizability
	}
	return ""
}

// Shrunk rewrites the report's counterexample to the shrunk run res, whose
// schedule was written to faultsFile: its faults and clients are the
// shrunk numbers and its repro runs the shrunk run.
func (r *Report) Shrunk(res ShrinkResult, faultsFile string) {
	ce := r.Counterexample
	if ce == nil {
		return
	}
	schedule := res.Faults
	if schedule == nil {
		schedule = []faults.Fault{}
	}
	reason := ""
	if len(res.Check.Reasons) > 0 {
		reason = res.Check.Reasons[0]
	}
	spec := res.Job.Spec
	spec.FaultsFile = faultsFile
	ce.Faults, ce.Clients = len(res.Faults), res.Clients
	ce.Repro = spec.Repro()
	ce.Shrink = &ShrinkReport{Runs: res.Runs, Exhausted: res.Exhausted, Kind: res.Kind, FromFaults: res.FromFaults,
		FromClients: res.FromClients, FaultsFile: faultsFile, Schedule: schedule, Reason: reason}
}

// WriteSummary writes the human summary; its last line is the trace hash.
func (r *Report) WriteSummary(w io.Writer) {
	line := func(key, format string, a ...any) {
		fmt.Fprintf(w, "%-16s%s\n", key+":", fmt.Sprintf(format, a...))
	}
	line("scenario", "%s", r.Scenario)
	line("lock", "%s (%s)", r.Lock, r.source)
	line("seed", "%d", r.Seed)
	line("world", "%d clients, %d nodes", r.Clients, r.Nodes)
	line("virtual time", "%v (safety %v, then liveness %v)", time.Duration(r.Stats.VirtualNS), time.Duration(r.DurationNS), time.Duration(r.LivenessNS))
	if r.LivenessShownNS > 0 {
		line("liveness shown", "at t=%v: every client acquired after the heal; the phase ended there (--end-when-live)", time.Duration(r.LivenessShownNS))
	}
	line("events", "%d scheduler steps, %d trace lines", r.Stats.Events, r.TraceEvents)
	line("commands", "%d Redis commands", r.Stats.Commands)
	if c := r.Faults; c != nil {
		line("faults", "%s", c)
		for _, e := range r.FaultEffects {
			mark := "bit"
			switch {
			case !e.Injected:
				mark = "not injected: " + e.Why
			case !e.Reached:
				mark = "did not reach the code under test: " + e.Why
			case !e.Bit:
				mark = "did not bite: " + e.Why
			}
			fmt.Fprintf(w, "%-16s%s  [%s%s]\n", "", e.Fault, mark, e.promotedNote())
		}
	} else {
		line("faults", "%d scheduled, %d injected", len(r.FaultSchedule), r.FaultsInjected)
		for _, f := range r.FaultSchedule {
			fmt.Fprintf(w, "%-16s%s\n", "", f)
		}
	}
	for _, c := range r.ClientClocks {
		what := "read by the lock"
		if !c.Reached {
			what = "NOT read by the lock: it reads time.Now (one bubble has one clock), so this clock reaches only the workload"
		}
		line("client clock", "%s %s: %s", c.Client, clockSetting(c), what)
	}
	if n := len(r.UnfiredPauses); n > 0 {
		what := "1 targeted pause: its client never reached its point"
		if n > 1 {
			what = fmt.Sprintf("%d targeted pauses: their client never reached their point", n)
		}
		line("never fired", "%s while it waited (a lock marks its points with locks.Env.At); not counted as injected", what)
		for _, f := range r.UnfiredPauses {
			fmt.Fprintf(w, "%-16s%s\n", "", f)
		}
	}
	line("failovers", "%d", r.Stats.Failovers)
	line("crashes", "%d", r.Stats.Crashes)
	line("acquisitions", "ok %d, fail %d, unknown %d (ok after the heal: %d)", r.Acquisitions.OK, r.Acquisitions.Fail, r.Acquisitions.Unknown, r.LivenessAcquired)
	if r.LeaseOverlaps == 0 {
		line("lease overlaps", "0")
	} else {
		o := r.FirstOverlap
		line("lease overlaps", "%d (total %v)", r.LeaseOverlaps, time.Duration(r.LeaseOverlapNS))
		line("first overlap", "%s and %s from t=%v to t=%v (%v)", o.A, o.B, time.Duration(o.StartNS), time.Duration(o.EndNS), time.Duration(o.EndNS-o.StartNS))
	}
	line("resource", "%s (storage truth), porcupine: %s", plural(r.ResourceViolations, "violation", "violations"), r.Porcupine)
	line("ownership", "%s", plural(r.OwnershipViolations, "violation", "violations"))
	line("stale", "%s acted on a dead lease (%d with a stale write accepted); %s fenced by the storage",
		plural(r.StaleSections, "section", "sections"), r.StaleAccepted, plural(r.FencedRejections, "operation", "operations"))
	var check *checker.Result
	if r.judged != nil {
		check = &r.judged.Check
	}
	if check != nil && check.Liveness.Judged {
		lv := check.Liveness
		order := fmt.Sprintf("; %d of %d grants overtook an earlier waiting request", lv.Overtakes, lv.Grants)
		if len(lv.Starved) == 0 {
			line("fairness", "every client progressed after the heal; longest wait %v (%s)%s", time.Duration(lv.LongestWaitNS), orNone(lv.LongestWaitClient), order)
		} else {
			line("fairness", "%d starved (%s); longest wait %v (%s)%s", len(lv.Starved), checker.CapList(lv.Starved, maxListed), time.Duration(lv.LongestWaitNS), lv.LongestWaitClient, order)
		}
	}
	line("claim", "%s", r.Claim)
	// The line starts with the verdict itself: an unsafe run's first
	// reason names the check ("resource: ...", "lease overlap: ...").
	verdict := r.VerdictReason
	switch {
	case verdict == "":
		verdict = string(r.Verdict)
	case !strings.HasPrefix(verdict, string(r.Verdict)+":"):
		verdict = string(r.Verdict) + ": " + verdict
	}
	line("verdict", "%s", verdict)
	if r.Class != "" {
		line("unsafe class", "%s: %s", r.Class, classWords[r.Class])
	}
	if check != nil {
		for _, why := range check.Reasons[min(1, len(check.Reasons)):] {
			fmt.Fprintf(w, "%-16s%s\n", "", why)
		}
	}
	if r.Story != "" {
		line("story", "%s", r.Story)
	}
	if ce := r.Counterexample; ce != nil {
		if s := ce.Shrink; s != nil {
			bound := ""
			if s.Exhausted {
				bound = ", the bound: smallest so far"
			}
			fmt.Fprintf(w, "%-16s%d faults, %d clients, still %s (from %d faults, %d clients; %d runs%s)\n", "shrunk:",
				ce.Faults, ce.Clients, s.Kind, s.FromFaults, s.FromClients, s.Runs, bound)
			for _, f := range s.Schedule {
				fmt.Fprintf(w, "%-16s%s\n", "", f)
			}
			fmt.Fprintf(w, "%-16s%s\n", "shrunk faults:", s.FaultsFile)
		}
		line("repro", "%s", ce.Repro)
	}
	if r.TraceFile != "" {
		line("trace file", "%s", r.TraceFile)
	}
	if r.TraceError != "" {
		line("trace file", "not written: %s", r.TraceError)
	}
	if rp := r.Replay; rp != nil {
		switch {
		case rp.Diff != nil:
			line("replay", "DIVERGED at line %d (see stderr)", rp.Diff.Line)
		case rp.File == "":
			line("replay", "identical in two runs (%d event lines)", rp.Events)
		default:
			line("replay", "identical to %s (%d event lines)", rp.File, rp.Events)
		}
	}
	fmt.Fprintf(w, "trace sha256: %s\n", r.TraceSHA256)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// WriteCounterexample writes the first violation's slice of the history
// to dir/slice.jsonl (JSON Lines, window ±5 s) and porcupine's
// visualization of the resource history to dir/porcupine.html, each
// atomically, and records the paths in the report.
func (r *Report) WriteCounterexample(dir string) error {
	if r.Counterexample == nil || r.judged == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	h, chk := r.judged.History, r.judged.Check
	slice := checker.Slice(h, chk, int64(5*time.Second))
	var b strings.Builder
	for _, ev := range slice {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	slicePath := filepath.Join(dir, "slice.jsonl")
	if err := WriteFileAtomic(slicePath, []byte(b.String())); err != nil {
		return err
	}
	r.Counterexample.SliceFile = slicePath
	if chk.Linearizability.Info != nil {
		htmlPath := filepath.Join(dir, "porcupine.html")
		if err := checker.WriteVisualization(htmlPath, h, chk); err != nil {
			return err
		}
		r.Counterexample.HTMLFile = htmlPath
	}
	return nil
}

// WriteFileAtomic writes data to a temp file beside path and renames it
// over path (mode 0644), so a reader never sees half a file.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// WriteFaults writes a --faults file: a JSON list, one fault per line.
func WriteFaults(path string, fs []faults.Fault) error {
	var b strings.Builder
	b.WriteString("[")
	for i, f := range fs {
		line, err := json.Marshal(f)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	b.WriteString("\n]\n")
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return WriteFileAtomic(path, []byte(b.String()))
}

// clockSetting says a client's configured clock error: "drift -200000 ppm,
// offset 1s".
func clockSetting(c ClockReach) string {
	var parts []string
	if c.DriftPPM != 0 {
		parts = append(parts, fmt.Sprintf("drift %+d ppm", c.DriftPPM))
	}
	if c.OffsetNS != 0 {
		parts = append(parts, fmt.Sprintf("offset %v", time.Duration(c.OffsetNS)))
	}
	return strings.Join(parts, ", ")
}

// classWords says what each unsafe class means (checker.Class).
var classWords = map[checker.Class]string{
	checker.ClassDoubleHold: "two clients believed they held the lock at the same instant",
	checker.ClassResource:   "the protected resource lost an update or accepted a stale write",
	checker.ClassOwnership:  "no double hold and the resource intact, but a client deleted or re-timed the lock key while another client held it",
}

// maxListed bounds the names a summary line lists (a world has up to
// thousands of clients).
const maxListed = 10

// plural is "1 violation", "2 violations".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
