package locktest_test

import (
	"encoding/binary"
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locktest"
)

// networkFaults aims the fuzzer as TestDeafWatchdogFoundByNetworkFaults
// aims the search: network faults only, at a lock that says it renews.
var networkFaults = locktest.Options{Kinds: []faults.Kind{faults.Partition, faults.Delay, faults.Loss}, Renews: true}

// FuzzDeafWatchdog is a planted bug for the fuzzer to find: the watchdog
// that believes its failed renewals (newRenewer(true)). Plain go test
// skips it (its seed corpus can find the bug: armed faults made one of
// the generic seeds a failing case; FuzzWatchdog, the correct twin, runs
// the same seeds); run
//
//	go test -run='^$' -fuzz=FuzzDeafWatchdog -fuzztime=60s ./locktest/
//
// and the fuzzer finds the failure (a renewal lost or late while the key
// expires) and writes the input to testdata/fuzz/FuzzDeafWatchdog/: delete
// it afterwards, or plain go test fails on it, as it should for a lock of
// your own.
func FuzzDeafWatchdog(f *testing.F) {
	skipUnlessFuzzed(f)
	locktest.Fuzz(f, newRenewer(true), networkFaults)
}

// skipUnlessFuzzed skips a planted-bug fuzz target unless go test -fuzz
// names it: plain go test, and go test -fuzz of another target (which
// runs every target's seed corpus first), stay green.
func skipUnlessFuzzed(f *testing.F) {
	fz := flag.Lookup("test.fuzz")
	if fz == nil || fz.Value.String() == "" {
		f.Skip("a planted bug, for go test -fuzz to find")
	}
	if re, err := regexp.Compile(fz.Value.String()); err != nil || !re.MatchString(f.Name()) {
		f.Skip("a planted bug, for go test -fuzz to find; -fuzz names another target")
	}
}

// FuzzWatchdog is its correct twin (a failed renewal ends the belief).
func FuzzWatchdog(f *testing.F) {
	locktest.Fuzz(f, newRenewer(false), networkFaults)
}

// deafInput is the first of a fixed stream of pseudo-random inputs on
// which the deaf watchdog fails (found anew whenever the decoding
// changes), as go test -fuzz finds one.
func deafInput(t *testing.T) []byte {
	// The stream from 42, from its 287th input: the first that failed at
	// FuzzVersion 1.
	x, step := uint64(42), uint64(0x9e3779b97f4a7c15)
	x += 286 * 256 * step
	for i := range 300 {
		in := []byte{locktest.FuzzVersion}
		for range 256 {
			x += step
			z := (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
			z = (z ^ (z >> 27)) * 0x94d049bb133111eb
			in = binary.LittleEndian.AppendUint64(in, z^(z>>31))
		}
		if _, fail := locktest.RunFuzzInput(t, newRenewer(true), networkFaults, in); fail != "" {
			t.Logf("input %d of the stream fails", i+1)
			return in
		}
	}
	t.Fatal("the deaf watchdog passed 300 random inputs")
	return nil
}

// A stored input replays as plain go test replays testdata/fuzz: it
// fails on the deaf watchdog, with the counterexample shrunk by
// run.Shrink and its repro line, and passes on the correct twin; an
// input of another decoding version is skipped, not failed.
func TestFuzzInputReplays(t *testing.T) {
	input := deafInput(t)
	skip, fail := locktest.RunFuzzInput(t, newRenewer(true), networkFaults, input)
	if skip != "" || fail == "" {
		t.Fatalf("the deaf watchdog: skipped %q, failure %q; want a failure", skip, fail)
	}
	for _, want := range []string{"the lock is unsafe", "locktest.RequireSafe(t, locktest.Run(t, yourFactory, ", "found by this fuzz input (seed ", "), then shrunk by run.Shrink"} {
		if !strings.Contains(fail, want) {
			t.Errorf("failure message lacks %q:\n%s", want, fail)
		}
	}
	if skip, fail := locktest.RunFuzzInput(t, newRenewer(false), networkFaults, input); skip != "" || fail != "" {
		t.Fatalf("the correct watchdog: skipped %q, failure %q; want a safe run", skip, fail)
	}
	old := append([]byte{locktest.FuzzVersion + 1}, input[1:]...)
	if skip, fail := locktest.RunFuzzInput(t, newRenewer(true), networkFaults, old); !strings.Contains(skip, "skipped") || fail != "" {
		t.Fatalf("an input of another decoding version: skipped %q, failure %q; want it skipped", skip, fail)
	}
}
