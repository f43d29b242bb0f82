package realredis

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// linkState is what the faults of the moment do to one direction of a
// link: partitions that cut it, delay windows, a constant lag. Its
// streamGate toxic reads it for every chunk; every change wakes the
// chunks it holds.
type linkState struct {
	id      string
	mu      sync.Mutex
	cuts    int       // partitions that separate the two ends now
	windows []*window // delay spikes laid on it, not yet lifted
	lag     time.Duration
	changed chan struct{} // closed at the next change
	// cutBy names the faults (by number) whose cuts are on now; held
	// counts, per fault, the chunks its cut or window held or slowed;
	// carried counts every chunk that went through (effects.go).
	cutBy   []int
	held    map[int]int
	carried atomic.Int64
}

// window: a chunk sent in [from, until) arrives latency after it was
// sent (the simulator's delay spike delays what is sent in it only).
type window struct {
	latency     time.Duration
	from, until time.Time
	fault       int // the delay's fault number (0: none)
}

// gates maps a linkState's id to it: toxiproxy builds each toxic from
// JSON attributes, so the toxic names its state by id.
var (
	gates  sync.Map
	gateID atomic.Int64
)

func newLinkState() *linkState {
	st := &linkState{id: "g" + strconv.FormatInt(gateID.Add(1), 10), changed: make(chan struct{})}
	gates.Store(st.id, st)
	return st
}

// change applies fn under the state's lock and wakes the held chunks.
func (st *linkState) change(fn func()) {
	st.mu.Lock()
	defer st.mu.Unlock()
	fn()
	close(st.changed)
	st.changed = make(chan struct{})
}

// hold says whether a chunk sent at sent must wait now: cut (until the
// next change), or for how long, and the channel closed at the next
// change.
func (st *linkState) hold(sent time.Time) (cut bool, wait time.Duration, changed <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.cuts > 0 {
		return true, 0, st.changed
	}
	delay := st.lag
	var extra time.Duration
	for _, w := range st.windows {
		if !sent.Before(w.from) && sent.Before(w.until) {
			extra = max(extra, w.latency)
		}
	}
	return false, delay + extra - time.Since(sent), st.changed
}

// noteHeld counts a chunk sent at sent against each fault whose cut or
// window holds or slows it now.
func (st *linkState) noteHeld(sent time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.held == nil {
		st.held = map[int]int{}
	}
	for _, f := range st.cutBy {
		st.held[f]++
	}
	for _, w := range st.windows {
		if w.fault > 0 && !sent.Before(w.from) && sent.Before(w.until) {
			st.held[w.fault]++
		}
	}
}

// streamGate is the one toxic on each direction of every link, for the
// whole run: it passes each chunk on, in order, once the link's state
// lets it (see linkState).
type streamGate struct {
	State string `json:"state"`
}

func (t *streamGate) Pipe(stub *toxics.ToxicStub) {
	v, _ := gates.Load(t.State)
	st, _ := v.(*linkState)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if st != nil {
				st.carried.Add(1)
			}
			for first := true; st != nil; first = false {
				cut, wait, changed := st.hold(c.Timestamp)
				if !cut && wait <= 0 {
					break
				}
				if first {
					st.noteHeld(c.Timestamp)
				}
				var timer *time.Timer
				var fire <-chan time.Time
				if !cut {
					timer = time.NewTimer(wait)
					fire = timer.C
				}
				select {
				case <-changed:
				case <-fire:
				case <-stub.Interrupt:
					if timer != nil {
						timer.Stop()
					}
					// The proxy is stopping (no toxic is added or
					// removed during a run): pass the chunk on if the
					// link still reads, within a bound.
					select {
					case stub.Output <- c:
					case <-time.After(time.Second):
					}
					return
				}
				if timer != nil {
					timer.Stop()
				}
			}
			stub.Output <- c
		}
	}
}

func init() { toxics.Register(streamGateType, new(streamGate)) }

const streamGateType = "locksim-gate"
