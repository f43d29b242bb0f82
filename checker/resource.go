package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locksim/locksim/event"
)

// Resource safety has two checks of different strength:
//
//   - StorageTruth reads the storage's own records (Proc "store", Kind
//     "store-write") and is exact: every accepted write must move the object
//     by exactly one step from the previous accepted value.
//   - Linearizable reads only what the clients saw (their read and write
//     operations with ok / fail / unknown outcomes) and asks porcupine
//     whether some order of whole critical sections explains it.
//
// A lost update or an accepted stale write is caught by both; porcupine's
// view is the one that needs no trust in the storage's log.

// Resource names (History.Resource).
const (
	ResourcePool    = "pool"    // each section writes the value it read minus one
	ResourceCounter = "counter" // each section writes the value it read plus one
)

// MaxListedViolations bounds the resource violations StorageTruth lists;
// the count stays exact beyond it.
const MaxListedViolations = 100

// ResourceViolation is an accepted storage write that one critical section
// at a time could not have produced: a lost update (two sections wrote from
// the same read) or an accepted stale write.
type ResourceViolation struct {
	T        int64  `json:"t_ns"`     // true time the storage accepted the write
	Client   string `json:"client"`   // the writer (the storage record's Peer)
	Object   string `json:"object"`   // storage key
	Value    int64  `json:"value"`    // value written
	Expected int64  `json:"expected"` // previous accepted value ∓ 1
	Previous int64  `json:"previous"` // previous accepted value
	// PreviousClient wrote Previous ("" when Previous is the initial value)
	// and PreviousT is when (0 for the initial value).
	PreviousClient string `json:"previous_client,omitempty"`
	PreviousT      int64  `json:"previous_t_ns,omitempty"`
	Token          int64  `json:"token,omitempty"`
}

func (v ResourceViolation) String() string {
	what := "lost update or stale write"
	if v.Value == v.Previous {
		what = "lost update: the value did not move"
	}
	return fmt.Sprintf("%s wrote %d to %s at t=%v, expected %d (previous %d): %s",
		v.Client, v.Value, v.Object, time.Duration(v.T), v.Expected, v.Previous, what)
}

// resourceStep is the change one section makes, or 0 for no resource.
func resourceStep(resource string) int64 {
	switch resource {
	case ResourcePool:
		return -1
	case ResourceCounter:
		return +1
	}
	return 0
}

// StorageTruthReport is what StorageTruth found.
type StorageTruthReport struct {
	Writes     int                 // accepted writes
	Violations int                 // exact count
	Listed     []ResourceViolation // the first MaxListedViolations, in time order
	// Duplicates counts accepted writes that repeat the previous accepted
	// write exactly (same writer, value and owner: one request delivered
	// twice, e.g. a client library's retry). They leave the object as it
	// was and are not violations; a repeat that lands after another write
	// changes the object and is one.
	Duplicates int
}

// StorageTruth checks the storage's accepted writes (store-write, Result
// "ok") in O(n): per object, starting from h.Initial, each must write the
// previous accepted value − 1 ("pool") or + 1 ("counter"). Each deviation is
// one violation (except an exact duplicate, see StorageTruthReport); the
// check then continues from the value actually written. With no resource
// (h.Resource "") it finds nothing.
func StorageTruth(h History) StorageTruthReport {
	var r StorageTruthReport
	step := resourceStep(h.Resource)
	if step == 0 {
		return r
	}
	type last struct {
		value         int64
		client, owner string
		t             int64
	}
	state := map[string]*last{}
	for i := range h.Events {
		e := &h.Events[i]
		if e.Kind != event.KindStoreWrite || e.Result != event.ResultOK {
			continue
		}
		r.Writes++
		s := state[e.Lock]
		if s == nil {
			s = &last{value: h.Initial}
			state[e.Lock] = s
		}
		owner := storeOwner(e.Detail)
		want := s.value + step
		switch {
		case e.Value == want:
		case s.client != "" && e.Peer == s.client && e.Value == s.value && owner == s.owner:
			r.Duplicates++
		default:
			r.Violations++
			if len(r.Listed) < MaxListedViolations {
				r.Listed = append(r.Listed, ResourceViolation{T: e.T, Client: e.Peer, Object: e.Lock, Value: e.Value,
					Expected: want, Previous: s.value, PreviousClient: s.client, PreviousT: s.t, Token: e.Token})
			}
		}
		s.value, s.client, s.owner, s.t = e.Value, e.Peer, owner, e.T
	}
	return r
}

