package locks

import (
	"fmt"
	"sort"
	"sync"
)

// The registry of designs a program links. A package of designs (locksim's
// is locks/catalogue) registers each in its init, as database/sql drivers
// do; the scenarios, the runner and locktest look designs up here, so a
// program links only the lock libraries it imports: a test of a user's own
// lock through locktest links none.
var registry struct {
	sync.RWMutex
	m map[string]Info
}

// Register adds a design. A design with a parameter table (Params,
// Configure) and no New is built from the table's defaults: its TTL and
// New are Configure's. A duplicate id or a table whose defaults fail is a
// programming error and panics, at init.
func Register(i Info) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[i.ID]; dup {
		panic("locks: duplicate id " + i.ID)
	}
	if i.Configure != nil && i.New == nil {
		d, err := i.Defaults()
		if err != nil {
			panic("locks: " + i.ID + ": " + err.Error())
		}
		i = d
	}
	if registry.m == nil {
		registry.m = map[string]Info{}
	}
	registry.m[i.ID] = i
}

// Lookup returns the registered design with the given id. When none is
// registered at all, the error says which import registers locksim's.
func Lookup(id string) (Info, error) {
	registry.RLock()
	i, ok := registry.m[id]
	n := len(registry.m)
	registry.RUnlock()
	switch {
	case ok:
		return i, nil
	case n == 0:
		return Info{}, fmt.Errorf("unknown lock %q (no design is registered: import github.com/locksim/locksim/locks/catalogue, or _ it, to use locksim's)", id)
	}
	return Info{}, fmt.Errorf("unknown lock %q (known: %v)", id, IDs())
}

// IDs lists the registered ids, sorted, without the canaries and the
// designs only the real arm runs.
func IDs() []string {
	return ids(func(i Info) bool { return !i.Canary && i.RealOnly == "" })
}

// RealOnlyIDs are the registered designs only the real arm runs
// (Info.RealOnly), sorted; IDs leaves them out, AllIDs has them.
func RealOnlyIDs() []string { return ids(func(i Info) bool { return i.RealOnly != "" }) }

// AllIDs lists every registered id, canaries included, sorted.
func AllIDs() []string { return ids(func(Info) bool { return true }) }

// CanaryIDs lists the registered canaries' ids, sorted.
func CanaryIDs() []string { return ids(func(i Info) bool { return i.Canary }) }

func ids(keep func(Info) bool) []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.m))
	for id, i := range registry.m {
		if keep(i) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
