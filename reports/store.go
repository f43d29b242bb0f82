package reports

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/store"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/risk"
	"github.com/locksim/locksim/run"
)

// Store is a result store and this build's id in it (OpenStore).
type Store struct {
	st *store.Store
	id *store.Ident
	// How says how the build was named (store.Ident.How).
	How string
	// Hits, Misses and Corrupt count this process's lookups: runs taken
	// from the store, runs run, and entries found corrupt (then rerun).
	Hits, Misses, Corrupt atomic.Int64
	// Charts and Drawn count the charts Write saved and those of them it
	// drew (the others' pictures came from the store: chartcache.go).
	Charts, Drawn atomic.Int64
	errOnce       sync.Once
	err           error // the first failed write
}

// OpenStore opens the result store in dir (created if needed), bounded
// to maxBytes (0: store.DefaultMaxBytes), for this build; readOnly: for
// a dry run (store.OpenReadOnly: nothing written, maxBytes unused).
func OpenStore(dir string, maxBytes int64, readOnly bool) (*Store, error) {
	id, err := store.This()
	if err != nil {
		return nil, err
	}
	var st *store.Store
	if readOnly {
		st, err = store.OpenReadOnly(dir)
	} else {
		st, err = store.Open(dir, maxBytes)
	}
	if err != nil {
		return nil, err
	}
	return &Store{st: st, id: id, How: id.How}, nil
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.st.Dir() }

// Err is the first write that failed (the report went on without it).
func (s *Store) Err() error { return s.err }

// Trim bounds the store (store.Store.Trim).
func (s *Store) Trim() (removed int, size int64, err error) { return s.st.Trim() }

func (s *Store) failed(err error) {
	if err != nil {
		s.errOnce.Do(func() { s.err = err })
	}
}

// storedRun is an outcome entry's payload: what a report needs of a run.
type storedRun struct {
	// Key is the entry's own key: an outcome moved under another key is
	// not the run asked for.
	Key     string      `json:"key"`
	Outcome run.Outcome `json:"outcome"`
	CPUNS   int64       `json:"cpu_ns"` // Outcome.CPU, which its JSON leaves out
}

// storedTimeline is a drawn timeline entry's payload.
type storedTimeline struct {
	Key         string          `json:"key"`
	Verdict     checker.Verdict `json:"verdict"`
	TraceSHA256 string          `json:"trace_sha256"`
	Story       string          `json:"story"`
	Picture     []byte          `json:"picture"`
	// Minimal is the run's minimal history (run.Outcome.Minimal).
	Minimal *checker.MinimalHistory `json:"minimal"`
}

// timelineKind heads a timeline entry's kind: entries written before
// they held a minimal history are never asked for.
const timelineKind = "timeline+minimal"

// key is req's entry's key ("" when it has none: then it runs).
func (s *Store) key(req sweep.Request) string {
	kind := "outcome"
	if t := req.Timeline; t != nil {
		// The picture's name is where it goes, not what it shows; its
		// kind (PNG or SVG) is.
		ext := t.Path[strings.LastIndexByte(t.Path, '.')+1:]
		kind = strings.Join(append([]string{timelineKind, ext, t.Title}, t.Caption...), "\x00")
	}
	k, err := store.RunKey(s.id, req.Spec, kind)
	if err != nil {
		return ""
	}
	return k
}

// Run answers req from the store, or runs it on r and stores it. A
// timeline request's picture is written to its path either way. (A
// sweep's runs go through it too: sweep.Sweep.Store.)
func (s *Store) Run(r run.Runner, req run.Request) (run.Outcome, error) {
	o, _, err := s.run(r, req, false)
	return o, err
}

// run is Run on a Store that may be nil (every run runs); fresh: run it
// even if the store holds it (its entry is then replaced). hit says the
// outcome came from the store.
func (s *Store) run(r sweep.Runner, req sweep.Request, fresh bool) (o run.Outcome, hit bool, err error) {
	if s == nil {
		o, err = r.Run(req)
		return o, false, err
	}
	key := s.key(req)
	if key != "" && !fresh {
		if o, ok := s.get(key, req); ok {
			s.Hits.Add(1)
			return o, true, nil
		}
	}
	s.Misses.Add(1)
	o, err = r.Run(req)
	if err != nil || key == "" {
		return o, false, err
	}
	var payload []byte
	if t := req.Timeline; t != nil {
		pic, rerr := os.ReadFile(t.Path)
		if rerr != nil {
			return o, false, nil // nothing drawn (no violation): nothing stored
		}
		payload, err = json.Marshal(storedTimeline{Key: key, Verdict: o.Verdict, TraceSHA256: o.TraceSHA256, Story: o.Story, Picture: pic, Minimal: o.Minimal})
	} else {
		payload, err = json.Marshal(storedRun{Key: key, Outcome: o, CPUNS: int64(o.CPU)})
	}
	if err == nil {
		err = s.st.Put(key, payload)
	}
	s.failed(err)
	return o, false, nil
}

// drop removes req's entry: it was found wrong (its run disagreed with it).
func (s *Store) drop(req sweep.Request) {
	if s != nil {
		if key := s.key(req); key != "" {
			s.st.Remove(key)
		}
	}
}

