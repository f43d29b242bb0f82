package locktest

import (
	"encoding/binary"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	core "github.com/locksim/locksim/internal/search"
)

// FuzzVersion is the version of Fuzz's input decoding, the first byte of
// every input it writes or reads: the rest of an input is the bit stream
// rapid draws the case (world seed, then schedule: Schedules(o)) from, so
// the same input decodes to the same case only while the draw is the
// same. It goes up whenever the draw changes (TestFuzzDecodingGolden
// fails until it does). An input of another version (a corpus entry
// written before the change) is skipped with a log line, never run as
// something else and never failed.
const FuzzVersion byte = 2

// fuzzWords is how many 64-bit words of an input the decoding reads: a
// case takes up to about 256 (every draw takes a word, and a fault's
// sizes take a dozen draws each); a shorter input is padded with zero
// words, which draw the smallest value (rapid's shrink target), so
// every input of the current version decodes, and a short one to a
// small case (24 random words decoded to 1 fault 200 times in 200; 256
// to 1-4 faults as often as the search's Generator.Example draws them).
const fuzzWords = 512

// Fuzz runs the lock under Go's coverage-guided fuzzer: every input
// decodes to a case of the search (a world seed and a fault schedule
// drawn by Schedules(o), rapid's generator, from the input's bytes), so
// Go's byte mutations are mutations of the schedule, and the coverage of
// your lock's code (the branch that runs only when a renewal fails) and
// the harness's own record of what the run did (fuzzSignal: a renewal
// that failed, a release that removed nothing, an acquisition of unknown
// outcome, which faults bit, how close two holds came) guide it. Use it
// as the body of a fuzz test:
//
//	func FuzzMyLock(f *testing.F) {
//		locktest.Fuzz(f, myFactory, locktest.Options{TTL: 3 * time.Second})
//	}
//
// and run `go test -fuzz=FuzzMyLock -fuzztime=60s`. A failing input is
// written to testdata/fuzz/FuzzMyLock/ and replayed by every plain
// `go test`, which fails with the counterexample Check prints (shrunk by
// run.Shrink, with its repro line) until the lock is fixed. While
// fuzzing, the failure is reported unshrunk (Go minimises the input
// instead); replay it with `go test -run=FuzzMyLock/NAME` for the shrunk
// one. The seed corpus is a few inputs (the all-zero one first: one
// fault, the smallest of each draw); plain `go test` runs them and every
// stored input.
//
// The search's own options (Checks, Seed, Determinism, Expect*) are not
// used: the fuzzer decides how many cases run, and its inputs are the
// seeds. Fuzz turns Go's minimisation of new inputs off unless
// -fuzzminimizetime is given (see noMinimizing).
func Fuzz(f *testing.F, factory Factory, o Options) {
	f.Helper()
	o = o.withDefaults()
	if err := o.check(); err != nil {
		f.Fatalf("locktest: %v", err)
	}
	cases := core.Cases(Schedules(o))
	noMinimizing()
	for _, in := range fuzzSeeds() {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, input []byte) { fuzzOne(t, factory, o, cases, input) })
}

// fuzzOne runs one fuzz input: decodes it, runs its case and fails t
// with the counterexample when it is unsafe or fails liveness.
func fuzzOne(t *testing.T, factory Factory, o Options, cases *rapid.Generator[core.Case], input []byte) {
	skip, fail := fuzzInput(t, factory, o, cases, input)
	switch {
	case skip != "":
		t.Skip("locktest.Fuzz: " + skip)
	case fail != "":
		t.Fatal(fail)
	}
}

