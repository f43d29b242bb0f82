package resource

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrFenced means the storage rejected a write (its fencing check).
var ErrFenced = errors.New("write fenced by the storage")

// State is what a read returns.
type State struct {
	Value   int64
	Version int64
	Owner   string
}

// Fence is what a write carries for the storage's check.
type Fence struct {
	Token         int64  // max-token
	Owner         string // the writer's identity (its random lock value)
	ExpectOwner   string // owner-cas: the owner the writer read
	ExpectVersion int64  // version: the version the writer read
}

// Client reaches the storage through a go-redis client.
type Client struct{ C *redis.Client }

// Read reads an object. With a fencing token (f.Token > 0) the read is
// fenced too: a storage in max-token mode refuses a reader older than one it
// has seen (ErrFenced) and remembers the reader's token.
func (c Client) Read(ctx context.Context, key string, f Fence) (State, error) {
	args := []any{"STORE.READ", key}
	if f.Token > 0 {
		args = append(args, f.Token, f.Owner)
	}
	vals, err := c.C.Do(ctx, args...).StringSlice()
	if err != nil {
		if strings.HasPrefix(err.Error(), "FENCED") {
			return State{}, fmt.Errorf("%w: %s", ErrFenced, strings.TrimPrefix(err.Error(), "FENCED "))
		}
		return State{}, err
	}
	if len(vals) != 3 {
		return State{}, fmt.Errorf("storage read: %d fields, want 3", len(vals))
	}
	v, err1 := strconv.ParseInt(vals[0], 10, 64)
	ver, err2 := strconv.ParseInt(vals[1], 10, 64)
	if err1 != nil || err2 != nil {
		return State{}, fmt.Errorf("storage read: bad integers %q", vals)
	}
	return State{Value: v, Version: ver, Owner: vals[2]}, nil
}

// Write writes value with the fence. It returns ErrFenced (wrapped) when the
// storage rejected it; any other error leaves the outcome unknown.
func (c Client) Write(ctx context.Context, key string, value int64, f Fence) error {
	err := c.C.Do(ctx, "STORE.WRITE", key, value, f.Token, f.Owner, f.ExpectOwner, f.ExpectVersion).Err()
	if err != nil && strings.HasPrefix(err.Error(), "FENCED") {
		return fmt.Errorf("%w: %s", ErrFenced, strings.TrimPrefix(err.Error(), "FENCED "))
	}
	return err
}
