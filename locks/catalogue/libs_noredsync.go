//go:build locksim_noredsync

package catalogue

import (
	"fmt"

	"github.com/locksim/locksim/locks"
)

// noRedsync is why redsync and gocron are missing under -tags
// locksim_noredsync: that build is for a module pinning another redsync
// version (knownbugs/go/), whose API the catalogue's adapters
// (libs_redsync.go, libs_gocron.go) do not compile against.
const noRedsync = "not built into this binary: built with -tags locksim_noredsync (for a module that pins another redsync version); rebuild without the tag"

func init() {
	for id, topo := range map[string]locks.Topology{"redsync": locks.Independent, "gocron": locks.Single} {
		Register(locks.Info{
			ID:          id,
			Design:      id + " (not built in: built with -tags locksim_noredsync)",
			Source:      "library",
			Weakness:    "not built in",
			Topology:    topo,
			Unavailable: noRedsync,
			New: func(locks.Env) (locks.Lock, error) {
				return nil, fmt.Errorf("lock %q: %s", id, noRedsync)
			},
		})
	}
}
