// Package catalogue holds every lock design locksim judges, each real
// go-redis code issuing exactly its source's commands, and the library
// adapters (redsync, redislock, gocron, go-zero), behind package locks'
// contract. Register adds a design; Get, IDs, AllIDs and CanaryIDs find
// them. Importing package locks alone links none of this.
package catalogue

import (
	"math/rand/v2"

	"github.com/locksim/locksim/locks"
)

// Register adds a design to the catalogue (locks.Register: the
// registry lives in package locks, so the scenarios and the runner find
// designs without linking this package).
func Register(i locks.Info) { locks.Register(i) }

// Get returns the design with the given id (locks.Lookup).
func Get(id string) (locks.Info, error) { return locks.Lookup(id) }

// IDs lists the catalogue's ids, sorted, without the canaries.
func IDs() []string { return locks.IDs() }

// RealOnlyIDs are the designs only the real arm runs (Info.RealOnly: the
// etcd designs), sorted; IDs leaves them out, AllIDs has them.
func RealOnlyIDs() []string { return locks.RealOnlyIDs() }

// AllIDs lists every registered id, canaries included, sorted.
func AllIDs() []string { return locks.AllIDs() }

// CanaryIDs lists the canaries' ids, sorted.
func CanaryIDs() []string { return locks.CanaryIDs() }

// randomValue draws a 20-byte hex value from r, as the seeds' UUIDs do.
func randomValue(r *rand.Rand) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 20)
	for i := range b {
		b[i] = hex[r.IntN(16)]
	}
	return string(b)
}