// storeOwner extracts the writer's identity from a store-write record's
// detail ("version=N owner=X").
func storeOwner(detail string) string {
	_, owner, _ := strings.Cut(detail, "owner=")
	return owner
}

// Section is one client critical section as porcupine sees it: a read and
// the write that followed it in the same section, as one operation whose
// interval is [read call, write return]. A section without a write (sold
// out, or the write was never attempted) is read-only; a write without a
// recorded read (a custom section) is blind.
type Section struct {
	Object   string
	Client   string
	HasRead  bool
	Read     int64 // value the read returned
	HasWrite bool
	Write    int64      // value written
	Outcome  event.Kind // the write's outcome: ok | fail | unknown ("" when read-only)
	ReadOp   int64      // OpIDs of the read and the write (0: none)
	WriteOp  int64
}

// Porcupine verdicts (Linearizability.Result).
const (
	LinOK      = "ok"
	LinIllegal = "illegal"
	LinUnknown = "unknown"
	LinSkipped = "skipped"
)

// Defaults and caps of the linearizability check.
const (
	// DefaultPorcupineTimeout is the wall-clock budget of porcupine's search
	// (Options.PorcupineTimeout). Partitions are searched concurrently, each
	// within the same budget. At the bound the answer is "unknown", never
	// "ok".
	DefaultPorcupineTimeout = 10 * time.Second
	// DefaultMaxSections caps the sections handed to porcupine
	// (Options.MaxSections). Above it porcupine is not run and the answer is
	// "unknown" (a prefix of a history is not a sound substitute).
	DefaultMaxSections = 100_000
)

// Linearizability is porcupine's answer on the client-side history.
type Linearizability struct {
	Result   string `json:"result"`   // ok | illegal | unknown | skipped
	Sections int    `json:"sections"` // operations checked
	Unknown  int    `json:"unknown"`  // sections whose write outcome is unknown
	Why      string `json:"why,omitempty"`
	// Stuck is, when illegal, the section porcupine could not place: the
	// one returning first among those outside the longest partial
	// linearization (an approximation of where the history goes wrong).
	Stuck *porcupine.Operation `json:"-"`
	// Info is porcupine's search record, for WriteVisualization (nil when
	// skipped).
	Info *porcupine.LinearizationInfo `json:"-"`
}

// objectOf names the object a client operation touched. The workload has a
// single object and its records do not carry the key, so every operation is
// on the one object named by the resource.
func objectOf(h History, _ *Event) string { return h.Resource }

