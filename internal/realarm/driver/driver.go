// Package driver is the codec of locksim's lock-driver protocol
// (docs/DRIVERS.md): JSON lines between the real arm and a driver, a
// program in any language that wraps one lock library. The harness writes
// Requests on the driver's stdin; the driver writes Lines on its stdout:
// one reply per request, and pause-point lines before continuing.
//
// Decode is strict: a line that is not one JSON object, that has a field
// the protocol does not name, or that is neither a reply nor a point is an
// error that quotes the line, so a bad driver is told exactly what it said.
package driver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Version is the protocol's version, sent in start.
const Version = 1

// MaxLine bounds one line from a driver, in bytes.
const MaxLine = 64 << 10

// MaxLineText is MaxLine for messages.
const MaxLineText = "65,536"

// Request types (Request.Type).
const (
	Start    = "start"
	Acquire  = "acquire"
	Release  = "release"
	Renew    = "renew"
	Read     = "read"
	Write    = "write"
	Continue = "continue"
	Stop     = "stop"
	// Cancel is sent, to a driver whose start reply declared cancel,
	// when an acquire, renew or release has gone unanswered for
	// CancelAfter of its bound: the driver stops waiting for the library
	// and answers that request now (unknown, "cancelled"). It is never
	// answered itself; one that arrives when nothing is outstanding is
	// ignored.
	Cancel = "cancel"
)

// Cancellable reports whether a request of type t may be cancelled: the
// lock library's calls, never start nor the storage's read and write.
func Cancellable(t string) bool { return t == Acquire || t == Renew || t == Release }

// CancelAfter is the part of a request's bound after which a cancellable
// request is cancelled: half, at least a TTL (the bound is at least two),
// past the tries and socket timeouts start hands a driver; the other half
// is the driver's to answer in, on a loaded machine.
func CancelAfter(bound time.Duration) time.Duration { return bound / 2 }

// Results (Line.Result).
const (
	OK      = "ok"      // the library (or the storage) did it
	Fail    = "fail"    // a clean refusal: lock taken, not the owner, write fenced
	Unknown = "unknown" // an error that may have taken effect (timeout, reset)
)

// Request is one line from the harness to a driver.
type Request struct {
	Type string `json:"type"`

	// start only.
	Protocol  int      `json:"protocol,omitempty"`
	Client    string   `json:"client,omitempty"`     // the client's name; the driver names its connections with it
	Key       string   `json:"key,omitempty"`        // the lock key
	TTLms     int64    `json:"ttl_ms,omitempty"`     // the lease to ask for
	Nodes     []string `json:"nodes,omitempty"`      // host:port of each Redis node (through the run's proxies)
	Storage   string   `json:"storage,omitempty"`    // host:port of the protected storage (RESP)
	TimeoutMs int64    `json:"timeout_ms,omitempty"` // socket timeout for every Redis call
	RetryMs   int64    `json:"retry_ms,omitempty"`   // the wait between acquire tries the design uses
	Tries     int      `json:"tries,omitempty"`      // acquire tries before giving up
	// A Sentinel-managed world (a primary, its replicas, Sentinels) gives
	// these instead of Nodes (which is then empty): this client's address
	// for each Sentinel, the name they monitor the primary under, and
	// Routes, from each node's address as Sentinel names it to this
	// client's address for that node (dial the route, so the run's
	// per-link faults reach the driver; docs/DRIVERS.md). Optional fields
	// of protocol version 1: a driver that does not know them sees no
	// nodes and refuses.
	Sentinels  []string          `json:"sentinels,omitempty"`
	MasterName string            `json:"master_name,omitempty"`
	Routes     map[string]string `json:"routes,omitempty"`

	// release and renew: the lease's value, as acquire returned it.
	Value string `json:"value,omitempty"`
	// read and write: the storage command to send as is, on the driver's
	// own storage connection (the fencing token, when there is one, is in
	// it).
	Command []string `json:"command,omitempty"`
}

