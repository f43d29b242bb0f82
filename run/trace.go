package run

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/inputfile"
	"github.com/locksim/locksim/internal/outfile"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/scenarios"
)

// A trace file written by 'locksim run --trace' starts with one header
// line that says which run it is (Header); the event lines follow, and a
// footer line ends it (Footer: the count and SHA-256 of the lines above;
// files written before the footer existed have none). The trace's SHA-256 is that of
// the event lines alone, so the hash a sweep or report records for the same
// seed is the same.

// Header is the first line of a trace file: everything needed to run the
// same world again.
type Header struct {
	Locksim    string         `json:"locksim"`  // the version that wrote it
	Scenario   string         `json:"scenario"` // a built-in id, or a scenario file's absolute path
	Lock       string         `json:"lock"`
	Seed       uint64         `json:"seed"`
	Clients    int            `json:"clients"`
	Nodes      int            `json:"nodes"`
	DurationNS int64          `json:"duration_ns"`
	LivenessNS int64          `json:"liveness_ns"`
	Faults     []faults.Fault `json:"faults"` // the schedule that ran (the seed's, --faults, --pause's)
	// Parameters a spec sets beyond the above (0: the scenario's).
	ReplLagNS   int64 `json:"repl_lag_ns,omitempty"`
	DownAfterNS int64 `json:"down_after_ns,omitempty"`
	HoldMinNS   int64 `json:"hold_min_ns,omitempty"`
	HoldMaxNS   int64 `json:"hold_max_ns,omitempty"`
	Fairness    bool  `json:"fairness,omitempty"`
	Careful     bool  `json:"careful,omitempty"`    // the careful workload (--careful)
	Step        *int  `json:"step,omitempty"`       // the scenario file's sweep step
	MaxEvents   int64 `json:"max_events,omitempty"` // the event budget a spec sets
	// ScenarioSHA256 is the scenario file's hash when Scenario is a file:
	// replay refuses a file edited since the recording.
	ScenarioSHA256 string `json:"scenario_sha256,omitempty"`
}

type headerLine struct {
	Run *Header `json:"locksim_run"`
}

// RealRunKey names the header line of a real-arm run's trace
// ({"locksim_real_run":{...}}, written by internal/realarm/realredis/trace.go):
// a history of real processes in real time, which no run replays.
const RealRunKey = "locksim_real_run"

// Header describes the job's run; version is the locksim version line.
func (j *Job) Header(version string) Header {
	scenario := j.Spec.ScenarioID()
	if _, err := scenarios.Get(scenario); err != nil {
		if abs, err := filepath.Abs(scenario); err == nil {
			scenario = abs
		}
	}
	fs := j.Config.Faults
	if fs == nil {
		fs = []faults.Fault{}
	}
	p := j.Spec.Params
	return Header{Locksim: version, Scenario: scenario, Lock: j.Lock.ID, Seed: j.Config.Seed, Clients: j.Config.Clients, Nodes: len(j.Config.Nodes),
		DurationNS: int64(j.Config.Duration), LivenessNS: int64(j.Config.Liveness), Faults: fs,
		ReplLagNS: int64(p.ReplLag), DownAfterNS: int64(p.DownAfter), HoldMinNS: int64(p.HoldMin), HoldMaxNS: int64(p.HoldMax),
		Fairness: j.Spec.Fairness, Careful: p.Careful, Step: j.Spec.Step, MaxEvents: j.Spec.MaxEvents, ScenarioSHA256: ScenarioHash(scenario)}
}

// ScenarioHash is the SHA-256 of a scenario file ("" for a built-in id or
// an unreadable path).
func ScenarioHash(scenario string) string {
	h, _ := scenarioHash(scenario)
	return h
}