// fuzzInput runs one fuzz input and returns why it was skipped (it did
// not decode), or the failure message of its counterexample ("" for
// both: a safe run).
func fuzzInput(t *testing.T, factory Factory, o Options, cases *rapid.Generator[core.Case], input []byte) (skip, fail string) {
	c, why := decodeCase(t, cases, input)
	if why != "" {
		return why, ""
	}
	out := Run(t, factory, o, c.Seed, c.Faults)
	ev := fuzzSignal(out)
	t.Logf("locktest: seed %d, %d faults: %s (%s)", c.Seed, len(c.Faults), out.Verdict(), ev)
	if !core.Failed(out.Check) {
		return "", ""
	}
	from := fmt.Sprintf("  found by this fuzz input (seed %d, %d faults, %d clients)", out.Seed, len(out.Faults), out.Clients)
	if fuzzing() {
		return "", Describe(t, out) + from + ", unshrunk while fuzzing: replay the input with go test -run=" + fuzzTarget(t) + " for the counterexample shrunk by run.Shrink\n"
	}
	return "", Describe(t, minimize(t, factory, o, out)) + from + ", then shrunk by run.Shrink\n"
}

// noMinimizing turns Go's minimisation of inputs off (-fuzzminimizetime
// 0) unless the command line set it. Go minimises every input that
// reached new coverage before it fuzzes on, by trying up to n² shorter
// inputs (60 s each by default): at a run's cost (10-40 ms) that stalls
// the search for a minute per new input, and the bytes it shortens are
// not the schedule (run.Shrink shrinks that on replay). docs/FINDINGS.md
// ("go test -fuzz on a planted bug") has what it cost.
func noMinimizing() {
	const name = "test.fuzzminimizetime"
	if flag.Lookup(name) == nil {
		return
	}
	set := false
	flag.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	if !set {
		flag.Set(name, "0")
	}
}

// fuzzSeeds are the seed corpus: the all-zero input (the first draw: one
// fault, each of its draws the smallest), then eight inputs of 256
// pseudo-random words (a fixed splitmix64 stream), which decode as a
// search's random cases do (rapid's Generator.Example draws from random
// words too): the fuzzer starts from schedules of every size and kind,
// not only from the smallest.
func fuzzSeeds() [][]byte {
	seeds := [][]byte{{FuzzVersion}}
	x := uint64(0x9e3779b97f4a7c15)
	for range 8 {
		in := []byte{FuzzVersion}
		for range 256 {
			x += 0x9e3779b97f4a7c15
			z := x
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
			z = (z ^ (z >> 27)) * 0x94d049bb133111eb
			z ^= z >> 31
			in = binary.LittleEndian.AppendUint64(in, z)
		}
		seeds = append(seeds, in)
	}
	return seeds
}

// decodeCase decodes a fuzz input to a case: its version byte, then the
// words rapid draws from (rapid.MakeFuzz's decoding: 8 bytes a word,
// little-endian, each draw masking one word), padded with zero words, or
// when rapid cannot decode those, the all-zero input. An empty input is
// the current version's all-zero one. why says why an input was not
// decoded ("" when it was).
func decodeCase(t *testing.T, cases *rapid.Generator[core.Case], input []byte) (c core.Case, why string) {
	t.Helper()
	if len(input) > 0 && input[0] != FuzzVersion {
		return c, fmt.Sprintf("an input of decoding version %d, and this locktest decodes version %d (FuzzVersion): skipped (a corpus entry written before the schedule draw changed: it no longer means the case it was found as; delete it)", input[0], FuzzVersion)
	}
	words := make([]byte, 8*fuzzWords)
	if len(input) > 0 {
		copy(words, input[1:])
	}
	draw := func(words []byte) (c core.Case, ok bool) {
		// A subtest: rapid skips the test it is given on an input it
		// cannot decode (and logs each draw, shown under -v), and that
		// must be this one, not the input's.
		t.Run("decode", func(t *testing.T) {
			rapid.MakeFuzz(func(rt *rapid.T) {
				c, ok = cases.Draw(rt, "case"), true
			})(t, words)
		})
		return c, ok
	}
	c, ok := draw(words)
	if !ok {
		// An unbiased draw redraws a word above its range, and an input
		// whose words all are (a periodic one) runs out: such an input
		// is the all-zero one, whose every draw is in range.
		t.Logf("locktest.Fuzz: rapid could not decode the input (a draw rejected every word left): run as the all-zero input")
		if c, ok = draw(make([]byte, 8*fuzzWords)); !ok {
			return c, "the input did not decode to a case, nor did the all-zero input: skipped"
		}
	}
	return c, ""
}