// Line is one line from a driver: a reply (Re names the request it
// answers) or a pause point (Point).
type Line struct {
	// Point, when set, is a pause point the driver reached
	// (locks.PausePoint names: acquiring, after-check, renewing); the
	// driver waits for a continue request before going on.
	Point string `json:"point,omitempty"`

	Re     string `json:"re,omitempty"`     // the request type this answers
	Result string `json:"result,omitempty"` // ok, fail or unknown
	Error  string `json:"error,omitempty"`  // what the library or the storage said, on fail or unknown

	// start's reply.
	Library string `json:"library,omitempty"` // the library and its version
	// Renew, in start's reply, declares that the driver renews a held
	// lease with the library's own extension when asked (a renew request):
	// in a world whose lock renews (locks.Info.Renews: --lock watchdog)
	// the harness then sends renew every third of the TTL while a section
	// runs on. A driver that does not declare it is never sent renew.
	Renew bool `json:"renew,omitempty"`
	// Cancel, in start's reply, declares that the driver reads cancel
	// while a library call is outstanding and then answers it at once:
	// a driver for a library whose acquire never gives up (docs/DRIVERS.md).
	// A driver that does not declare it is never sent cancel.
	Cancel bool `json:"cancel,omitempty"`

	// acquire's (and renew's) reply on ok.
	Value string `json:"value,omitempty"` // the lease's value (the key's random value)
	// Token is acquire's fencing token (0: none): in a world whose
	// storage fences (--lock fencing) the harness puts it in the storage
	// commands it hands the driver, as Go fenced clients do; there an
	// acquire ok without one is an error.
	Token int64 `json:"token,omitempty"`
	// ValidUntilMs is the end of the validity the library believes in,
	// as a Unix time in milliseconds on the driver's own clock (Python's
	// time.time()*1000, JavaScript's Date.now() base): exact, whatever the
	// pipe's delay. ValidityMs is the same as a duration from the moment
	// the driver writes the reply (the harness counts it from the line's
	// receipt, so it can only be later). Neither: no validity signal (the
	// holder believes until it releases).
	ValidUntilMs *float64 `json:"valid_until_ms,omitempty"`
	ValidityMs   *float64 `json:"validity_ms,omitempty"`

	// At is the run's true time the harness read the line (not part of
	// the protocol: set by the harness).
	At int64 `json:"-"`

	// read and write replies: the storage's reply (strings).
	Reply []string `json:"reply,omitempty"`
}

// Encode is r as one line (with its newline).
func Encode(r Request) []byte {
	b, err := json.Marshal(r)
	if err != nil { // a Request holds strings and numbers only
		panic(err)
	}
	return append(b, '\n')
}

// Requests lists the request types a driver may answer (continue and
// cancel are never answered).
var Requests = []string{Start, Acquire, Release, Renew, Read, Write, Stop}

// Decode parses one line from a driver.
func Decode(line []byte) (Line, error) {
	var l Line
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return l, fmt.Errorf("not a JSON object: %s", Quote(line))
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, fmt.Errorf("not a protocol line (%v): %s", err, Quote(line))
	}
	if dec.More() {
		return l, fmt.Errorf("more than one JSON value on a line: %s", Quote(line))
	}
	if len(l.Reply) == 0 {
		l.Reply = nil // "reply":[] is no reply, as its absence is
	}
	switch {
	case l.Point != "" && l.Re != "":
		return l, fmt.Errorf("both a point and a reply: %s", Quote(line))
	case l.Point != "":
		switch l.Point {
		case "acquiring", "after-check", "renewing":
			return l, nil
		}
		return l, fmt.Errorf("unknown pause point %q (want acquiring, after-check or renewing): %s", l.Point, Quote(line))
	case l.Re == "":
		return l, fmt.Errorf("neither a reply (\"re\") nor a point (\"point\"): %s", Quote(line))
	}
	known := false
	for _, r := range Requests {
		known = known || r == l.Re
	}
	if !known {
		return l, fmt.Errorf("a reply to an unknown request %q: %s", l.Re, Quote(line))
	}
	switch l.Result {
	case OK, Fail, Unknown:
	default:
		return l, fmt.Errorf("result %q (want ok, fail or unknown): %s", l.Result, Quote(line))
	}
	if l.Renew && l.Re != Start {
		return l, fmt.Errorf("\"renew\" belongs in start's reply, not %s's: %s", l.Re, Quote(line))
	}
	if l.Cancel && l.Re != Start {
		return l, fmt.Errorf("\"cancel\" belongs in start's reply, not %s's: %s", l.Re, Quote(line))
	}
	if l.Token < 0 {
		return l, fmt.Errorf("token %d is negative (0: none): %s", l.Token, Quote(line))
	}
	if l.ValidityMs != nil && (*l.ValidityMs < -1e9 || *l.ValidityMs > 1e9) {
		return l, fmt.Errorf("validity_ms %v out of range: %s", *l.ValidityMs, Quote(line))
	}
	if l.ValidUntilMs != nil && (*l.ValidUntilMs < 0 || *l.ValidUntilMs > 1e14) {
		return l, fmt.Errorf("valid_until_ms %v out of range (a Unix time in ms): %s", *l.ValidUntilMs, Quote(line))
	}
	return l, nil
}

// ErrTooLong is a line longer than MaxLine.
var ErrTooLong = errors.New("line longer than the protocol's bound")

// Quote is line for an error message: quoted, cut at 200 bytes.
func Quote(line []byte) string {
	s := strings.TrimRight(string(line), "\r\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}
