package faults

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"pgregory.net/rapid"
)

var aimBase = Bounds{Duration: 30 * time.Second, Clients: []string{"c0", "c1", "c2"}, Nodes: []string{"n0", "n1", "n2", "n3", "n4"},
	MinFaults: 1, MaxFaults: 4, TTL: 3 * time.Second}

// hits lists the processes a fault acts on: its targets, or a network
// fault's cut-off side (From; To is every other process).
func hits(f Fault) []string {
	if len(f.Targets) > 0 {
		return f.Targets
	}
	return f.From
}

// Aimed at targets, every fault lands on them only: pauses, crashes and
// clock faults target one of them, a network fault cuts some of them off
// from all the rest, and kinds that cannot land there are not drawn.
func TestGenTargets(t *testing.T) {
	for _, targets := range [][]string{{"c0", "c1", "c2"}, {"n0", "n1"}, {"c1", "n3"}} {
		b := aimBase
		b.Targets = targets
		all := append(append([]string(nil), b.Clients...), b.Nodes...)
		kinds := map[Kind]int{}
		rapid.Check(t, func(rt *rapid.T) {
			for _, f := range Gen(b).Draw(rt, "s") {
				kinds[f.Kind]++
				if err := f.Validate(func(n string) bool { return slices.Contains(all, n) }); err != nil {
					rt.Fatalf("%v: %v", f, err)
				}
				for _, n := range hits(f) {
					if !slices.Contains(targets, n) {
						rt.Fatalf("targets %v: %v lands on %s", targets, f, n)
					}
				}
				if len(f.From) > 0 && len(f.From)+len(f.To) != len(all) {
					rt.Fatalf("%v: From and To are not every process", f)
				}
			}
		})
		if slices.Equal(targets, b.Clients) && (kinds[NodePause] > 0 || kinds[Crash] > 0) {
			t.Errorf("clients only drew %d node pauses and %d crashes", kinds[NodePause], kinds[Crash])
		}
		if kinds[Partition] == 0 || kinds[ClockDrift] == 0 {
			t.Errorf("targets %v: kinds drawn %v, want partitions and drift among them", targets, kinds)
		}
	}
}

// Aimed at pause points, every client pause waits for one of them.
func TestGenPausePoints(t *testing.T) {
	b := aimBase
	b.Kinds, b.PausePoints = []Kind{ClientPause}, []string{"renewing", "before-write"}
	at := map[string]int{}
	for i := range 200 {
		for _, f := range Gen(b).Example(i) {
			if !slices.Contains(b.PausePoints, f.At) {
				t.Fatalf("%v: not at one of %v", f, b.PausePoints)
			}
			at[f.At]++
		}
	}
	if at["renewing"] == 0 || at["before-write"] == 0 {
		t.Errorf("pause points drawn %v, want both", at)
	}
}

// A drift band bounds the rate either way, and aims the search at drift:
// the drift lasts to the end of the safety phase. Without a floor the
// drift's duration is drawn (TTL/100 to 10 × TTL).
func TestGenDriftBand(t *testing.T) {
	b := aimBase
	b.Kinds, b.Limits = []Kind{ClockDrift}, Limits{DriftMinPPM: 5_000, DriftPPM: 9_999}
	signs := map[bool]int{}
	for i := range 200 {
		for _, f := range Gen(b).Example(i) {
			m := max(f.DriftPPM, -f.DriftPPM)
			if m < 5_000 || m > 9_999 {
				t.Fatalf("%v: rate outside 5000..9999 ppm", f)
			}
			if f.End() != b.Duration {
				t.Fatalf("%v: ends at %v, want the end of the safety phase %v", f, f.End(), b.Duration)
			}
			signs[f.DriftPPM < 0]++
		}
	}
	if signs[true] == 0 || signs[false] == 0 {
		t.Errorf("drift signs %v, want both", signs)
	}
	b.Limits.DriftMinPPM = 0
	short := 0
	for i := range 200 {
		for _, f := range Gen(b).Example(i) {
			if f.End() < b.Duration {
				short++
			}
		}
	}
	if short == 0 {
		t.Error("without a band floor every drift lasted to the end")
	}
}

