package catalogue

import (
	"errors"
	"time"

	"github.com/locksim/locksim/locks"
)

// The catalogue's parameter tables (locks.Param): one per family of
// designs, each row a knob a scenario file's params block, a sweep, 'list
// locks ID' and the real arm's time scaling read. A design registered with
// a table and a Configure gets its TTL and New from the defaults.

// Bounds of lock parameters.
const (
	maxParamDuration = 24 * time.Hour // sim.MaxDuration
	maxTries         = 1000
	maxWaitReplicas  = 63 // sim.MaxNodes - 1
)

func durParam(name string, def time.Duration, positive bool, doc string) locks.Param {
	return locks.Param{Name: name, Kind: locks.KindDuration, Default: locks.Dur(def), Positive: positive,
		Max: locks.Dur(maxParamDuration), Doc: doc}
}

func intParam(name, unit string, def, lo, hi int, doc string) locks.Param {
	return locks.Param{Name: name, Kind: locks.KindInt, Unit: unit, Default: locks.Int(def), Min: locks.Int(lo), Max: locks.Int(hi), Doc: doc}
}

func ttlParam(def time.Duration) locks.Param {
	return durParam("ttl", def, true, "the lease: the key's expiry, and how long the holder believes it holds")
}

func triesParam(def int) locks.Param {
	return intParam("tries", "attempts", def, 1, maxTries, "acquisition attempts before ErrNotAcquired")
}

func retryDelayParam(def time.Duration) locks.Param {
	return durParam("retry_delay", def, false, "the sleep between two attempts, on the client's clock")
}

// cadParams is set-nx-cad's family's table (set-nx-cad, token-cas,
// primary-replica, fencing's without the WAIT rows), with ttl's default.
func cadParams(ttl time.Duration, wait bool) []locks.Param {
	ps := []locks.Param{ttlParam(ttl), triesParam(3), retryDelayParam(time.Second)}
	if wait {
		ps = append(ps,
			intParam("wait_replicas", "replicas", 0, 0, maxWaitReplicas, "replicas that must acknowledge each SET (WAIT), or the try fails and the key is given back (Redisson's failover guard)"),
			durParam("wait_timeout", time.Second, true, "WAIT's timeout, with wait_replicas (Redisson's checkLockSyncedSlaves: 1 s)"))
	}
	return ps
}

// cad builds a SetNXCAD from cadParams values.
func cad(v locks.Values, wait bool) (SetNXCAD, error) {
	c := SetNXCAD{TTL: v.Duration("ttl"), Tries: v.Int("tries"), RetryDelay: v.Duration("retry_delay")}
	if !wait {
		return c, nil
	}
	if c.WaitReplicas = v.Int("wait_replicas"); c.WaitReplicas > 0 {
		c.WaitTimeout = v.Duration("wait_timeout")
	} else if v.Given("wait_timeout") {
		return c, &locks.ParamError{Param: "wait_timeout", Msg: "set wait_replicas too (how many replicas must acknowledge)"}
	}
	return c, nil
}

// configureCAD is Configure for set-nx-cad's family: mk wraps the
// SetNXCAD (with its Env set) as the design's lock.
func configureCAD(wait bool, mk func(SetNXCAD) locks.Lock) func(locks.Values) (locks.Configured, error) {
	return func(v locks.Values) (locks.Configured, error) {
		c, err := cad(v, wait)
		if err != nil {
			return locks.Configured{}, err
		}
		return locks.Configured{TTL: c.TTL, New: func(env locks.Env) (locks.Lock, error) {
			x := c
			x.Env = env
			return mk(x), nil
		}}, nil
	}
}

// watchdogParams is the watchdog's table (and its canary's).
func watchdogParams() []locks.Param {
	return append(cadParams(30*time.Second, false),
		durParam("renew_interval", 10*time.Second, true, "the watchdog's sleep between renewals (Redisson: a third of the lease)"))
}

