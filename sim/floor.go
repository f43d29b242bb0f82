package sim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Floors: what a Redis command costs without the engine, so the engine's
// speed can be read beside it (the benchmarks in bench_test.go and
// "locksim bench" measure both in one run). Nothing here reads a clock:
// callers time Run themselves.
//
//	DispatchFloor  miniredis server.Dispatch into a buffer: no client, no
//	               network (what a command costs miniredis itself)
//	PipeFloor      a real go-redis client talking to miniredis over
//	               net.Pipe, outside any bubble (the cheapest real path)

// FloorSETNX is the command the floors and the engine benchmarks run: SET
// NX PX on a key that already exists (the contended-acquire case: the reply
// is nil, and state never changes, so every iteration does the same work).
var (
	FloorSETNXSetup = [][]string{{"SET", "k", "v"}}
	FloorSETNXArgs  = []string{"SET", "k", "v", "PX", "30500", "NX"}
	FloorSETNXReply = "$-1\r\n"
)

// NewFloorServer starts a miniredis without a listener: one Dial starts
// it on a pipe, and closing the pipe ends the goroutines miniredis started
// for it. Close it with Close.
func NewFloorServer() (*miniredis.Miniredis, error) {
	m := miniredis.NewMiniRedis()
	c, err := m.Dial()
	if err != nil {
		return nil, err
	}
	c.Close()
	return m, nil
}

// DispatchFloor runs one command straight into miniredis's dispatcher.
type DispatchFloor struct {
	m    *miniredis.Miniredis
	srv  *server.Server
	peer *server.Peer
	buf  bytes.Buffer
	bw   *bufio.Writer
	args []string
	want string
}

// NewDispatchFloor runs setup, then args once, and checks that the reply
// ends with want.
func NewDispatchFloor(setup [][]string, args []string, want string) (*DispatchFloor, error) {
	m, err := NewFloorServer()
	if err != nil {
		return nil, err
	}
	f := &DispatchFloor{m: m, srv: m.Server(), args: args, want: want}
	f.bw = bufio.NewWriter(&f.buf)
	f.peer = server.NewPeer(f.bw)
	for _, a := range setup {
		f.srv.Dispatch(f.peer, a)
	}
	f.buf.Reset()
	if err := f.Run(1); err != nil {
		m.Close()
		return nil, err
	}
	return f, nil
}

// Run dispatches the command n times and checks the last reply.
func (f *DispatchFloor) Run(n int) error {
	for i := 0; i < n; i++ {
		f.buf.Reset()
		f.srv.Dispatch(f.peer, f.args)
		f.bw.Flush()
	}
	if got := f.buf.String(); !strings.HasSuffix(got, f.want) {
		return fmt.Errorf("sim: floor %q: got %q, want suffix %q", f.args, got, f.want)
	}
	return nil
}

// Close stops the server.
func (f *DispatchFloor) Close() { f.m.Close() }

// NewFloorClient returns a go-redis client on m over net.Pipe with the
// engine's client options, less what only a bubble needs (timeouts,
// retries: nothing fails here).
func NewFloorClient(m *miniredis.Miniredis) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     "floor",
		Dialer:                   func(context.Context, string, string) (net.Conn, error) { return m.Dial() },
		Protocol:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PoolSize:                 1,
		ConnMaxIdleTime:          -1,
		MaxRetries:               -1,
	})
}

// PipeFloor runs one go-redis call against miniredis over net.Pipe.
type PipeFloor struct {
	m  *miniredis.Miniredis
	c  *redis.Client
	op func(ctx context.Context, c *redis.Client) error
}

// NewPipeFloor runs setup, then op 50 times to warm up (dial, handshake).
func NewPipeFloor(setup, op func(ctx context.Context, c *redis.Client) error) (*PipeFloor, error) {
	m, err := NewFloorServer()
	if err != nil {
		return nil, err
	}
	f := &PipeFloor{m: m, c: NewFloorClient(m), op: op}
	ctx := context.Background()
	if err := setup(ctx, f.c); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Run(ctx, 50); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Run calls op n times.
func (f *PipeFloor) Run(ctx context.Context, n int) error {
	for i := 0; i < n; i++ {
		if err := f.op(ctx, f.c); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the client and the server.
func (f *PipeFloor) Close() {
	f.c.Close()
	f.m.Close()
}

// FloorSetKey and FloorSetNX are the PipeFloor calls of FloorSETNX: SET k v,
// then SetNX (PX, as lock code sends it) on the existing key.
func FloorSetKey(ctx context.Context, c *redis.Client) error { return c.Set(ctx, "k", "v", 0).Err() }

func FloorSetNX(ctx context.Context, c *redis.Client) error {
	return c.SetNX(ctx, "k", "v", 30500*time.Millisecond).Err()
}