// Bounds that cannot aim are errors naming the problem.
func TestAimErrors(t *testing.T) {
	for _, c := range []struct {
		edit func(*Bounds)
		want string
	}{
		{func(b *Bounds) { b.Targets = []string{"c9"} }, `target "c9" is neither`},
		{func(b *Bounds) { b.Targets = []string{"c0", "c0"} }, `named twice`},
		{func(b *Bounds) { b.Targets, b.Kinds = []string{"c0"}, []Kind{NodePause, Crash} }, "can land on the targets"},
		{func(b *Bounds) { b.PausePoints = []string{"sleeping"} }, `pause point "sleeping"`},
		{func(b *Bounds) { b.Limits = Limits{DriftMinPPM: 20_000, DriftPPM: 10_000} }, "is empty"},
		{func(b *Bounds) { b.Limits = Limits{DriftMinPPM: -1} }, "never negative"},
		{func(b *Bounds) { b.Limits = Limits{DriftMinPPM: 600_000} }, "above the largest drift"},
	} {
		b := aimBase
		c.edit(&b)
		err := b.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", b, err, c.want)
		}
	}
}

// armBase arms faults at the workload's points and renewals.
func armBase() Bounds {
	b := aimBase
	b.ArmPoints = []string{"acquire", "releasing", "renewing"}
	return b
}

// Armed draws: about half of the network faults wait for a point of
// ArmPoints, client pauses too, and no other kind; a network fault names
// the client whose arrival begins it (one it cuts off from a node, when it
// cuts one); an armed network fault lasts
// TTL/100 to 2 × TTL; every schedule stays valid and within the count and
// start bounds; client pauses keep drawing the lock's pause points too.
func TestGenArmed(t *testing.T) {
	b := armBase()
	all := append(append([]string(nil), b.Clients...), b.Nodes...)
	valid := func(n string) bool { return slices.Contains(all, n) }
	armed, total := 0, 0
	kinds := map[Kind]bool{}
	for i := range 400 {
		s := Gen(b).Example(i)
		if len(s) < b.MinFaults || len(s) > b.MaxFaults {
			t.Fatalf("%d faults", len(s))
		}
		for _, f := range s {
			if f.Kind == Partition || f.Kind == Delay || f.Kind == Loss {
				total++
			}
			if err := f.Validate(valid); err != nil {
				t.Fatalf("%v: %v", f, err)
			}
			if f.Start >= b.Duration*8/10 {
				t.Fatalf("%v starts too late", f)
			}
			if f.At == "" || f.Kind == ClientPause && !slices.Contains(b.ArmPoints, f.At) {
				continue
			}
			kinds[f.Kind] = true
			if f.Kind == ClientPause {
				continue
			}
			armed++
			if f.Kind != Partition && f.Kind != Delay && f.Kind != Loss {
				t.Fatalf("%v: armed, but only network faults and client pauses are", f)
			}
			if !slices.Contains(b.ArmPoints, f.At) || !slices.Contains(b.Clients, f.On) {
				t.Fatalf("%v: armed at %q on %q, want one of %v on a client", f, f.At, f.On, b.ArmPoints)
			}
			if len(f.From) > 0 && len(cutClients(&f, b)) > 0 && !slices.Contains(cutClients(&f, b), f.On) {
				t.Fatalf("%v: armed on %s, whose traffic it does not cut", f, f.On)
			}
			if (f.Kind == Partition || f.Kind == Delay || f.Kind == Loss) && (f.Duration < b.TTL/100 || f.Duration > 2*b.TTL) {
				t.Fatalf("%v: an armed network fault lasts %v, want %v..%v", f, f.Duration, b.TTL/100, 2*b.TTL)
			}
		}
	}
	if share := float64(armed) / float64(total); share < 0.35 || share > 0.7 {
		t.Errorf("%d of %d network faults armed (%.2f), want about half", armed, total, share)
	}
	for _, k := range []Kind{ClientPause, Partition, Delay, Loss} {
		if !kinds[k] {
			t.Errorf("no armed %s among %d armed faults", k, armed)
		}
	}
}

// Without ArmPoints the draws are those of before it existed: a fault
// that the armed draw leaves unarmed reads the same values, so an armed
// search and an unarmed one of the same seed draw the same kinds, starts
// and targets (the armed one only adds At, On and an armed network
// fault's duration). And the same seed draws the same schedule every time.
func TestGenArmedKeepsDraws(t *testing.T) {
	plain, armed := aimBase, armBase()
	plain.MaxFaults, armed.MaxFaults = 1, 1
	plain.MinFaults, armed.MinFaults = 1, 1
	same := 0
	for i := range 200 {
		p, a := Gen(plain).Example(i), Gen(armed).Example(i)
		again := Gen(armed).Example(i)
		if fmt.Sprint(a) != fmt.Sprint(again) {
			t.Fatalf("case %d drew %v then %v", i, a, again)
		}
		if a[0].Kind != p[0].Kind || a[0].Start != p[0].Start || !slices.Equal(hits(a[0]), hits(p[0])) {
			t.Fatalf("case %d: armed %v, unarmed %v: kind, start and targets differ", i, a[0], p[0])
		}
		if a[0].At == p[0].At {
			same++
			if fmt.Sprint(a) != fmt.Sprint(p) {
				t.Fatalf("case %d: unarmed alike, drawn %v and %v", i, a, p)
			}
		}
	}
	if same == 0 || same == 200 {
		t.Errorf("%d of 200 single-fault cases left unarmed, want some and not all", same)
	}
}