func configureWatchdog(noOwnerCheck bool) func(locks.Values) (locks.Configured, error) {
	return func(v locks.Values) (locks.Configured, error) {
		c, err := cad(v, false)
		if err != nil {
			return locks.Configured{}, err
		}
		every := v.Duration("renew_interval")
		return locks.Configured{TTL: c.TTL, New: func(env locks.Env) (locks.Lock, error) {
			x := c
			x.Env = env
			return &Watchdog{SetNXCAD: x, Interval: every, noOwnerCheck: noOwnerCheck}, nil
		}}, nil
	}
}

// RedlockPresets are the Redlock parameter sets the preset parameter
// names.
var RedlockPresets = map[string]RedlockParams{"redis-io": RedlockRedisIO, "seed-001": RedlockSeed001}

// redlockParams is Redlock's table (and its canaries'): a preset, then
// each of its values on its own.
func redlockParams() []locks.Param {
	d := RedlockRedisIO
	return []locks.Param{
		{Name: "preset", Kind: locks.KindChoice, Unit: "Redlock preset", Default: locks.Choice("redis-io"), Choices: []string{"redis-io", "seed-001"},
			Doc: "the parameter set the others start from: redis-io, or seed-001 (TTL 5 s, 3 tries 200 ms apart, drift allowance 500 ms)"},
		ttlParam(d.TTL),
		triesParam(d.Tries),
		retryDelayParam(d.RetryDelay),
		durParam("retry_jitter", d.RetryJitter, false, "a random extra delay in [0, retry_jitter) before each retry"),
		{Name: "drift_factor", Kind: locks.KindFloat, Unit: "fraction of the TTL", Default: locks.Float(d.DriftFactor), Min: locks.Float(0), Max: locks.Float(0.5),
			Doc: "the clock drift allowance, subtracted from the validity"},
		durParam("drift_fixed", d.DriftFixed, false, "plus this much drift allowance (redis.io: 2 ms)"),
		durParam("node_timeout", d.NodeTimeout, true, "each node's request timeout, small against the TTL"),
	}
}

// redlockFrom builds Redlock's parameters from its table's values.
func redlockFrom(v locks.Values) (RedlockParams, error) {
	pr, ok := RedlockPresets[v.Choice("preset")]
	if !ok {
		return pr, errors.New("no such preset") // the table's choices prevent it
	}
	pr.TTL = v.DurationOr("ttl", pr.TTL)
	pr.RetryDelay = v.DurationOr("retry_delay", pr.RetryDelay)
	pr.RetryJitter = v.DurationOr("retry_jitter", pr.RetryJitter)
	pr.DriftFixed = v.DurationOr("drift_fixed", pr.DriftFixed)
	pr.NodeTimeout = v.DurationOr("node_timeout", pr.NodeTimeout)
	if v.Given("tries") {
		pr.Tries = v.Int("tries")
	}
	if v.Given("drift_factor") {
		pr.DriftFactor = v.Float("drift_factor")
	}
	return pr, nil
}

// configureRedlock is Configure for Redlock; bug sets a canary's switch.
func configureRedlock(bug func(*Redlock)) func(locks.Values) (locks.Configured, error) {
	return func(v locks.Values) (locks.Configured, error) {
		pr, err := redlockFrom(v)
		if err != nil {
			return locks.Configured{}, err
		}
		return locks.Configured{TTL: pr.TTL, New: func(env locks.Env) (locks.Lock, error) {
			l := &Redlock{Env: env, P: pr}
			if bug != nil {
				bug(l)
			}
			return l, nil
		}}, nil
	}
}

// leaseOnly is the table of a design whose only knob is its lease (a
// library's expiry; its other delays scale with it), and its Configure.
func leaseOnly(ttl time.Duration, mk func(locks.Env, time.Duration) (locks.Lock, error)) ([]locks.Param, func(locks.Values) (locks.Configured, error)) {
	return []locks.Param{ttlParam(ttl)}, func(v locks.Values) (locks.Configured, error) {
		d := v.Duration("ttl")
		return locks.Configured{TTL: d, New: func(env locks.Env) (locks.Lock, error) { return mk(env, d) }}, nil
	}
}
