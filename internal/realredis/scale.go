package realredis

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
)

// Scale plays a scenario k times faster: every duration of the world (the
// phases, the fault schedule, clock offsets, replication lag, Sentinel's
// down-after, the go-redis timeouts), of the workload (hold and think
// times) and of the lock (its TTL, retry delays, node timeouts, drift
// allowance) is multiplied by k. Ratios between them stay what the
// scenario says; only the network's latency (loopback's, in the real
// arm; the simulator's default model in the sim arm) does not scale.
func Scale(p scenarios.Parts, k float64) (scenarios.Parts, error) {
	if math.IsNaN(k) || k <= 0 || k > 100 {
		return p, fmt.Errorf("time scale %v out of range (0, 100]", k)
	}
	info, err := ScaleLock(p.Lock, k)
	if err != nil {
		return p, err
	}
	sc := func(d time.Duration) time.Duration { return time.Duration(math.Round(float64(d) * k)) }
	wl := p.Workload
	wl.HoldMin, wl.HoldMax, wl.ThinkMin, wl.ThinkMax = sc(wl.HoldMin), sc(wl.HoldMax), sc(wl.ThinkMin), sc(wl.ThinkMax)
	cfg := p.Config
	cfg.Duration, cfg.Liveness = sc(cfg.Duration), sc(cfg.Liveness)
	cfg.Faults = append(cfg.Faults[:0:0], cfg.Faults...)
	for i := range cfg.Faults {
		f := &cfg.Faults[i]
		f.Start, f.Duration, f.Jump, f.Delay = sc(f.Start), sc(f.Duration), sc(f.Jump), sc(f.Delay)
	}
	cfg.Nodes = append(cfg.Nodes[:0:0], cfg.Nodes...)
	for i := range cfg.Nodes {
		cfg.Nodes[i].ClockOffset = sc(cfg.Nodes[i].ClockOffset)
	}
	cfg.ClientOffsets = append(cfg.ClientOffsets[:0:0], cfg.ClientOffsets...)
	for i := range cfg.ClientOffsets {
		cfg.ClientOffsets[i] = sc(cfg.ClientOffsets[i])
	}
	cfg.Topology.ReplLag, cfg.Topology.DownAfter = sc(cfg.Topology.ReplLag), sc(cfg.Topology.DownAfter)
	cfg.Redis.DialTimeout, cfg.Redis.ReadTimeout = sc(cfg.Redis.DialTimeout), sc(cfg.Redis.ReadTimeout)
	cfg.Redis.WriteTimeout, cfg.Redis.RetryBackoff = sc(cfg.Redis.WriteTimeout), sc(cfg.Redis.RetryBackoff)
	cfg.Program = scenarios.Program(info, wl)
	return scenarios.Parts{Config: cfg, Lock: info, Workload: wl}, nil
}

// ScaleLock returns info with every duration of its lock multiplied by k
// (TTL included). It works on the catalogue's own designs, whose New
// returns a struct with an Env field (set-nx-cad and its relatives,
// fencing, watchdog, redlock); a library's lock (redsync, redislock, ...)
// fixes its durations inside the library call and cannot be scaled.
func ScaleLock(info locks.Info, k float64) (locks.Info, error) {
	if k == 1 {
		return info, nil
	}
	if info.Real != "" {
		return scaleConsensus(info, k), nil // consensus.go
	}
	if mk := withExpiry[info.ID]; mk != nil {
		out := info
		out.TTL = time.Duration(math.Round(float64(info.TTL) * k))
		out.New = func(env locks.Env) (locks.Lock, error) { return mk(env, out.TTL) }
		return out, nil
	}
	refuse := fmt.Errorf("lock %s cannot be time-scaled (its durations are fixed inside a library call); run it with --ttl %v, its own TTL", info.ID, info.TTL)
	tmpl, err := probe(info)
	if err != nil {
		return info, refuse
	}
	v := reflect.ValueOf(tmpl)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct || !v.Elem().FieldByName("Env").IsValid() {
		if info.TTL == 0 && hasNoDurations(v) {
			return info, nil // nothing to scale (version-cas takes no lock at all)
		}
		return info, refuse
	}
	scaled := reflect.New(v.Elem().Type())
	scaled.Elem().Set(v.Elem())
	scaleDurations(scaled.Elem(), k)
	out := info
	out.TTL = time.Duration(math.Round(float64(info.TTL) * k))
	out.New = func(env locks.Env) (locks.Lock, error) {
		x := reflect.New(scaled.Elem().Type())
		x.Elem().Set(scaled.Elem())
		x.Elem().FieldByName("Env").Set(reflect.ValueOf(env))
		return x.Interface().(locks.Lock), nil
	}
	return out, nil
}

// withExpiry are the library locks with a constructor that takes the lease
// (and scales their other durations with it).
var withExpiry = map[string]func(locks.Env, time.Duration) (locks.Lock, error){
	"redsync": catalogue.NewRedsync, "redislock": catalogue.NewRedislock, "gocron": catalogue.NewGocron}

// probe builds the lock with an empty Env, to read its parameters. A
// library's constructor may use the Env's clients at once (gocron pings):
// that is a lock that cannot be probed, not a crash.
func probe(info locks.Info) (l locks.Lock, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("lock %s: its constructor needs a live Env: %v", info.ID, r)
		}
	}()
	return info.New(locks.Env{})
}

// hasNoDurations reports whether v (a lock value) holds no exported
// time.Duration field.
func hasNoDurations(v reflect.Value) bool {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return true
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return true
	}
	for i := 0; i < v.NumField(); i++ {
		if v.Type().Field(i).IsExported() && v.Field(i).Type() == durationType {
			return false
		}
	}
	return true
}

var durationType = reflect.TypeOf(time.Duration(0))

// scaleDurations multiplies every settable time.Duration field of v (a
// struct), recursing into struct fields other than Env.
func scaleDurations(v reflect.Value, k float64) {
	t := v.Type()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !f.CanSet() || t.Field(i).Name == "Env" {
			continue
		}
		switch {
		case f.Type() == durationType:
			f.SetInt(int64(math.Round(float64(f.Int()) * k)))
		case f.Kind() == reflect.Struct:
			scaleDurations(f, k)
		}
	}
}
