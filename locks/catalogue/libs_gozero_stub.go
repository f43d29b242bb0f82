//go:build !gozero

package catalogue

import (
	"fmt"

	"github.com/locksim/locksim/locks"
)

const goZeroUnavailable = "not built into this binary: linking go-zero catches SIGINT/SIGTERM and changes GOMAXPROCS process-wide, so it is behind a build tag; rebuild with -tags gozero (go build -tags gozero ./cmd/locksim)"

func init() {
	Register(locks.Info{
		ID:          goZeroID,
		Design:      goZeroDesign + " (not built in: build with -tags gozero)",
		Source:      "library (single node)",
		Weakness:    goZeroWeakness,
		Topology:    locks.Single,
		Unavailable: goZeroUnavailable,
		New: func(locks.Env) (locks.Lock, error) {
			return nil, fmt.Errorf("lock %q: %s", goZeroID, goZeroUnavailable)
		},
	})
}
