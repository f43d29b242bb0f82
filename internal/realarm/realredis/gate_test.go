package realredis

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
)

// echoLines serves ln: each connection's lines go to got; close, when it
// fires, closes every connection accepted so far.
func echoLines(t *testing.T, ln net.Listener, got chan<- string, conns chan<- net.Conn) {
	t.Helper()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go func() {
				r := bufio.NewReader(c)
				for {
					s, err := r.ReadString('\n')
					if err != nil {
						return
					}
					got <- s
				}
			}()
		}
	}()
}

func recvN(t *testing.T, ch <-chan string, n int, what string) []string {
	t.Helper()
	var out []string
	deadline := time.After(3 * time.Second)
	for len(out) < n {
		select {
		case s := <-ch:
			out = append(out, s)
		case <-deadline:
			t.Fatalf("%s: got %q, want %d lines", what, out, n)
		}
	}
	return out
}

// TestPartitionHeals: a partition holds a link's data both ways and lets
// it through, in order, when lifted; a delay window delays what is sent
// in it only.
func TestPartitionHeals(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvGot, conns := make(chan string, 64), make(chan net.Conn, 8)
	echoLines(t, ln, srvGot, conns)
	ls := newLinks()
	defer ls.close()
	addr, err := ls.add("a", "b", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cliGot := make(chan string, 64)
	go func() {
		r := bufio.NewReader(c)
		for {
			s, err := r.ReadString('\n')
			if err != nil {
				return
			}
			cliGot <- s
		}
	}()
	c.Write([]byte("before\n"))
	recvN(t, srvGot, 1, "before the cut")
	sc := <-conns
	for round := 0; round < 3; round++ {
		key, n, err := ls.apply(faults.Fault{Kind: faults.Partition, From: []string{"a"}, To: []string{"b"}})
		if err != nil || n != 1 {
			t.Fatalf("apply: %d links, %v", n, err)
		}
		for i := 0; i < 5; i++ {
			c.Write([]byte("up\n"))
			sc.Write([]byte("down\n"))
		}
		select {
		case s := <-srvGot:
			t.Fatalf("round %d: %q crossed the partition", round, s)
		case s := <-cliGot:
			t.Fatalf("round %d: %q crossed the partition", round, s)
		case <-time.After(200 * time.Millisecond):
		}
		ls.lift(key)
		recvN(t, srvGot, 5, "held upstream after the heal")
		recvN(t, cliGot, 5, "held downstream after the heal")
	}
}

// TestPartitionHealsAfterAPeerLeft: a connection whose server closed
// while a partition held its data must not keep the heal from reaching
// the other links. (toxiproxy's own RemoveToxic blocked for good here:
// the latency toxic it interrupts hands its held chunk to a writer that
// has exited, while RemoveToxic holds the proxy's lock; ZooKeeper
// members, which close connections their peers opened, lost their
// election links for the rest of the run.)
func TestPartitionHealsAfterAPeerLeft(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvGot, conns := make(chan string, 256), make(chan net.Conn, 64)
	echoLines(t, ln, srvGot, conns)
	ls := newLinks()
	defer ls.close()
	addr, err := ls.add("a", "b", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		var clients []net.Conn
		for i := 0; i < 4; i++ {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			clients = append(clients, c)
			c.Write([]byte("hello\n"))
		}
		recvN(t, srvGot, 4, "before the cut")
		var servers []net.Conn
		for range clients {
			servers = append(servers, <-conns)
		}
		key, _, err := ls.apply(faults.Fault{Kind: faults.Partition, From: []string{"a"}, To: []string{"b"}})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			for _, c := range clients {
				c.Write([]byte("held\n"))
			}
			for _, s := range servers {
				s.Write([]byte("held\n"))
			}
		}
		for _, s := range servers[:2] { // two peers leave during the cut
			s.Close()
		}
		time.Sleep(100 * time.Millisecond)
		lifted := make(chan struct{})
		go func() { ls.lift(key); close(lifted) }()
		select {
		case <-lifted:
		case <-time.After(3 * time.Second):
			t.Fatalf("round %d: the heal did not return in 3 s", round)
		}
		// The connections that stayed get what was held, and a new one passes data.
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("new\n"))
		got := recvN(t, srvGot, 41, "after the heal")
		if got[len(got)-1] == "" {
			t.Fatal("empty line")
		}
		<-conns
		for _, s := range servers[2:] {
			s.Close()
		}
	}
}

// TestSeparates: a fault lays on the links between its sides only, each
// direction as its one-way flag says; one between two clients lays on
// none (the real arm then lists it as not injected).
func TestSeparates(t *testing.T) {
	ls := newLinks()
	defer ls.close()
	for _, cs := range [][2]string{{"c0", "n0"}, {"c1", "n0"}, {"c0", "store"}} {
		if _, err := ls.add(cs[0], cs[1], "127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		f    faults.Fault
		want int
	}{
		{faults.Fault{Kind: faults.Partition, From: []string{"c0"}, To: []string{"n0"}}, 1},
		{faults.Fault{Kind: faults.Partition, From: []string{"n0"}, To: []string{"c0", "c1"}}, 2},
		{faults.Fault{Kind: faults.Delay, From: []string{"c0"}, To: []string{"n0", "store"}, OneWay: true}, 2},
		{faults.Fault{Kind: faults.Partition, From: []string{"c0"}, To: []string{"c1"}}, 0},
	} {
		if got := ls.separates(c.f); got != c.want {
			t.Errorf("%s: separates %d links, want %d", c.f, got, c.want)
		}
	}
	l := ls.all[0]
	if got := l.separatedBy(faults.Fault{Kind: faults.Delay, From: []string{"n0"}, To: []string{"c0"}, OneWay: true}); len(got) != 1 || got[0] != l.down {
		t.Errorf("a one-way delay n0→c0 lays on %d directions of c0->n0, want its downstream only", len(got))
	}
}

// TestDelayWindowFrom: a delay window delays what is sent in it, not what
// was sent before it opened.
func TestDelayWindowFrom(t *testing.T) {
	st := newLinkState()
	defer gates.Delete(st.id)
	now := time.Now()
	st.change(func() {
		st.windows = append(st.windows, &window{latency: time.Hour, from: now.Add(-2 * time.Minute), until: now.Add(-time.Minute)})
	})
	if cut, wait, _ := st.hold(now.Add(-3 * time.Minute)); cut || wait > 0 {
		t.Errorf("a chunk sent before the window waits %v (cut %v)", wait, cut)
	}
	if _, wait, _ := st.hold(now.Add(-90 * time.Second)); wait < 58*time.Minute {
		t.Errorf("a chunk sent in the window waits %v, want about an hour less 90 s", wait)
	}
	if _, wait, _ := st.hold(now.Add(-30 * time.Second)); wait > 0 {
		t.Errorf("a chunk sent after the window waits %v", wait)
	}
}
