package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
)

// Event is one line of the trace. T is true time in ns; Local, when set,
// the acting process's local clock. Kinds in use:
//
//	engine: start, heal, stop, fault, fault-end, failover, crash, restart
//	node:   cmd (Peer ran Cmd, got Reply)
//	client: whatever its program records (op, call, ok, fail, unknown, ...)
type Event struct {
	T      int64  `json:"t"`
	Proc   string `json:"p"`
	Kind   string `json:"k"`
	Local  int64  `json:"local,omitempty"`
	Peer   string `json:"peer,omitempty"`
	Cmd    string `json:"cmd,omitempty"`
	Reply  string `json:"reply,omitempty"`
	Op     string `json:"op,omitempty"`
	OpID   int64  `json:"op_id,omitempty"`
	Result string `json:"result,omitempty"` // ok | fail | unknown
	Lock   string `json:"lock,omitempty"`
	Until  int64  `json:"until,omitempty"` // local time a holder believes it holds until
	Token  int64  `json:"token,omitempty"`
	Value  int64  `json:"value,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Trace hashes every event (SHA-256 over its JSON Lines), optionally writes
// them, and keeps up to max events in memory for checkers.
type Trace struct {
	w       io.Writer
	werr    error
	h       hash.Hash
	n       int64
	max     int
	capped  bool
	history []Event
	line    []byte
}

func newTrace(w io.Writer, max int) *Trace {
	return &Trace{w: w, h: sha256.New(), max: max}
}

func (t *Trace) add(ev Event) {
	t.n++
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err) // Event has only strings and integers
	}
	t.line = append(append(t.line[:0], b...), '\n')
	t.h.Write(t.line)
	if t.w != nil && t.werr == nil {
		_, t.werr = t.w.Write(t.line)
	}
	if len(t.history) < t.max {
		t.history = append(t.history, ev)
	} else {
		t.capped = true
	}
}

func (t *Trace) finish() {}

func (t *Trace) sum() string { return hex.EncodeToString(t.h.Sum(nil)) }

// Err is the first error writing the trace file, if any.
func (t *Trace) Err() error { return t.werr }