// Sections pairs each client's read with its following write of the same
// critical section (same client, consecutive OpIDs, the write's call after
// the read's ok) into porcupine operations, in O(n):
//
//   - write ok → the section applied: [read call, write ok];
//   - write fail (fenced) → no effect: [read call, write fail];
//   - write unknown, or no reply before the end → [read call, h.End], both
//     possibilities allowed;
//   - a read ok with no write → read-only: [read call, read ok];
//   - a read that failed or got no reply constrains nothing and is dropped.
//
// Clients are numbered by their index in h.Clients (then by first
// appearance) for the visualization.
func Sections(h History) []porcupine.Operation {
	type pending struct {
		callT, retT int64
		value       int64
		opID        int64
		done        bool // the read returned ok
	}
	type writeCall struct {
		sec   Section
		callT int64 // the section's start (read call, or write call if blind)
		opID  int64
	}
	ids := clientIDs(h)
	reads := map[string]*pending{}
	writes := map[string]*writeCall{}
	var out []porcupine.Operation
	emit := func(s Section, call, ret int64) {
		md := fmt.Sprintf("%s read op %d, write op %d", s.Client, s.ReadOp, s.WriteOp)
		out = append(out, porcupine.Operation{ClientId: ids.id(s.Client), Input: s, Call: call, Output: nil, Return: ret, Metadata: md})
	}
	flushRead := func(p string) {
		if r := reads[p]; r != nil {
			if r.done {
				emit(Section{Object: h.Resource, Client: p, HasRead: true, Read: r.value, ReadOp: r.opID}, r.callT, r.retT)
			}
			delete(reads, p)
		}
	}
	for i := range h.Events {
		e := &h.Events[i]
		if e.Op == "" || e.Kind == event.KindRenew {
			continue
		}
		switch {
		case e.Op == event.OpRead && e.Kind == event.KindCall:
			flushRead(e.Proc)
			reads[e.Proc] = &pending{callT: e.T, opID: e.OpID}
		case e.Op == event.OpRead:
			if r := reads[e.Proc]; r != nil && r.opID == e.OpID && !r.done {
				if e.Kind == event.KindOK {
					r.done, r.retT, r.value = true, e.T, e.Value
				} else {
					delete(reads, e.Proc)
				}
			}
		case e.Op == event.OpWrite && e.Kind == event.KindCall:
			s := Section{Object: objectOf(h, e), Client: e.Proc, HasWrite: true, Write: e.Value, WriteOp: e.OpID}
			start := e.T
			if r := reads[e.Proc]; r != nil && r.done && r.opID+1 == e.OpID && e.T >= r.retT {
				s.HasRead, s.Read, s.ReadOp, start = true, r.value, r.opID, r.callT
				delete(reads, e.Proc)
			} else {
				flushRead(e.Proc)
			}
			writes[e.Proc] = &writeCall{sec: s, callT: start, opID: e.OpID}
		case e.Op == event.OpWrite:
			w := writes[e.Proc]
			if w == nil || w.opID != e.OpID {
				continue
			}
			delete(writes, e.Proc)
			w.sec.Outcome = e.Kind
			ret := e.T
			if e.Kind != event.KindOK && e.Kind != event.KindFail {
				w.sec.Outcome, ret = event.KindUnknown, max(h.End, e.T)
			}
			emit(w.sec, w.callT, ret)
		case e.Kind == event.KindCall:
			// Any other operation ends the section.
			flushRead(e.Proc)
		}
	}
	// Reads still waiting for their write, and writes with no reply.
	for _, p := range sortedKeys(reads) {
		flushRead(p)
	}
	for _, p := range sortedKeys(writes) {
		w := writes[p]
		w.sec.Outcome = event.KindUnknown
		emit(w.sec, w.callT, max(h.End, w.callT))
	}
	slices.SortStableFunc(out, func(a, b porcupine.Operation) int {
		if c := cmp.Compare(a.Call, b.Call); c != 0 {
			return c
		}
		return cmp.Compare(a.ClientId, b.ClientId)
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// clientIndex numbers processes for porcupine's visualization.
type clientIndex map[string]int

func clientIDs(h History) clientIndex {
	ids := clientIndex{}
	for _, c := range h.Clients {
		if _, ok := ids[c]; !ok {
			ids[c] = len(ids)
		}
	}
	return ids
}

func (ids clientIndex) id(p string) int {
	i, ok := ids[p]
	if !ok {
		i = len(ids)
		ids[p] = i
	}
	return i
}

// SectionModel is the sequential specification "one critical section at a
// time" over one integer object starting at initial, as a porcupine
// NondeterministicModel (state: the object's value):
//
//   - a section with a read requires state == read at its point;
//   - ok: the write applied, state := written;
//   - fail (fenced): no effect;
//   - unknown: either, state ∈ {read, written};
//   - read-only: no effect; blind write (no read): as above without the
//     read's requirement.
//
// Partition splits by object, so each object is checked on its own.
func SectionModel(initial int64) porcupine.NondeterministicModel {
	return porcupine.NondeterministicModel{
		Partition: partitionByObject,
		Init:      func() []interface{} { return []interface{}{initial} },
		Step: func(state, input, _ interface{}) []interface{} {
			s, in := state.(int64), input.(Section)
			if in.HasRead && s != in.Read {
				return nil
			}
			if !in.HasWrite {
				return []interface{}{s}
			}
			switch in.Outcome {
			case event.KindOK:
				return []interface{}{in.Write}
			case event.KindFail:
				return []interface{}{s}
			}
			if s == in.Write {
				return []interface{}{s}
			}
			return []interface{}{s, in.Write}
		},
		Hash: func(state interface{}) uint64 { return uint64(state.(int64)) * 0x9E3779B97F4A7C15 },
		DescribeOperation: func(input, _ interface{}) string {
			in := input.(Section)
			switch {
			case !in.HasWrite:
				return fmt.Sprintf("read %d", in.Read)
			case !in.HasRead:
				return fmt.Sprintf("write %d %s", in.Write, in.Outcome)
			}
			return fmt.Sprintf("read %d, write %d %s", in.Read, in.Write, in.Outcome)
		},
		DescribeState: func(state interface{}) string { return fmt.Sprint(state.(int64)) },
	}
}

// partitionByObject splits sections by the object they touch, keeping
// call order; objects come in order of first call.
func partitionByObject(ops []porcupine.Operation) [][]porcupine.Operation {
	index := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range ops {
		obj := op.Input.(Section).Object
		i, ok := index[obj]
		if !ok {
			i = len(parts)
			index[obj] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// Linearizable runs porcupine on the sections of h (see Sections and
// SectionModel) with a wall-clock budget of timeout (≤ 0: the default) and
// at most maxSections operations (≤ 0: the default). It starts goroutines
// and timers: call it outside any synctest bubble. With no resource it
// returns "skipped".
func Linearizable(h History, timeout time.Duration, maxSections int) Linearizability {
	if resourceStep(h.Resource) == 0 {
		return Linearizability{Result: LinSkipped, Why: "no resource"}
	}
	if timeout <= 0 {
		timeout = DefaultPorcupineTimeout
	}
	if maxSections <= 0 {
		maxSections = DefaultMaxSections
	}
	ops := Sections(h)
	lin := Linearizability{Sections: len(ops)}
	for _, op := range ops {
		if op.Input.(Section).Outcome == event.KindUnknown {
			lin.Unknown++
		}
	}
	if len(ops) > maxSections {
		lin.Result = LinUnknown
		lin.Why = fmt.Sprintf("%d sections exceed the cap of %d: not checked", len(ops), maxSections)
		return lin
	}
	nm := SectionModel(h.Initial)
	res, info := porcupine.CheckOperationsVerbose(nm.ToModel(), ops, timeout)
	lin.Info = &info
	switch res {
	case porcupine.Ok:
		lin.Result = LinOK
	case porcupine.Illegal:
		lin.Result = LinIllegal
		lin.Stuck = stuck(&info, ops)
		lin.Why = "no order of whole critical sections explains what the clients read and wrote"
	default:
		lin.Result = LinUnknown
		lin.Why = fmt.Sprintf("porcupine found no answer within %v", timeout)
	}
	return lin
}

// stuck returns the operation porcupine could not place: among the
// operations outside the longest partial linearization of their partition,
// the one that returns first. Porcupine lists a partition's partial
// linearizations in map order, so among several of the greatest length
// the first by (call, client) of their operations in order is taken:
// the answer must not change from one call to the next.
func stuck(info *porcupine.LinearizationInfo, ops []porcupine.Operation) *porcupine.Operation {
	type key struct {
		call   int64
		client int
	}
	placed := map[key]bool{}
	for _, part := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		for _, l := range part {
			if len(l) > len(longest) || len(l) == len(longest) && firstByCall(l, longest) {
				longest = l
			}
		}
		for _, op := range longest {
			placed[key{op.Call, op.ClientId}] = true
		}
	}
	var best *porcupine.Operation
	for i := range ops {
		op := &ops[i]
		if placed[key{op.Call, op.ClientId}] {
			continue
		}
		if best == nil || op.Return < best.Return {
			best = op
		}
	}
	if best == nil {
		return nil
	}
	o := *best
	return &o
}

// firstByCall orders two partial linearizations of one length by the
// (call, client) of their operations, position by position.
func firstByCall(a, b []porcupine.Operation) bool {
	for i := range min(len(a), len(b)) {
		if a[i].Call != b[i].Call {
			return a[i].Call < b[i].Call
		}
		if a[i].ClientId != b[i].ClientId {
			return a[i].ClientId < b[i].ClientId
		}
	}
	return false
}