// scenarioHash is ScenarioHash, with why a file could not be read.
func scenarioHash(scenario string) (string, error) {
	if _, err := scenarios.Get(scenario); err == nil {
		return "", nil
	}
	data, err := inputfile.Read(scenario, scenarios.MaxFileBytes)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// WriteHeader writes h as a trace file's first line.
func WriteHeader(w io.Writer, h Header) error {
	b, err := json.Marshal(headerLine{Run: &h})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Bounds on a trace file's lines when it is read back: a header holds a
// schedule of at most 1000 faults (about 200 KB); an event line is far
// shorter.
const (
	maxHeaderLine = 4 << 20
	maxEventLine  = 1 << 20
)

// readLine reads one line of at most max bytes (the newline included) from
// r; a longer one is an error, and so is an error of r's. At the end of
// the file it returns what is left (nil: nothing) and io.EOF.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(line)+len(part) > max {
			return nil, errLongLine
		}
		line = append(line, part...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

var errLongLine = errors.New("line too long")

// ReadHeader reads a trace file's header line (path names the file in
// errors); r is left at the first event.
func ReadHeader(path string, r *bufio.Reader) (Header, error) {
	line, err := readLine(r, maxHeaderLine)
	if err == errLongLine {
		return Header{}, fmt.Errorf("%s: line 1 is longer than %d bytes: not a locksim run header (is this a trace written by 'locksim run --trace'?)", path, maxHeaderLine)
	}
	if err != nil && len(line) == 0 {
		if err == io.EOF {
			return Header{}, fmt.Errorf("%s: empty file (not a trace written by 'locksim run --trace')", path)
		}
		return Header{}, fmt.Errorf("%s: %v", path, UnwrapPathError(err))
	}
	var hl headerLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hl); err != nil || hl.Run == nil {
		var other map[string]json.RawMessage
		if json.Unmarshal(line, &other) == nil && other[RealRunKey] != nil {
			return Header{}, fmt.Errorf("%s is the trace of a real-arm run ('locksim run --backend real'): a real run is not replayable; replay works on simulator traces only (written by 'locksim run --trace' without --backend real)", path)
		}
		return Header{}, fmt.Errorf("%s: line 1 is not a locksim run header (is this a trace written by 'locksim run --trace'?)", path)
	}
	return *hl.Run, nil
}

// UnwrapPathError is an *os.PathError's cause without the path (for
// messages that name the path themselves), or err.
func UnwrapPathError(err error) error { return outfile.UnwrapPathError(err) }

// Job builds the run a header describes (path names the file in errors).
func (h Header) Job(path string) (*Job, error) {
	if info, err := locks.Lookup(h.Lock); err != nil {
		return nil, fmt.Errorf("%s: the header's lock %q is not in this locksim's catalogue", path, h.Lock)
	} else if info.Unavailable != "" {
		return nil, fmt.Errorf("%s: the header's lock %s is %s", path, h.Lock, info.Unavailable)
	}
	if h.ScenarioSHA256 != "" {
		now, err := scenarioHash(h.Scenario)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%s: the scenario file %s is not found: replay needs the file as it was at the recording (sha256 %.12s…)", path, h.Scenario, h.ScenarioSHA256)
		case err != nil:
			return nil, fmt.Errorf("%s: the scenario file %s: %v", path, h.Scenario, err)
		case now != h.ScenarioSHA256:
			return nil, fmt.Errorf("%s: the scenario file %s changed since the recording (sha256 %.12s… then, %.12s… now): replay needs the file as it was", path, h.Scenario, h.ScenarioSHA256, now)
		}
	}
	fs := h.Faults
	if fs == nil {
		fs = []faults.Fault{}
	}
	s := Spec{Scenario: h.Scenario, Lock: h.Lock, Seed: h.Seed, Faults: fs, Fairness: h.Fairness, Step: h.Step, MaxEvents: h.MaxEvents,
		Params: scenarios.Params{Clients: h.Clients, Nodes: h.Nodes, Duration: time.Duration(h.DurationNS), Liveness: time.Duration(h.LivenessNS),
			ReplLag: time.Duration(h.ReplLagNS), DownAfter: time.Duration(h.DownAfterNS), HoldMin: time.Duration(h.HoldMinNS), HoldMax: time.Duration(h.HoldMaxNS),
			Careful: h.Careful}}
	j, err := s.Build()
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			switch ie.Field {
			case "scenario":
				return nil, fmt.Errorf("%s: the header's scenario %q: %v", path, h.Scenario, ie.Err)
			}
		}
		return nil, fmt.Errorf("%s: the header describes no valid run: %v", path, err)
	}
	return j, nil
}

// Footer is a trace file's last line: what the lines above it were when
// 'locksim run --trace' wrote them, so that replay tells a file edited or
// damaged since from a run that diverged.
type Footer struct {
	Events      int64  `json:"events"`       // event lines
	TraceSHA256 string `json:"trace_sha256"` // theirs: the run's trace_sha256
	// HeaderSHA256 is the header line's (its newline included).
	HeaderSHA256 string `json:"header_sha256"`
}

type footerLine struct {
	End *Footer `json:"locksim_end"`
}

var footerPrefix = []byte(`{"locksim_end":`)

// NewFooter is the footer of a trace file whose header is h and whose
// events lines hash to traceSHA256.
func NewFooter(h Header, events int64, traceSHA256 string) (Footer, error) {
	var b bytes.Buffer
	if err := WriteHeader(&b, h); err != nil {
		return Footer{}, err
	}
	sum := sha256.Sum256(b.Bytes())
	return Footer{Events: events, TraceSHA256: traceSHA256, HeaderSHA256: hex.EncodeToString(sum[:])}, nil
}

