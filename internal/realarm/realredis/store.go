package realredis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/locksim/locksim/sim"
)

// maxRequest bounds one RESP request (elements and bytes).
const (
	maxArgs     = 1024
	maxArgBytes = 1 << 20
)

// storeServer serves a sim.Service (the protected storage's state
// machine, the same one the simulator runs) over RESP on loopback. Each
// connection says which client it is with HELLO ... SETNAME or CLIENT
// SETNAME; Exec runs one command at a time, stamped with the run's true
// time.
type storeServer struct {
	name   string
	svc    sim.Service
	now    func() int64
	record func(sim.Event)

	ln    net.Listener
	mu    sync.Mutex // serialises Exec
	wg    sync.WaitGroup
	cmu   sync.Mutex
	conns map[net.Conn]bool
	done  bool
}

func newStoreServer(name string, svc sim.Service, now func() int64, record func(sim.Event)) (*storeServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(Loopback, "0"))
	if err != nil {
		return nil, fmt.Errorf("storage: listen: %w", err)
	}
	s := &storeServer{name: name, svc: svc, now: now, record: record, ln: ln, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *storeServer) addr() string { return s.ln.Addr().String() }

func (s *storeServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.cmu.Lock()
		if s.done {
			s.cmu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.cmu.Unlock()
		go s.serve(c)
	}
}

func (s *storeServer) close() {
	s.cmu.Lock()
	s.done = true
	for c := range s.conns {
		c.Close()
	}
	s.cmu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}

func (s *storeServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.cmu.Lock()
		delete(s.conns, c)
		s.cmu.Unlock()
		c.Close()
	}()
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	client := "?"
	for {
		args, err := readCommand(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				rw := &respWriter{w: w}
				rw.WriteError("ERR protocol: " + err.Error())
				w.Flush()
			}
			return
		}
		if len(args) == 0 {
			continue
		}
		rw := &respWriter{w: w}
		switch strings.ToUpper(args[0]) {
		case "HELLO":
			for i := 1; i+1 < len(args); i++ {
				if strings.EqualFold(args[i], "SETNAME") {
					client = args[i+1]
				}
			}
			rw.WriteLen(6)
			rw.WriteBulk("server")
			rw.WriteBulk("locksim-store")
			rw.WriteBulk("proto")
			rw.WriteInt(2)
			rw.WriteBulk("mode")
			rw.WriteBulk("standalone")
		case "CLIENT":
			if len(args) == 3 && strings.EqualFold(args[1], "SETNAME") {
				client = args[2]
			}
			rw.WriteOK()
		case "PING":
			rw.WriteInline("PONG")
		case "SELECT":
			rw.WriteOK()
		case "QUIT":
			rw.WriteOK()
			w.Flush()
			return
		default:
			s.mu.Lock()
			s.svc.Exec(s.now(), client, args, rw, func(ev sim.Event) {
				if ev.Proc == "" {
					ev.Proc = s.name
				}
				s.record(ev)
			})
			s.mu.Unlock()
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings (or an inline command).
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, nil
	}
	if line[0] != '*' {
		return strings.Fields(line), nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 || n > maxArgs {
		return nil, fmt.Errorf("bad array length %q", line)
	}
	args := make([]string, 0, n)
	for i := 0; i < n; i++ {
		h, err := readLine(r)
		if err != nil {
			return nil, err
		}
		if len(h) == 0 || h[0] != '$' {
			return nil, fmt.Errorf("expected a bulk string, got %q", h)
		}
		size, err := strconv.Atoi(h[1:])
		if err != nil || size < 0 || size > maxArgBytes {
			return nil, fmt.Errorf("bad bulk length %q", h)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args = append(args, string(buf[:size]))
	}
	return args, nil
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) > maxArgBytes {
		return "", fmt.Errorf("line too long")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// respWriter writes RESP2 replies (it implements sim.Reply).
type respWriter struct{ w *bufio.Writer }

func (r *respWriter) WriteOK()             { r.w.WriteString("+OK\r\n") }
func (r *respWriter) WriteInt(n int)       { fmt.Fprintf(r.w, ":%d\r\n", n) }
func (r *respWriter) WriteBulk(s string)   { fmt.Fprintf(r.w, "$%d\r\n%s\r\n", len(s), s) }
func (r *respWriter) WriteNull()           { r.w.WriteString("$-1\r\n") }
func (r *respWriter) WriteLen(n int)       { fmt.Fprintf(r.w, "*%d\r\n", n) }
func (r *respWriter) WriteInline(s string) { fmt.Fprintf(r.w, "+%s\r\n", s) }
func (r *respWriter) WriteError(msg string) {
	fmt.Fprintf(r.w, "-%s\r\n", strings.ReplaceAll(msg, "\r\n", " "))
}