// At and On: where each applies, and errors that name the problem.
func TestValidateArmed(t *testing.T) {
	known := func(n string) bool { return slices.Contains([]string{"c0", "c1", "n0"}, n) }
	part := Fault{Kind: Partition, Start: time.Second, Duration: time.Second, From: []string{"c0"}, To: []string{"n0"}}
	for _, c := range []struct {
		edit func(*Fault)
		want string // "" valid
	}{
		{func(f *Fault) { f.At, f.On = "releasing", "c0" }, ""},
		{func(f *Fault) { f.At, f.On = "renewing", "c1" }, ""},
		{func(f *Fault) { f.At = "releasing" }, "needs on"},
		{func(f *Fault) { f.On = "c0" }, "needs at"},
		{func(f *Fault) { f.At, f.On = "sleeping", "c0" }, `at "sleeping" is not a point`},
		{func(f *Fault) { f.At, f.On = "acquire", "c9" }, `unknown client "c9"`},
		{func(f *Fault) { f.At, f.On = "acquire", Leader }, `unknown client "leader"`},
		{func(f *Fault) {
			*f = Fault{Kind: ClientPause, Start: 0, Duration: time.Second, Targets: []string{"c0"}, At: "releasing"}
		}, ""},
		{func(f *Fault) {
			*f = Fault{Kind: ClientPause, Start: 0, Duration: time.Second, Targets: []string{"c0"}, At: "releasing", On: "c1"}
		}, "on does not apply"},
		{func(f *Fault) {
			*f = Fault{Kind: Crash, Duration: time.Second, Targets: []string{"n0"}, At: "before-write", On: "c1"}
		}, ""},
		{func(f *Fault) {
			*f = Fault{Kind: ClockJump, Jump: time.Second, Targets: []string{"c1"}, At: "acquire", On: "c1"}
		}, ""},
	} {
		f := part
		c.edit(&f)
		err := f.Validate(known)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", f, err, c.want)
		}
	}
}

// An armed fault round-trips through JSON and YAML (faults files and
// scenario files) and prints what it waits for.
func TestArmedRoundTrip(t *testing.T) {
	f := Fault{Kind: Delay, Start: time.Second, Duration: 300 * time.Millisecond, From: []string{"c0"}, To: []string{"n0"},
		Delay: 2 * time.Second, At: "releasing", On: "c0"}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"at":"releasing","on":"c0"`) {
		t.Errorf("JSON %s", data)
	}
	var back Fault
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, f) {
		t.Fatalf("JSON round trip: %+v (%v), want %+v", back, err, f)
	}
	y, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var yback Fault
	if err := yaml.Unmarshal(y, &yback); err != nil || fmt.Sprintf("%+v", yback) != fmt.Sprintf("%+v", f) {
		t.Fatalf("YAML round trip: %+v (%v), want %+v\n%s", yback, err, f, y)
	}
	// Written by hand, on unquoted is the key "on" (not YAML 1.1's true).
	var hand Fault
	src := "{kind: delay, start: 1s, duration: 300ms, from: [c0], to: [n0], delay: 2s, at: releasing, on: c0}"
	if err := yaml.Unmarshal([]byte(src), &hand); err != nil || fmt.Sprintf("%+v", hand) != fmt.Sprintf("%+v", f) {
		t.Fatalf("YAML %s: %+v (%v), want %+v", src, hand, err, f)
	}
	if s := f.String(); !strings.Contains(s, "at releasing on c0") {
		t.Errorf("String %q does not say what it waits for", s)
	}
}

// Limits cap armed faults as they cap the others: an armed partition
// lasts no longer than Limits.Partition.
func TestGenArmedLimits(t *testing.T) {
	b := aimBase
	b.TTL = 10 * time.Second
	b.Kinds = []Kind{Partition}
	b.Limits = Limits{Partition: 200 * time.Millisecond}
	b.ArmPoints = []string{"acquire", "releasing"}
	armed := 0
	rapid.Check(t, func(rt *rapid.T) {
		for _, f := range Gen(b).Draw(rt, "s") {
			if f.At != "" {
				armed++
			}
			if f.Duration > b.Limits.Partition {
				rt.Fatalf("%v lasts %v, past Limits.Partition %v", f, f.Duration, b.Limits.Partition)
			}
		}
	})
	if armed == 0 {
		t.Fatal("no armed partition drawn: the test proves nothing")
	}
}
