// Package catalogue holds every lock design locksim judges, each real
// go-redis code issuing exactly its source's commands, and the library
// adapters (redsync, redislock, gocron, go-zero), behind package locks'
// contract. Register adds a design; Get, IDs, AllIDs and CanaryIDs find
// them. Importing package locks alone links none of this.
package catalogue

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/locksim/locksim/locks"
)

var registry = map[string]locks.Info{}

// Register adds a design to the catalogue. A design with a parameter
// table (Params, Configure) and no New is built from the table's
// defaults: its TTL and New are Configure's.
func Register(i locks.Info) {
	if _, dup := registry[i.ID]; dup {
		panic("catalogue: duplicate id " + i.ID)
	}
	if i.Configure != nil && i.New == nil {
		d, err := i.Defaults()
		if err != nil {
			panic("catalogue: " + i.ID + ": " + err.Error())
		}
		i = d
	}
	registry[i.ID] = i
}

// Get returns the design with the given id.
func Get(id string) (locks.Info, error) {
	i, ok := registry[id]
	if !ok {
		return locks.Info{}, fmt.Errorf("unknown lock %q (known: %v)", id, IDs())
	}
	return i, nil
}

// IDs lists the catalogue's ids, sorted, without the canaries.
func IDs() []string {
	ids := make([]string, 0, len(registry))
	for id, i := range registry {
		if !i.Canary && i.RealOnly == "" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// RealOnlyIDs are the designs only the real arm runs (Info.RealOnly: the
// etcd designs), sorted; IDs leaves them out, AllIDs has them.
func RealOnlyIDs() []string {
	var ids []string
	for id, i := range registry {
		if i.RealOnly != "" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// AllIDs lists every registered id, canaries included, sorted.
func AllIDs() []string {
	ids := make([]string, 0, len(registry))
	for id := range registry {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// CanaryIDs lists the canaries' ids, sorted.
func CanaryIDs() []string {
	var ids []string
	for id, i := range registry {
		if i.Canary {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// randomValue draws a 20-byte hex value from r, as the seeds' UUIDs do.
func randomValue(r *rand.Rand) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 20)
	for i := range b {
		b[i] = hex[r.IntN(16)]
	}
	return string(b)
}
