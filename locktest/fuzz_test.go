package locktest_test

import (
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
// runs its seed corpus, on which it is safe; run
//
//	go test -run='^$' -fuzz=FuzzDeafWatchdog -fuzztime=60s ./locktest/
//
// and the fuzzer finds the failure (a renewal lost or late while the key
// expires) and writes the input to testdata/fuzz/FuzzDeafWatchdog/: delete
// it afterwards, or plain go test fails on it, as it should for a lock of
// your own.
func FuzzDeafWatchdog(f *testing.F) {
	locktest.Fuzz(f, newRenewer(true), networkFaults)
}

// FuzzWatchdog is its correct twin (a failed renewal ends the belief).
func FuzzWatchdog(f *testing.F) {
	locktest.Fuzz(f, newRenewer(false), networkFaults)
}

// deafInput is an input go test -fuzz=FuzzDeafWatchdog found (in 17 s):
// a one-way loss of c0's and c2's messages to c1 and n0 for 3 s from
// t=14.4 s, which the deaf watchdog's holder does not notice. (Of
// FuzzVersion 1: TestFuzzDecodingGolden fails when the draw changes.)
var deafInput = []byte("\x01\xa3\x86\xe9\xcc\xd6\xc2%\bsV\xb9\x9c\xc7Bz]\x80\xeb\xce}\xa0\x8b\xee\xf0\xdb>aD\xaf\x92\xf5\xd8\x03fI\xac\x97\xfa\xdd\x00kN\xb1\x94\xff\"\x05h:\x1d_\xab~\xf1mP\xbb\x9e\xc1$\x0frU\xb8\xe3a)\xe4wM\xf6\xf6\xf6\xf6\xf6\xf6\xf6\xf6\xbd\xe0\xcb.\x11t_\x82\xe5\xc83\x16y\\\x87\xea\xcd0\x9a\xfd \v\xef\xd25\x18C\xa6\x89\xec\xd7S\xb6\x99\xfc'\n\xd4?bE\xa8X\x83\xa2\xc4Qie<\xfd\x94\xfdgJ\xad\x90\xfb\xde\x01dO\xb2\x95\xf8#\x06iL\xafsK\xa8i^*\xb7\x1b~\xa1\x84nQ\xb4\x9f9\x1cG\xaa\x8d\xd14\x1f*\rp[\xbe\xe1\xc4/\x12\xd4\xd4\xd4\xd4\xc9,\x17\xa5\x88\xf37\x1a1\x14\x7f\xa2\x85\xe8\xd36\x19|\xa7\x8a\xed\xd0;\x1eA\xa4\x8f\xf2\xd58")

// A stored input replays as plain go test replays testdata/fuzz: it
// fails on the deaf watchdog, with the counterexample shrunk by
// run.Shrink and its repro line, and passes on the correct twin; an
// input of another decoding version is skipped, not failed.
func TestFuzzInputReplays(t *testing.T) {
	skip, fail := locktest.RunFuzzInput(t, newRenewer(true), networkFaults, deafInput)
	if skip != "" || fail == "" {
		t.Fatalf("the deaf watchdog: skipped %q, failure %q; want a failure", skip, fail)
	}
	for _, want := range []string{"the lock is unsafe", "counterexample: seed 4,", "locktest.RequireSafe(t, locktest.Run(t, yourFactory, ", "found by this fuzz input (seed 4, 1 faults, 3 clients), then shrunk by run.Shrink"} {
		if !strings.Contains(fail, want) {
			t.Errorf("failure message lacks %q:\n%s", want, fail)
		}
	}
	if skip, fail := locktest.RunFuzzInput(t, newRenewer(false), networkFaults, deafInput); skip != "" || fail != "" {
		t.Fatalf("the correct watchdog: skipped %q, failure %q; want a safe run", skip, fail)
	}
	old := append([]byte{locktest.FuzzVersion + 1}, deafInput[1:]...)
	if skip, fail := locktest.RunFuzzInput(t, newRenewer(true), networkFaults, old); !strings.Contains(skip, "skipped") || fail != "" {
		t.Fatalf("an input of another decoding version: skipped %q, failure %q; want it skipped", skip, fail)
	}
}
