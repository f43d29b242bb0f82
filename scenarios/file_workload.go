package scenarios

import (
	"time"

	"github.com/locksim/locksim/locks"
)

// The workload a file describes for a lock, and how its runs are judged.

// LockKey is the lock's key in every file's world.
const LockKey = "lock:resource"

// workload is the file's workload for a lock.
func (f *File) workload(info locks.Info, resolve func(string, Span, time.Duration) (time.Duration, error)) (Workload, error) {
	wl := Workload{Key: LockKey, HoldMin: 50 * time.Millisecond, HoldMax: time.Second,
		ThinkMin: 10 * time.Millisecond, ThinkMax: 500 * time.Millisecond, Resource: ResourcePool, Reentrant: f.Workload.Reentrant,
		ReadFraction: f.Workload.ReadFraction}
	switch f.Workload.Resource {
	case ResourceCounter:
		wl.Resource = ResourceCounter
	case "none":
		wl.Resource = ResourceNone
	}
	for _, r := range []struct {
		path     string
		v        []Span
		min, max *time.Duration
	}{{"workload.hold", f.Workload.Hold, &wl.HoldMin, &wl.HoldMax}, {"workload.think", f.Workload.Think, &wl.ThinkMin, &wl.ThinkMax}} {
		if len(r.v) != 2 {
			continue
		}
		lo, err := resolve(r.path+"[0]", r.v[0], *r.min)
		if err != nil {
			return Workload{}, err
		}
		hi, err := resolve(r.path+"[1]", r.v[1], *r.max)
		if err != nil {
			return Workload{}, err
		}
		if lo > hi {
			return Workload{}, f.errAt(r.path, "min %v is above max %v for lock %s", lo, hi, info.ID)
		}
		*r.min, *r.max = lo, hi
	}
	return wl, nil
}

// judging is how runs of the file are checked for a lock.
func (f *File) judging(base locks.Info) Judging {
	j := Judging{Resource: ResourcePool, Initial: PoolSize}
	switch f.Workload.Resource {
	case ResourceCounter:
		j.Resource, j.Initial = ResourceCounter, 0
	case "none":
		j.Resource, j.Initial = "", 0
	}
	if f.Workload.PoolSize != nil {
		j.Initial = *f.Workload.PoolSize
	}
	if f.MaxUnavailable.Set {
		ttl := base.TTL
		if info, err := f.lockInfo(base, f.Params[base.ID]); err == nil {
			ttl = info.TTL
		}
		if d, err := f.MaxUnavailable.Resolve(ttl); err == nil {
			j.MaxUnavailable = d
		}
	}
	return j
}

// Judging is how a scenario's runs are checked: the workload's resource
// and its initial value, and the liveness bound.
type Judging struct {
	Resource       string // checker.History.Resource: pool, counter or "" (none)
	Initial        int64
	MaxUnavailable time.Duration
}

// Judging returns how the scenario's runs are checked for a lock (the
// lock matters only for a bound given as a multiple of its TTL).
func (s Scenario) Judging(info locks.Info) Judging {
	if s.File == nil {
		return Judging{Resource: ResourcePool, Initial: PoolSize}
	}
	return s.File.judging(info)
}

// JudgingFor is Judging for a built-in scenario id (the default's for
// anything else).
func JudgingFor(id string, info locks.Info) Judging {
	s, ok := builtins()[id]
	if !ok {
		return Judging{Resource: ResourcePool, Initial: PoolSize}
	}
	return s.Judging(info)
}
