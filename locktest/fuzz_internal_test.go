package locktest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	core "github.com/locksim/locksim/internal/search"
	"github.com/locksim/locksim/run"
)

// fuzzGoldenOptions is a world the golden decodings are drawn for.
var fuzzGoldenOptions = Options{Kinds: []faults.Kind{faults.Partition, faults.Delay, faults.Loss, faults.ClientPause}}.withDefaults()

// The inputs of FuzzVersion decode to the cases they decoded to when the
// version was set. A change of the schedule draw (faults.Gen, Schedules,
// search.Cases) changes them: then bump FuzzVersion, so that stored
// corpus entries of the old decoding are skipped instead of run as other
// cases, and update the golden lines here.
func TestFuzzDecodingGolden(t *testing.T) {
	golden := []string{
		`seed 1: []faults.Fault{{Kind: faults.Partition, Start: 0, Duration: 3 * time.Millisecond, From: []string{"c0"}, To: []string{"c1", "c2", "n0"}}}`,
		`seed 83280: []faults.Fault{{Kind: faults.Loss, Start: 7400957657, Duration: 30000430, From: []string{"n0", "c2"}, To: []string{"c0", "c1"}, LossProb: 1, At: "releasing", On: "c0"}}`,
		`seed 2: []faults.Fault{{Kind: faults.ClientPause, Start: 12000000002, Duration: 3000008, Targets: []string{"c2"}, At: "before-write"}, {Kind: faults.Delay, Start: 21600000017, Duration: 3000000262, From: []string{"n0", "c2"}, To: []string{"c0", "c1"}, Delay: 30000454, At: "releasing", On: "c1"}}`,
		`seed 3101489250: []faults.Fault{{Kind: faults.ClientPause, Start: 2400000002, Duration: 300000002, Targets: []string{"c0"}, At: "renewing"}, {Kind: faults.ClientPause, Start: 7200000040, Duration: 3237195219, Targets: []string{"c2"}, At: "before-write"}, {Kind: faults.Partition, Start: 9600000113, Duration: 30 * time.Millisecond, From: []string{"c1"}, To: []string{"c0", "c2", "n0"}, OneWay: true, At: "acquire", On: "c1"}, {Kind: faults.ClientPause, Start: 21600016448, Duration: 2146113802, Targets: []string{"c1"}, At: "after-check"}}`,
		`seed 1: []faults.Fault{{Kind: faults.Delay, Start: 2400000131, Duration: 30001746, From: []string{"c2", "c1"}, To: []string{"c0", "n0"}, Delay: 300000839}, {Kind: faults.Partition, Start: 19200000699, Duration: 300001164, From: []string{"c1"}, To: []string{"c0", "c2", "n0"}, OneWay: true, At: "releasing", On: "c1"}, {Kind: faults.ClientPause, Start: 21237363596, Duration: 2389434769, Targets: []string{"c2"}, At: "renewing"}}`,
		`seed 5: []faults.Fault{{Kind: faults.ClientPause, Start: 7200000102, Duration: 3000002 * time.Microsecond, Targets: []string{"c1"}, At: "after-check"}}`,
		`seed 78: []faults.Fault{{Kind: faults.Loss, Start: 2400000107, Duration: 30000026, From: []string{"c1"}, To: []string{"c0", "c2", "n0"}, OneWay: true, LossProb: 0.01169399671775466, At: "acquire", On: "c1"}, {Kind: faults.ClientPause, Start: 4800000004, Duration: 30000047, Targets: []string{"c2"}, At: "before-write"}, {Kind: faults.Loss, Start: 7199999999, Duration: 3000000131, From: []string{"c0", "n0"}, To: []string{"c1", "c2"}, OneWay: true, LossProb: 0.3997238386782494, At: "releasing", On: "c2"}, {Kind: faults.Loss, Start: 7362078083, Duration: 30 * time.Millisecond, From: []string{"c2"}, To: []string{"c0", "c1", "n0"}, LossProb: 0.10118606471565528, At: "releasing", On: "c2"}}`,
		`seed 2: []faults.Fault{{Kind: faults.Partition, Start: 11999999999, Duration: 3169150955, From: []string{"c1"}, To: []string{"c0", "c2", "n0"}, OneWay: true, At: "acquire", On: "c1"}}`,
		`seed 1: []faults.Fault{{Kind: faults.Delay, Start: 6, Duration: 30 * time.Millisecond, From: []string{"c2", "c1", "n0"}, To: []string{"c0"}, Delay: 26461370}, {Kind: faults.Loss, Start: 4800000049, Duration: 300003859, From: []string{"c1"}, To: []string{"c0", "c2", "n0"}, OneWay: true, LossProb: 0.6049885618202823, At: "acquire", On: "c1"}, {Kind: faults.Partition, Start: 16800000192, Duration: 3000004, From: []string{"c1"}, To: []string{"c0", "c2", "n0"}}}`,
		`seed 2: []faults.Fault{{Kind: faults.Partition, Start: 0, Duration: 3 * time.Millisecond, From: []string{"c0"}, To: []string{"c1", "c2", "n0"}}}`,
	}
	cases := core.Cases(Schedules(fuzzGoldenOptions))
	inputs := append(fuzzSeeds(), []byte{FuzzVersion, 7, 0, 0, 0, 0, 0, 0, 0, 3})
	var got []string
	for _, in := range inputs {
		c, why := decodeCase(t, cases, in)
		if why != "" {
			t.Fatalf("input %x: %s", in, why)
		}
		got = append(got, fmt.Sprintf("seed %d: %s", c.Seed, GoSchedule(c.Faults)))
	}
	if want := golden; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("FuzzVersion %d inputs decode to other cases than they did: the schedule draw changed; bump FuzzVersion and update the golden lines.\ngot:\n%s\nwant:\n%s", FuzzVersion, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every input of the current version decodes (short ones are padded,
// long ones cut), to a schedule of 1 to MaxFaults valid faults; an input
// of another version is refused with the reason, never run as a case.
func TestFuzzEveryInputDecodes(t *testing.T) {
	o := fuzzGoldenOptions
	cases := core.Cases(Schedules(o))
	clients, nodes, _ := names(o)
	known := func(n string) bool { return slices.Contains(clients, n) || slices.Contains(nodes, n) }
	for n := range 40 {
		in := []byte{FuzzVersion}
		for i := range n * n * 7 {
			in = append(in, byte(i*131+n*17))
		}
		if n == 39 {
			in = in[:0] // empty: the current version's all-zero input
		}
		c, why := decodeCase(t, cases, in)
		if why != "" {
			t.Fatalf("input of %d bytes: %s", len(in), why)
		}
		if c.Seed < 1 || len(c.Faults) < 1 || len(c.Faults) > o.MaxFaults {
			t.Fatalf("input of %d bytes: case %+v", len(in), c)
		}
		for _, f := range c.Faults {
			if err := f.Validate(known); err != nil {
				t.Fatalf("input of %d bytes: fault %s: %v", len(in), f, err)
			}
		}
	}
	_, why := decodeCase(t, cases, []byte{FuzzVersion + 1, 1, 2, 3})
	if !strings.Contains(why, fmt.Sprintf("decoding version %d", FuzzVersion+1)) || !strings.Contains(why, "skipped") {
		t.Fatalf("an input of another version: %q", why)
	}
}

func TestObserveCounts(t *testing.T) {
	const s = int64(1e9)
	h := checker.History{End: 30 * s, Events: []checker.Event{
		{T: 1 * s, Proc: "c0", Kind: event.KindCall, Op: event.OpAcquire, OpID: 1},
		{T: 1 * s, Proc: "c0", Kind: event.KindOK, Op: event.OpAcquire, OpID: 1, Until: 4 * s},
		{T: 2 * s, Proc: "c0", Kind: event.KindRenew, Op: event.OpAcquire, OpID: 1, Until: 5 * s},
		{T: 3 * s, Proc: "c0", Kind: event.KindRenewFail, Op: event.OpAcquire, OpID: 1},
		{T: 6 * s, Proc: "c0", Kind: event.KindCall, Op: event.OpRelease, OpID: 2}, // after the belief ran out (5 s)
		{T: 6 * s, Proc: "c0", Kind: event.KindFail, Op: event.OpRelease, OpID: 2}, // removed nothing
		{T: 6 * s, Proc: "c1", Kind: event.KindCall, Op: event.OpAcquire, OpID: 3},
		{T: 7 * s, Proc: "c1", Kind: event.KindUnknown, Op: event.OpAcquire, OpID: 3},
		{T: 8 * s, Proc: "n0", Kind: event.KindKeyTouch, Result: event.ResultDel, Detail: "c2", Peer: "c1"},
		{T: 9 * s, Proc: "store", Kind: event.KindStoreWrite, Result: event.ResultFenced},
	}}
	out := Outcome{history: h, Options: Options{TTL: 3e9}, Unfired: []faults.Fault{{Kind: faults.ClientPause}},
		Effects: []run.FaultEffect{{Injected: true, Reached: true, Bit: true, Fault: faults.Fault{Kind: faults.Loss}}, {Injected: true}}}
	e := fuzzSignal(out)
	if e.renewals != 1 || e.renewFails != 1 || e.expiredHeld != 1 || e.releaseNothing != 1 || e.acquireUnknown != 1 ||
		e.touchedOthers != 1 || e.fenced != 1 || e.unfired != 1 || e.bit != 1 || e.notReached != 1 || len(e.bitKinds) != 1 {
		t.Fatalf("counts %+v", e)
	}
	if e.hits == 0 {
		t.Fatal("no signal block ran")
	}
}

func TestClosest(t *testing.T) {
	const ttl = int64(3e9)
	hold := func(p string, a, b int64) checker.Hold { return checker.Hold{Proc: p, Start: a, End: b} }
	for _, c := range []struct {
		holds []checker.Hold
		want  int
	}{
		{nil, 0},
		{[]checker.Hold{hold("c0", 0, 10), hold("c0", 20, 30)}, 0}, // one client's
		{[]checker.Hold{hold("c0", 0, 10), hold("c1", 10+ttl, 2*ttl)}, 1},
		{[]checker.Hold{hold("c0", 0, 10), hold("c1", 10+ttl/2, 2*ttl)}, 2},
		{[]checker.Hold{hold("c0", 0, 10), hold("c1", 10+ttl/20, 2*ttl)}, 3},
		{[]checker.Hold{hold("c0", 0, 10), hold("c1", 10+ttl/200, 2*ttl)}, 4},
		{[]checker.Hold{hold("c0", 0, 10), hold("c1", 10+ttl/2000, 2*ttl)}, 5},
		{[]checker.Hold{hold("c0", 0, 10), hold("c1", 5, 2*ttl)}, 6},
	} {
		if got := closest(c.holds, ttl); got != c.want {
			t.Errorf("closest(%v) = %d, want %d", c.holds, got, c.want)
		}
	}
}