// get reads key's entry; a payload that does not decode, or holds what
// no run gives (validOutcome), counts as corrupt and is removed.
func (s *Store) get(key string, req sweep.Request) (run.Outcome, bool) {
	payload, ok, corrupt := s.st.Get(key)
	if corrupt {
		s.Corrupt.Add(1)
	}
	if !ok {
		return run.Outcome{}, false
	}
	bad := func() (run.Outcome, bool) {
		s.Corrupt.Add(1)
		s.st.Remove(key)
		return run.Outcome{}, false
	}
	if t := req.Timeline; t != nil {
		var e storedTimeline
		if json.Unmarshal(payload, &e) != nil || e.Key != key || len(e.Picture) == 0 ||
			validOutcome(run.Outcome{Verdict: e.Verdict, TraceSHA256: e.TraceSHA256}) != nil || validMinimal(e.Minimal) != nil {
			return bad()
		}
		if err := os.WriteFile(t.Path, e.Picture, 0o644); err != nil {
			return run.Outcome{}, false
		}
		return run.Outcome{Verdict: e.Verdict, TraceSHA256: e.TraceSHA256, Story: e.Story, Minimal: e.Minimal}, true
	}
	var e storedRun
	if json.Unmarshal(payload, &e) != nil || e.Key != key || e.CPUNS < 0 || validOutcome(e.Outcome) != nil {
		return bad()
	}
	e.Outcome.CPU = time.Duration(e.CPUNS)
	return e.Outcome, true
}

// validOutcome checks what a run can give: a known verdict (and class),
// counts that are not negative, a trace hash.
func validOutcome(o run.Outcome) error {
	if !slices.Contains(checker.Verdicts, o.Verdict) {
		return fmt.Errorf("verdict %q", o.Verdict)
	}
	if o.Class != "" && (o.Verdict != checker.VerdictUnsafe || !slices.Contains(checker.Classes, o.Class)) {
		return fmt.Errorf("class %q of a %s run", o.Class, o.Verdict)
	}
	for name, n := range map[string]int{"lease_overlaps": o.LeaseOverlaps, "resource_violations": o.ResourceViolations,
		"ownership_violations": o.OwnershipViolations, "stale_sections": o.StaleSections, "stale_accepted": o.StaleAccepted,
		"fenced_rejections": o.FencedRejections, "starved": o.Starved, "unfired": o.Unfired, "faults_injected": o.Injected,
		"faults_reached": o.Reached, "faults_bit": o.Bit, "clock_unreached": o.ClockUnreached} {
		if n < 0 {
			return fmt.Errorf("%s %d", name, n)
		}
	}
	if !(o.StallMaxMS >= 0) || math.IsInf(o.StallMaxMS, 0) {
		return fmt.Errorf("stall_max_ms %v", o.StallMaxMS)
	}
	if !store.ValidKey(o.TraceSHA256) { // a SHA-256 in hex, as a key is
		return fmt.Errorf("trace_sha256 %q", o.TraceSHA256)
	}
	return nil
}

// validMinimal checks a stored minimal history: present, within its
// bounds, its times not negative and its window in order.
func validMinimal(m *checker.MinimalHistory) error {
	switch {
	case m == nil:
		return fmt.Errorf("no minimal history")
	case len(m.Events) == 0 || len(m.Events) > checker.MaxMinimalEvents:
		return fmt.Errorf("%d events in a minimal history", len(m.Events))
	case len(m.Spans) > checker.MaxMinimalSpans:
		return fmt.Errorf("%d spans in a minimal history", len(m.Spans))
	case m.From < 0 || m.To < m.From:
		return fmt.Errorf("minimal history window %d..%d", m.From, m.To)
	}
	for _, s := range m.Spans {
		if s.From < m.From || s.To > m.To || s.To < s.From {
			return fmt.Errorf("minimal history span %d..%d outside %d..%d", s.From, s.To, m.From, m.To)
		}
		if !s.Kind.Known() {
			return fmt.Errorf("minimal history span %d..%d of unknown kind %q", s.From, s.To, s.Kind)
		}
	}
	return nil
}

// perYearKind heads a per-year entry's kind: a design's whole estimate
// (risk.Result), keyed by its options and profile; the build's sources
// (risk's code and its default profile among them) are in every key.
const perYearKind = "per-year"

// perYearKey is the key of o's estimate ("" when it has none).
func (s *Store) perYearKey(o risk.Options) string {
	if s == nil || o.Profile == nil {
		return ""
	}
	prof, err := json.Marshal(o.Profile)
	if err != nil {
		return ""
	}
	opts := fmt.Sprintf("ttl=%d clients=%d seeds=%d seed=%d", o.TTL, o.Clients, o.Seeds, o.Seed)
	k, err := store.RunKey(s.id, run.Spec{Scenario: "default", Lock: o.Lock, Seed: o.Seed}, strings.Join([]string{perYearKind, opts, string(prof)}, "\x00"))
	if err != nil {
		return ""
	}
	return k
}

// storedPerYear is a per-year entry's payload.
type storedPerYear struct {
	Key    string       `json:"key"`
	Result *risk.Result `json:"result"`
}

// perYear answers o's estimate from the store.
func (s *Store) perYear(o risk.Options) (*risk.Result, bool) {
	key := s.perYearKey(o)
	if key == "" {
		return nil, false
	}
	payload, ok, corrupt := s.st.Get(key)
	if corrupt {
		s.Corrupt.Add(1)
	}
	if !ok {
		return nil, false
	}
	var e storedPerYear
	if json.Unmarshal(payload, &e) != nil || e.Key != key || e.Result == nil || e.Result.Lock != o.Lock || e.Result.Runs <= 0 {
		s.Corrupt.Add(1)
		s.st.Remove(key)
		return nil, false
	}
	return e.Result, true
}

// putPerYear keeps o's estimate r.
func (s *Store) putPerYear(o risk.Options, r *risk.Result) {
	key := s.perYearKey(o)
	if key == "" {
		return
	}
	payload, err := json.Marshal(storedPerYear{Key: key, Result: r})
	if err == nil {
		err = s.st.Put(key, payload)
	}
	s.failed(err)
}
