package locktest

import (
	"testing"

	"github.com/locksim/locksim/risk"
	"github.com/locksim/locksim/sim"
)

// RiskOptions are an estimate's inputs beyond the lock's Options.
type RiskOptions struct {
	// Profile is the fleet's fault classes [risk.Default(): the profile
	// locksim ships, every number with its source].
	Profile *risk.Profile
	// Seeds is the runs a stratum [20, 4 under -short]; Seed the first
	// run's seed [1].
	Seeds int
	Seed  uint64
}

// Risk estimates how often a year the lock lets two holders in, in the
// world `locksim risk` plays a catalogue design in (scenario no-faults,
// o.Clients clients contending, the lease o.TTL, the default workload),
// under the profile's faults: the same method and numbers as
// `locksim risk --lock ID --ttl D` (risk.Estimate), so the result compares
// with a catalogue design's. o gives the lock's Topology, TTL, Fencing,
// Clients and traits; its search options are not used. It fails t on bad
// input (a topology risk does not cover, a profile class that cannot be
// run) and returns the estimate; Result.WriteText prints it.
func Risk(t *testing.T, f Factory, o Options, ro RiskOptions) *risk.Result {
	t.Helper()
	o = o.withDefaults()
	if ro.Profile == nil {
		p, err := risk.Default()
		if err != nil {
			t.Fatalf("locktest: the default profile: %v", err)
		}
		ro.Profile = p
	}
	if ro.Seeds == 0 {
		ro.Seeds = 20
		if testing.Short() {
			ro.Seeds = 4
		}
	}
	if ro.Seed == 0 {
		ro.Seed = 1
	}
	in := info(f, o)
	res, err := risk.Estimate(sim.TestBubble(t), risk.Options{Info: &in, TTL: o.TTL, Clients: o.Clients, Seeds: ro.Seeds, Seed: ro.Seed, Profile: ro.Profile}, nil)
	if err != nil {
		t.Fatalf("locktest: risk: %v", err)
	}
	return res
}
