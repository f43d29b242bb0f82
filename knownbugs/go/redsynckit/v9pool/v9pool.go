// Package v9pool is a redsync v4 redis.Pool over a go-redis v9 client, for
// the redsync versions that ship no go-redis v9 adapter (v4.0.x to v4.4.x:
// their redis/redis.go declares the Pool and Conn interfaces this
// implements). It does what those versions' own go-redis v8 adapter
// (redis/goredis/v8) does, over v9: integer replies come back as int64,
// a missing key as "" with no error, a script by EVALSHA and by EVAL on
// NOSCRIPT.
package v9pool

import (
	"context"
	"errors"
	"strings"
	"time"

	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/redis/go-redis/v9"
)

// New wraps c.
func New(c redis.UniversalClient) rsredis.Pool { return pool{c} }

type pool struct{ c redis.UniversalClient }

func (p pool) Get(ctx context.Context) (rsredis.Conn, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return conn{p.c, ctx}, nil
}

type conn struct {
	c   redis.UniversalClient
	ctx context.Context
}

func (c conn) Get(name string) (string, error) {
	v, err := c.c.Get(c.ctx, name).Result()
	return v, nilIsNoError(err)
}

func (c conn) Set(name, value string) (bool, error) {
	v, err := c.c.Set(c.ctx, name, value, 0).Result()
	return v == "OK", err
}

func (c conn) SetNX(name, value string, expiry time.Duration) (bool, error) {
	return c.c.SetNX(c.ctx, name, value, expiry).Result()
}

func (c conn) PTTL(name string) (time.Duration, error) {
	return c.c.PTTL(c.ctx, name).Result()
}

func (c conn) Eval(s *rsredis.Script, keysAndArgs ...any) (any, error) {
	keys := make([]string, s.KeyCount)
	for i := range keys {
		keys[i] = keysAndArgs[i].(string)
	}
	args := keysAndArgs[s.KeyCount:]
	v, err := c.c.EvalSha(c.ctx, s.Hash, keys, args...).Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		v, err = c.c.Eval(c.ctx, s.Src, keys, args...).Result()
	}
	return v, nilIsNoError(err)
}

func (c conn) Close() error { return nil }

func nilIsNoError(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
