package checker

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/locksim/locksim/event"
)

// oracleOp is a section as the generator knows it, independent of
// Sections' pairing.
type oracleOp struct {
	hasRead, hasWrite bool
	read, write       int64
	outcome           event.Kind
	call, ret         int64
}

// genSectionHistory simulates ≤ 6 clients running ≤ 8 operations each
// against a pool, interleaved step by step: each section reads, may write
// read−1, and the storage either accepts every write ("none": lost updates
// happen) or only writes whose read is still current ("cas"). Requests can
// be lost, replies can be unknown or missing, and with lies on, a client
// may misreport (a fail for a write that applied, a wrong read value). It
// returns the history and the sections as the generator knows them, and
// whether the execution was honest compare-and-set (then it must be
// linearizable).
func genSectionHistory(t *rapid.T) (History, []oracleOp, bool) {
	clients := rapid.IntRange(1, 6).Draw(t, "clients")
	initial := int64(rapid.IntRange(2, 6).Draw(t, "initial"))
	cas := rapid.Bool().Draw(t, "cas")
	lies := rapid.IntRange(0, 3).Draw(t, "lies") == 0
	type client struct {
		name    string
		phase   int
		ops     int // operations begun (≤ 8)
		id      int64
		cur     oracleOp
		applied bool
		lost    bool
		stopped bool
	}
	cs := make([]*client, clients)
	names := make([]string, clients)
	for i := range cs {
		names[i] = fmt.Sprintf("c%d", i)
		cs[i] = &client{name: names[i]}
	}
	b := newHistory(ResourcePool, initial, "", names...)
	store := initial
	var ops []oracleOp
	now := int64(0)
	honest := cas && !lies
	for {
		var live []*client
		for _, c := range cs {
			if !c.stopped && (c.ops < 8 || c.phase != 0) {
				live = append(live, c)
			}
		}
		if len(live) == 0 {
			break
		}
		c := live[rapid.IntRange(0, len(live)-1).Draw(t, "who")]
		now += int64(rapid.IntRange(1, 3).Draw(t, "gap"))
		switch c.phase {
		case 0: // read call
			c.ops++
			c.id++
			c.cur = oracleOp{hasRead: true, call: now}
			b.add(Event{T: now, Proc: c.name, Kind: event.KindCall, Op: event.OpRead, OpID: c.id})
			c.phase = 1
		case 1: // the storage reads
			c.cur.read = store
			if lies && rapid.IntRange(0, 9).Draw(t, "misread") == 0 {
				c.cur.read++
				honest = false
			}
			c.phase = 2
		case 2: // read ok; write or stop here
			b.add(Event{T: now, Proc: c.name, Kind: event.KindOK, Op: event.OpRead, OpID: c.id, Value: c.cur.read})
			if c.ops < 8 && rapid.IntRange(0, 4).Draw(t, "read only") > 0 {
				c.phase = 3
				break
			}
			c.cur.ret = now
			ops = append(ops, c.cur)
			c.phase = 0
		case 3: // write call
			c.ops++
			c.id++
			c.cur.hasWrite, c.cur.write = true, c.cur.read-1
			b.add(Event{T: now, Proc: c.name, Kind: event.KindCall, Op: event.OpWrite, OpID: c.id, Value: c.cur.write})
			c.phase = 4
		case 4: // the storage writes, or the request is lost
			c.lost = rapid.IntRange(0, 6).Draw(t, "lost") == 0
			c.applied = !c.lost && (!cas || store == c.cur.read)
			if c.applied {
				store = c.cur.write
			}
			c.phase = 5
		case 5: // write outcome
			outcome := event.KindFail
			if c.applied {
				outcome = event.KindOK
			}
			switch {
			case c.lost || rapid.IntRange(0, 6).Draw(t, "timeout") == 0:
				outcome = event.KindUnknown
			case lies && c.applied && rapid.IntRange(0, 4).Draw(t, "false fail") == 0:
				outcome = event.KindFail
				honest = false
			}
			c.cur.outcome = outcome
			c.phase = 0
			if outcome == event.KindUnknown && rapid.IntRange(0, 3).Draw(t, "no reply") == 0 {
				c.stopped = true // the reply never comes
			} else {
				b.add(Event{T: now, Proc: c.name, Kind: outcome, Op: event.OpWrite, OpID: c.id, Value: c.cur.write})
			}
			c.cur.ret = now // an unknown one's is the end, set below
			ops = append(ops, c.cur)
		}
	}
	end := now + 1
	for i := range ops {
		if ops[i].outcome == event.KindUnknown {
			ops[i].ret = end
		}
	}
	return b.history(0, end), ops, honest
}

// linearizableOracle decides by brute force: it tries every order of the
// sections that respects real time (a before b when a returned before b was
// called) and every outcome of each unknown write, remembering the
// (done set, state) pairs that led nowhere.
func linearizableOracle(initial int64, ops []oracleOp) bool {
	n := len(ops)
	if n > 64 {
		panic("oracle: more than 64 operations")
	}
	full := uint64(1)<<n - 1
	dead := map[[2]uint64]bool{}
	var try func(done uint64, state int64) bool
	try = func(done uint64, state int64) bool {
		if done == full {
			return true
		}
		if dead[[2]uint64{done, uint64(state)}] {
			return false
		}
		for i := 0; i < n; i++ {
			if done&(1<<i) != 0 {
				continue
			}
			minimal := true
			for j := 0; j < n; j++ {
				if j != i && done&(1<<j) == 0 && ops[j].ret < ops[i].call {
					minimal = false
					break
				}
			}
			if !minimal {
				continue
			}
			o := ops[i]
			if o.hasRead && state != o.read {
				continue
			}
			var next []int64
			switch {
			case !o.hasWrite, o.outcome == event.KindFail:
				next = []int64{state}
			case o.outcome == event.KindOK:
				next = []int64{o.write}
			default:
				next = []int64{state, o.write}
			}
			for _, s := range next {
				if try(done|1<<i, s) {
					return true
				}
			}
		}
		dead[[2]uint64{done, uint64(state)}] = true
		return false
	}
	return try(0, initial)
}

// Porcupine on Sections + SectionModel against the brute-force oracle on
// the generator's own sections.
func TestPorcupineMatchesBruteForce(t *testing.T) {
	seen := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		h, ops, honest := genSectionHistory(t)
		if got := len(Sections(h)); got != len(ops) {
			t.Fatalf("Sections paired %d operations, the generator made %d", got, len(ops))
		}
		want := linearizableOracle(h.Initial, ops)
		lin := Linearizable(h, 30*time.Second, 0)
		if lin.Result == LinUnknown {
			t.Fatalf("porcupine timed out on %d sections", lin.Sections)
		}
		if got := lin.Result == LinOK; got != want {
			t.Fatalf("porcupine %s, oracle linearizable=%v; sections %+v", lin.Result, want, ops)
		}
		if honest && !want {
			t.Fatalf("an honest compare-and-set execution judged not linearizable: %+v", ops)
		}
		seen[lin.Result]++
	})
	t.Logf("verdicts: %v", seen)
	if seen[LinOK] == 0 || seen[LinIllegal] == 0 {
		t.Errorf("the generator made no mix of verdicts: %v", seen)
	}
}
