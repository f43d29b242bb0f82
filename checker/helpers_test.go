package checker

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/event"
)

// traceLine is one JSON Lines record of a locksim trace (--trace).
type traceLine struct {
	T      int64        `json:"t"`
	Proc   string       `json:"p"`
	Kind   event.Kind   `json:"k"`
	Op     event.Op     `json:"op"`
	OpID   int64        `json:"op_id"`
	Until  int64        `json:"until"`
	Token  int64        `json:"token"`
	Value  int64        `json:"value"`
	Result event.Result `json:"result"`
	Lock   string       `json:"lock"`
	Peer   string       `json:"peer"`
	Detail string       `json:"detail"`
	Fault  int          `json:"-"`
	Held   []string     `json:"-"` // not in trace files: a loaded history judges touches without it
}

// loadTrace reads a locksim trace (JSON Lines, gzipped if the name ends in
// .gz) into a History of the default scenario (the bonus pool of 300); the
// clients are the processes with operations, the heal and the end are the
// world's heal and stop.
func loadTrace(tb testing.TB, path string, fencing event.Fencing) History {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			tb.Fatal(err)
		}
		r = z
	}
	h := History{Fencing: fencing, Resource: ResourcePool, Initial: 300}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l traceLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			tb.Fatal(err)
		}
		if l.Kind == event.KindCmd {
			continue
		}
		e := Event(l)
		h.Events = append(h.Events, e)
		if e.Op != "" && !seen[e.Proc] {
			seen[e.Proc] = true
			h.Clients = append(h.Clients, e.Proc)
		}
		switch {
		case e.Proc == "world" && e.Kind == event.KindHeal:
			h.Heal = e.T
		case e.Proc == "world" && e.Kind == event.KindStop:
			h.End = e.T
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return h
}

// Builders of hand-made histories. Times are in ns; the helpers append in
// the order given, and history() sorts by time (stable), as a run's
// history is.

type builder struct {
	h History
}

func newHistory(resource string, initial int64, fencing event.Fencing, clients ...string) *builder {
	return &builder{h: History{Resource: resource, Initial: initial, Fencing: fencing, Clients: clients}}
}

func (b *builder) add(es ...Event) *builder {
	b.h.Events = append(b.h.Events, es...)
	return b
}

// op records a client operation: a call at call and, unless kind is "",
// its outcome at ret.
func (b *builder) op(c string, op event.Op, id, call, ret int64, kind event.Kind, value int64) *builder {
	b.add(Event{T: call, Proc: c, Kind: event.KindCall, Op: op, OpID: id, Value: value})
	if kind != "" {
		b.add(Event{T: ret, Proc: c, Kind: kind, Op: op, OpID: id, Value: value})
	}
	return b
}

// acquire records an acquire call and outcome; until is the ok's validity.
func (b *builder) acquire(c string, id, call, ret int64, kind event.Kind, until int64) *builder {
	b.add(Event{T: call, Proc: c, Kind: event.KindCall, Op: event.OpAcquire, OpID: id})
	if kind != "" {
		b.add(Event{T: ret, Proc: c, Kind: kind, Op: event.OpAcquire, OpID: id, Until: until})
	}
	return b
}

func (b *builder) renew(c string, id, t, until int64) *builder {
	return b.add(Event{T: t, Proc: c, Kind: event.KindRenew, Op: event.OpAcquire, OpID: id, Until: until})
}

// store records the storage's own record of a write.
func (b *builder) store(c string, t int64, result event.Result, value int64, owner string) *builder {
	return b.add(Event{T: t, Proc: "store", Kind: event.KindStoreWrite, Peer: c, Lock: "bonus-pool", Result: result, Value: value,
		Detail: "version=0 owner=" + owner})
}

func (b *builder) world(t int64, kind event.Kind, detail string) *builder {
	return b.add(Event{T: t, Proc: "world", Kind: kind, Detail: detail})
}

func (b *builder) history(heal, end int64) History {
	h := b.h
	h.Events = append([]Event(nil), b.h.Events...)
	slices.SortStableFunc(h.Events, func(x, y Event) int { return cmp.Compare(x.T, y.T) })
	h.Heal, h.End = heal, end
	return h
}