// fuzzTarget is the -run pattern of the fuzz test t runs an input of.
func fuzzTarget(t *testing.T) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name + "/INPUT"
}

// fuzzing reports whether this process is one of go test -fuzz's
// workers (a failure there is minimised by Go, many times: run.Shrink is
// left to the replay).
func fuzzing() bool {
	fl := flag.Lookup("test.fuzzworker")
	return fl != nil && fl.Value.String() == "true"
}

// harnessEvents are what a run did that the lock's own coverage may not
// show: counts of each kind of event in its history and effects.
type harnessEvents struct {
	renewals, renewFails           int // renewals of a hold; holds whose lock reported a failed renewal
	acquireUnknown, acquireFail    int // acquisitions of unknown outcome (a timeout); refusals
	releaseNothing, releaseUnknown int // releases that removed nothing (not the owner); of unknown outcome
	expiredHeld                    int // releases called after the holder's own belief had run out
	touchedOthers                  int // key-touches: a client deleted or re-timed a key another held
	fenced, sectionErrors          int // writes the storage refused; critical sections that erred
	pauses, crashes, failovers     int // targeted pauses that fired; node crashes; failovers
	unfired                        int // targeted pauses that never fired
	bit, reachedNotBit, notReached int // faults that bit; reached the lock but did not bite; injected, never reached
	bitKinds                       []faults.Kind
	// closest is how near two holds of different clients came, as a
	// level: 0 no two holds, 1 a TTL or more apart, 2 under a TTL, 3
	// under a tenth, 4 under a hundredth, 5 under a thousandth, 6 they
	// overlapped.
	closest int
	hits    int // fuzzSignal's blocks run
}

func (e harnessEvents) String() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", what, n))
		}
	}
	add(e.renewals, "renewals")
	add(e.renewFails, "failed renewals")
	add(e.acquireUnknown, "acquisitions of unknown outcome")
	add(e.releaseNothing, "releases that removed nothing")
	add(e.releaseUnknown, "releases of unknown outcome")
	add(e.expiredHeld, "releases after the belief ran out")
	add(e.touchedOthers, "keys of others touched")
	add(e.fenced, "fenced writes")
	add(e.pauses, "pauses fired")
	add(e.unfired, "pauses never fired")
	add(e.bit, "faults bit")
	parts = append(parts, fmt.Sprintf("closest holds level %d", e.closest))
	return strings.Join(parts, ", ")
}

// observe counts a run's harness events.
func observe(out Outcome) harnessEvents {
	var e harnessEvents
	h := out.history
	belief := map[string]int64{} // a process's believed deadline (0: none or until release)
	for _, ev := range h.Events {
		switch ev.Kind {
		case event.KindRenew:
			e.renewals++
			belief[ev.Proc] = ev.Until
		case event.KindRenewFail:
			e.renewFails++
		case event.KindOK:
			if ev.Op == event.OpAcquire {
				belief[ev.Proc] = ev.Until
			}
		case event.KindFail:
			switch ev.Op {
			case event.OpAcquire:
				e.acquireFail++
			case event.OpRelease:
				e.releaseNothing++
			}
		case event.KindUnknown:
			switch ev.Op {
			case event.OpAcquire:
				e.acquireUnknown++
			case event.OpRelease:
				e.releaseUnknown++
			}
		case event.KindCall:
			if ev.Op == event.OpRelease {
				if u := belief[ev.Proc]; u != 0 && ev.T > u {
					e.expiredHeld++
				}
				delete(belief, ev.Proc)
			}
		case event.KindKeyTouch:
			e.touchedOthers++
		case event.KindStoreWrite:
			if ev.Result == event.ResultFenced {
				e.fenced++
			}
		case event.KindSectionError:
			e.sectionErrors++
		case event.KindPause:
			e.pauses++
		case event.KindCrash:
			e.crashes++
		case event.KindFailover:
			e.failovers++
		}
	}
	e.unfired = len(out.Unfired)
	for _, fe := range out.Effects {
		switch {
		case fe.Bit:
			e.bit++
			if !slices.Contains(e.bitKinds, fe.Fault.Kind) {
				e.bitKinds = append(e.bitKinds, fe.Fault.Kind)
			}
		case fe.Reached:
			e.reachedNotBit++
		case fe.Injected:
			e.notReached++
		}
	}
	e.closest = closest(checker.Holds(h.LockOps(), h.End), int64(out.Options.TTL))
	return e
}

