package store

import (
	"fmt"
	"testing"

	"github.com/locksim/locksim/run"
)

// BenchmarkTrim is Trim of a store of 10,000 entries under its bound (a
// report's end): a look at each entry's name and size.
func BenchmarkTrim(b *testing.B) {
	s, err := Open(b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 1500) // an outcome's size
	for i := range 10_000 {
		k, err := RunKey(buildA, specSeed(uint64(i+1)), "outcome")
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Put(k, payload); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if removed, _, err := s.Trim(); err != nil || removed != 0 {
			b.Fatal(fmt.Sprint(removed, err))
		}
	}
}

func specSeed(seed uint64) run.Spec {
	return run.Spec{Scenario: "no-faults", Lock: "set-nx-cad", Seed: seed}
}
