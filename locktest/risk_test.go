package locktest_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locktest"
	"github.com/locksim/locksim/risk"
)

// pausesOnly is a profile of long client pauses only, frequent enough
// that a few runs a stratum tell a broken lock from a fenced one.
const pausesOnly = `id: pauses
classes:
  - id: pause
    kind: pause
    per_hour: 1
    size: {loguniform: {min: 100ms, max: 4s}}
    source: {rate: "assumption: for the test", size: "assumption: for the test"}
`

// A lock that releases with a plain DEL and has no fencing gets a higher
// estimate than the same lock with compare-and-delete and fencing tokens
// checked at the resource, under the same pauses.
func TestRiskBrokenAboveFenced(t *testing.T) {
	p, err := risk.Decode([]byte(pausesOnly), "pauses")
	if err != nil {
		t.Fatal(err)
	}
	ro := locktest.RiskOptions{Profile: p, Seeds: 4}
	o := locktest.Options{Topology: locks.Single, TTL: time.Second}
	broken := locktest.Risk(t, newMyLock(false, false), o, ro)
	o.Fencing = locks.FenceMaxToken
	fenced := locktest.Risk(t, newMyLock(true, true), o, ro)
	var buf bytes.Buffer
	if err := broken.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("broken:\n%s", buf.String())
	if broken.Lock != "user-lock" || broken.Runs == 0 {
		t.Fatalf("broken: lock %q, %d runs", broken.Lock, broken.Runs)
	}
	if !(broken.PerYear > 0) || !(broken.PerYear > fenced.PerYear) {
		t.Fatalf("broken lock %v violations a year, fenced %v: want broken above", broken.PerYear, fenced.PerYear)
	}
	if fenced.PerYear != 0 {
		t.Errorf("the fenced lock: %v violations a year under pauses alone, want 0", fenced.PerYear)
	}
}

// Risk refuses a topology the risk model does not cover, naming it.
func TestRiskRefusesTopology(t *testing.T) {
	ok := locktest.Standalone(func(t *testing.T) {
		locktest.Risk(t, newMyLock(true, false), locktest.Options{Topology: locks.Consensus, TTL: time.Second}, locktest.RiskOptions{Seeds: 1})
	})
	if ok {
		t.Fatal("a consensus topology passed")
	}
}
