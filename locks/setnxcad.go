package locks

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// CompareAndDelete is the release script of seeds 000, 002 and 003: delete
// the key only if it still holds our value.
const CompareAndDelete = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

var cadScript = redis.NewScript(CompareAndDelete)

func init() {
	Register(Info{
		ID:       "set-nx-cad",
		Design:   "SET key value NX PX ttl with a random value; release by Lua compare-and-delete",
		Source:   "seeds 000, 002, 003 v3",
		Weakness: "a holder paused past the TTL keeps acting while another client holds the key; one node is a single point of failure",
		Topology: Single,
		TTL:      3 * time.Second, // seed 002: 3 s lock, retry after 1 s
		New: func(env Env) (Lock, error) {
			return &SetNXCAD{Env: env, TTL: 3 * time.Second, Tries: 3, RetryDelay: time.Second}, nil
		},
	})
}

// SetNXCAD is SET NX PX with a random value and a Lua compare-and-delete
// release (seeds 000, 002, 003 v3; seed 002's parameters: a 3 s lock,
// retried after 1 s). Its weakness: the holder believes it holds until
// start+TTL on its own clock; a pause, a fast node clock or a failover can
// hand the key to another client before then.
type SetNXCAD struct {
	Env        Env
	TTL        time.Duration
	Tries      int
	RetryDelay time.Duration
}

// Acquire implements Lock.
func (l *SetNXCAD) Acquire(ctx context.Context) (Lease, error) {
	value := randomValue(l.Env.Rand)
	var lastErr error
	for try := 0; try < max(1, l.Tries); try++ {
		if try > 0 {
			l.Env.Clock.Sleep(l.RetryDelay)
		}
		start := l.Env.Clock.Now()
		ok, err := l.Env.Primary.SetNX(ctx, l.Env.Key, value, l.TTL).Result()
		l.Env.At(PointAcquiring)
		if err != nil {
			lastErr = err
			continue
		}
		if ok {
			l.Env.At(PointAfterCheck)
			return Lease{Value: value, Start: start, ValidUntil: start.Add(l.TTL)}, nil
		}
		lastErr = nil
	}
	if lastErr != nil {
		return Lease{}, lastErr
	}
	return Lease{}, ErrNotAcquired
}

// Release implements Lock.
func (l *SetNXCAD) Release(ctx context.Context, lease Lease) error {
	n, err := cadScript.Run(ctx, l.Env.Primary, []string{l.Env.Key}, lease.Value).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotOwner
	}
	return nil
}

// ErrNotOwner means a release found the key gone or held by another value.
var ErrNotOwner = errors.New("lock no longer held by this client")
