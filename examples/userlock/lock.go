// Package userlock is what a locksim user's own code looks like: a lock
// written against go-redis, in a module of its own that imports locksim only
// from its tests.
package userlock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrTaken means someone else holds the lock.
var ErrTaken = errors.New("userlock: taken")

var release = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`)

// Lock is SET NX PX with a caller-chosen value, released by
// compare-and-delete.
type Lock struct {
	RDB *redis.Client
	Key string
	TTL time.Duration
}

// Acquire takes the lock with value once.
func (l *Lock) Acquire(ctx context.Context, value string) error {
	ok, err := l.RDB.SetNX(ctx, l.Key, value, l.TTL).Result()
	if err != nil {
		return err
	}
	if !ok {
		return ErrTaken
	}
	return nil
}

// Release gives the lock up if value still holds it: 1 when it deleted
// the key, 0 when the key was gone or another's.
func (l *Lock) Release(ctx context.Context, value string) (int64, error) {
	return release.Run(ctx, l.RDB, []string{l.Key}, value).Int64()
}
