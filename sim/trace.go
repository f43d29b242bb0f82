package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"strconv"
	"unicode/utf8"
	"unsafe"

	evt "github.com/locksim/locksim/event"
)

// Event is one line of the trace. T is true time in ns; Local, when set,
// the acting process's local clock. Kind, Op and Result are the history's
// vocabulary (package event, imported as evt: sim has its own scheduler
// type event); kinds in use:
//
//	engine:  heal, stop, fault, fault-end, pause, failover, demote,
//	         reconfigure, crash, restart, exit
//	node:    cmd (Peer ran Cmd, got Reply), key-touch
//	storage: store-read, store-write
//	client:  whatever its program records (call, ok, fail, unknown, renew, ...)
type Event struct {
	T      int64      `json:"t"`
	Proc   string     `json:"p"`
	Kind   evt.Kind   `json:"k"`
	Local  int64      `json:"local,omitempty"`
	Peer   string     `json:"peer,omitempty"`
	Cmd    string     `json:"cmd,omitempty"`
	Reply  string     `json:"reply,omitempty"`
	Op     evt.Op     `json:"op,omitempty"`
	OpID   int64      `json:"op_id,omitempty"`
	Result evt.Result `json:"result,omitempty"` // ok | fenced | del | expire | read
	Lock   string     `json:"lock,omitempty"`
	Until  int64      `json:"until,omitempty"` // local time a holder believes it holds until
	Token  int64      `json:"token,omitempty"`
	Value  int64      `json:"value,omitempty"`
	Detail string     `json:"detail,omitempty"`
	// Fault is set on fault, fault-end and targeted pause events: the
	// fault's number in Config.Faults, counting from 1. It is not in the
	// trace file (whose lines say the fault in Detail) nor in its hash:
	// it lets a reader of the history find the fault as data.
	Fault int `json:"-"`
	// Held is set on key-touch events: the values the touched key held
	// since it was created, oldest first, at most 8 (a string's value; a
	// hash's field names, sorted, joined by ","), so that a checker can
	// tell whose lease it was. Like Fault, it is not in the trace file
	// nor in its hash.
	Held []string `json:"-"`
}

// Trace hashes every event (SHA-256 over its JSON Lines), optionally writes
// them, and keeps up to max events in memory for checkers.
type Trace struct {
	w        io.Writer
	werr     error
	h        hash.Hash
	n        int64
	max      int
	keepCmds bool
	capped   bool
	history  []Event
	line     []byte
	cmd      []byte // scratch for addCmd's command summary
	reply    []byte // scratch for addCmd's reply line
}

func newTrace(w io.Writer, max int, keepCmds bool) *Trace {
	return &Trace{w: w, h: sha256.New(), max: max, keepCmds: keepCmds}
}

func (t *Trace) add(ev Event) {
	t.n++
	t.line = appendEvent(t.line[:0], &ev)
	t.line = append(t.line, '\n')
	t.h.Write(t.line)
	if t.w != nil && t.werr == nil {
		_, t.werr = t.w.Write(t.line)
	}
	if ev.Kind == evt.KindCmd && !t.keepCmds {
		return // node commands go to the trace and its hash, not the history
	}
	if len(t.history) < t.max {
		t.history = append(t.history, ev)
	} else {
		t.capped = true
	}
}

// addCmd adds a node's "cmd" event: proc ran args for peer and replied
// reply (the raw RESP bytes). Unless the history keeps commands, the
// summary and the reply's first line are encoded from scratch buffers, not
// built as strings: this is one event per Redis command.
func (t *Trace) addCmd(at int64, proc, peer string, args []string, reply []byte) {
	t.cmd = appendSummary(t.cmd[:0], args)
	t.reply = appendFirstLine(t.reply[:0], reply)
	if t.keepCmds {
		t.add(Event{T: at, Proc: proc, Kind: evt.KindCmd, Peer: peer, Cmd: string(t.cmd), Reply: string(t.reply)})
		return
	}
	// add keeps no "cmd" event when !keepCmds, so the strings may alias
	// the scratch buffers.
	t.add(Event{T: at, Proc: proc, Kind: evt.KindCmd, Peer: peer, Cmd: unsafe.String(unsafe.SliceData(t.cmd), len(t.cmd)), Reply: unsafe.String(unsafe.SliceData(t.reply), len(t.reply))})
}

func (t *Trace) finish() {}

func (t *Trace) sum() string { return hex.EncodeToString(t.h.Sum(nil)) }

// Err is the first error writing the trace file, if any.
func (t *Trace) Err() error { return t.werr }

// appendEvent encodes ev exactly as encoding/json.Marshal would (field
// order, omitempty, HTML-safe escaping), without reflection: the trace
// encodes one event per Redis command. encode_test.go checks the two agree.
func appendEvent(b []byte, ev *Event) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendInt(b, ev.T, 10)
	b = appendStr(b, `,"p":`, ev.Proc, true)
	b = appendStr(b, `,"k":`, string(ev.Kind), true)
	b = appendInt(b, `,"local":`, ev.Local)
	b = appendStr(b, `,"peer":`, ev.Peer, false)
	b = appendStr(b, `,"cmd":`, ev.Cmd, false)
	b = appendStr(b, `,"reply":`, ev.Reply, false)
	b = appendStr(b, `,"op":`, string(ev.Op), false)
	b = appendInt(b, `,"op_id":`, ev.OpID)
	b = appendStr(b, `,"result":`, string(ev.Result), false)
	b = appendStr(b, `,"lock":`, ev.Lock, false)
	b = appendInt(b, `,"until":`, ev.Until)
	b = appendInt(b, `,"token":`, ev.Token)
	b = appendInt(b, `,"value":`, ev.Value)
	b = appendStr(b, `,"detail":`, ev.Detail, false)
	return append(b, '}')
}

func appendInt(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	b = append(b, key...)
	return strconv.AppendInt(b, v, 10)
}

func appendStr(b []byte, key, s string, always bool) []byte {
	if s == "" && !always {
		return b
	}
	b = append(b, key...)
	return appendJSONString(b, s)
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does with HTML escaping on.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