// closest is how near two holds of different clients came (the level of
// harnessEvents.closest).
func closest(holds []checker.Hold, ttl int64) int {
	if len(holds) < 2 || ttl <= 0 {
		return 0
	}
	gap := int64(-1)
	for i := 1; i < len(holds); i++ {
		for j := i - 1; j >= 0 && j >= i-8; j-- { // holds are sorted by start: the near ones are the last few
			if holds[j].Proc == holds[i].Proc || (holds[j].Read && holds[i].Read) {
				continue
			}
			g := holds[i].Start - holds[j].End
			if g < 0 {
				return 6
			}
			if gap < 0 || g < gap {
				gap = g
			}
		}
	}
	switch {
	case gap < 0:
		return 0
	case gap < ttl/1000:
		return 5
	case gap < ttl/100:
		return 4
	case gap < ttl/10:
		return 3
	case gap < ttl:
		return 2
	}
	return 1
}

// fuzzSignal turns what the run did into coverage the fuzzer sees: each
// kind of harness event has its own block below, run once per event (Go
// rounds a block's count to a power of two, so 1, 2-3, 4-7, ... events of
// a kind are each a new signal), and the closest approach of two holds
// has a block per level. A run that fails a renewal for the first time,
// or comes nearer an overlap than any before, is new coverage even when
// the lock's code took no new branch. It returns what it saw, for the
// log.
func fuzzSignal(out Outcome) harnessEvents {
	e := observe(out)
	hit := 0
	for range min(e.renewals, 255) {
		hit++
	}
	for range min(e.renewFails, 255) {
		hit++
	}
	for range min(e.acquireUnknown, 255) {
		hit++
	}
	for range min(e.acquireFail, 255) {
		hit++
	}
	for range min(e.releaseNothing, 255) {
		hit++
	}
	for range min(e.releaseUnknown, 255) {
		hit++
	}
	for range min(e.expiredHeld, 255) {
		hit++
	}
	for range min(e.touchedOthers, 255) {
		hit++
	}
	for range min(e.fenced, 255) {
		hit++
	}
	for range min(e.sectionErrors, 255) {
		hit++
	}
	for range min(e.pauses, 255) {
		hit++
	}
	for range min(e.crashes, 255) {
		hit++
	}
	for range min(e.failovers, 255) {
		hit++
	}
	for range min(e.unfired, 255) {
		hit++
	}
	for range min(e.bit, 255) {
		hit++
	}
	for range min(e.reachedNotBit, 255) {
		hit++
	}
	for range min(e.notReached, 255) {
		hit++
	}
	for _, k := range e.bitKinds {
		switch k {
		case faults.ClientPause:
			hit++
		case faults.NodePause:
			hit++
		case faults.ClockDrift:
			hit++
		case faults.ClockJump:
			hit++
		case faults.Partition:
			hit++
		case faults.Delay:
			hit++
		case faults.Loss:
			hit++
		case faults.Crash:
			hit++
		case faults.Failover:
			hit++
		}
	}
	switch e.closest {
	case 1:
		hit++
	case 2:
		hit++
	case 3:
		hit++
	case 4:
		hit++
	case 5:
		hit++
	case 6:
		hit++
	}
	e.hits = hit
	return e
}