// WriteFooter writes f as a trace file's last line.
func WriteFooter(w io.Writer, f Footer) error {
	b, err := json.Marshal(footerLine{End: &f})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// CheckTrace reads the trace file at path through and checks its lines
// against its footer: an error says how the file differs from what was
// written (edited, damaged, cut short), or that it is no trace. A file
// without a footer (written before footers, or cut short) passes with a
// nil footer: the replay's comparison finds where it ends.
func CheckTrace(path string) (*Footer, error) {
	file, err := inputfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %q: %v", path, err)
	}
	defer file.Close()
	r := bufio.NewReaderSize(file, 1<<20)
	header, err := readLine(r, maxHeaderLine)
	if err == errLongLine {
		return nil, fmt.Errorf("%s: line 1 is longer than %d bytes: not a locksim run header (is this a trace written by 'locksim run --trace'?)", path, maxHeaderLine)
	} else if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %v", path, UnwrapPathError(err))
	}
	headerSum := sha256.Sum256(header)
	events := sha256.New()
	var n int64
	var last []byte // held back: the footer, if it is the last line
	for lineNo := 2; err == nil; lineNo++ {
		var line []byte
		line, err = readLine(r, maxEventLine)
		if err == errLongLine {
			return nil, fmt.Errorf("%s: line %d is longer than %d bytes: not a trace event (the file is damaged, or no trace written by 'locksim run --trace')", path, lineNo, maxEventLine)
		} else if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s: %v", path, UnwrapPathError(err))
		}
		if len(line) == 0 {
			break
		}
		if last != nil {
			events.Write(last)
			n++
		}
		last = line
	}
	if last == nil || !bytes.HasPrefix(last, footerPrefix) || !bytes.HasSuffix(last, []byte("\n")) {
		return nil, nil
	}
	var fl footerLine
	dec := json.NewDecoder(bytes.NewReader(last))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fl); err != nil || fl.End == nil {
		return nil, fmt.Errorf("%s was edited or corrupted after it was written: its last line (line %d) is not a trace footer", path, n+2)
	}
	f := fl.End
	var diffs []string
	if got := hex.EncodeToString(headerSum[:]); got != f.HeaderSHA256 {
		diffs = append(diffs, fmt.Sprintf("the header (line 1) hashes to sha256 %.12s…, the footer records %.12s…", got, f.HeaderSHA256))
	}
	if n != f.Events {
		diffs = append(diffs, fmt.Sprintf("it has %d event lines, the footer records %d", n, f.Events))
	} else if got := hex.EncodeToString(events.Sum(nil)); got != f.TraceSHA256 {
		diffs = append(diffs, fmt.Sprintf("its event lines hash to sha256 %.12s…, the footer records %.12s… (the run's trace_sha256)", got, f.TraceSHA256))
	}
	if diffs != nil {
		return nil, fmt.Errorf("%s was edited or corrupted after it was written: %s; replay needs the file as 'locksim run --trace' wrote it", path, strings.Join(diffs, "; "))
	}
	return f, nil
}

// Comparer is the trace writer of a replay: it compares every event line
// the replayed run writes with the recorded file's (read from Recorded,
// left at the first event by ReadHeader), and keeps the first difference.
type Comparer struct {
	Recorded *bufio.Reader
	cur      []byte
	lines    int
	diff     *Diff
}

// Diff is the first line where a replay and its recording differ.
type Diff struct {
	Line     int    `json:"line"` // in the file (the header is line 1)
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	// Truncated: the recording ends (or is cut mid-line) here while the
	// run went on: a damaged file, not a divergence.
	Truncated bool `json:"truncated,omitempty"`
}

func (c *Comparer) Write(p []byte) (int, error) {
	c.cur = append(c.cur, p...)
	for {
		i := bytes.IndexByte(c.cur, '\n')
		if i < 0 {
			break
		}
		line := c.cur[:i+1]
		c.lines++
		if c.diff == nil {
			rec, err := c.Recorded.ReadBytes('\n')
			if bytes.HasPrefix(rec, footerPrefix) {
				rec, err = nil, io.EOF // the recording's events end here
			}
			if !bytes.Equal(rec, line) {
				c.diff = &Diff{Line: c.lines + 1, Recorded: strings.TrimSuffix(string(rec), "\n"), Replayed: strings.TrimSuffix(string(line), "\n")}
				if err != nil && len(rec) == 0 {
					c.diff.Recorded = "(end of file)"
					c.diff.Truncated = true
				} else if err != nil && !bytes.HasSuffix(rec, []byte("\n")) && bytes.HasPrefix(line, rec) {
					c.diff.Recorded += " (cut mid-line)"
					c.diff.Truncated = true
				}
			}
		}
		c.cur = c.cur[i+1:]
	}
	return len(p), nil
}

// Finish ends the comparison (a recording longer than the replay is a
// difference) and returns the first difference (nil: identical) and the
// number of event lines compared.
func (c *Comparer) Finish() (*Diff, int) {
	if c.diff == nil {
		if rec, _ := c.Recorded.ReadBytes('\n'); len(rec) > 0 && !bytes.HasPrefix(rec, footerPrefix) {
			c.diff = &Diff{Line: c.lines + 2, Recorded: strings.TrimSuffix(string(rec), "\n"), Replayed: "(end of the replayed trace)"}
		}
	}
	return c.diff, c.lines
}
