package realcoord

import (
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// TestUnattributedRefusedWhileCut: a connection the peer proxy cannot
// place (no member owns it: here no member process exists) passes
// through while no link into its member is cut, is refused while one is,
// and an open one is severed when the cut starts: a cut never leaks
// through a connection the proxy cannot attribute.
func TestUnattributedRefusedWhileCut(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	e := &Ensemble{Members: []*Member{{Name: "zk0", IP: "127.0.0.1"}, {Name: "zk1", IP: "127.0.0.1"}}}
	e.Members[1].Peer = up.Addr().(*net.TCPAddr).Port
	e.Members[0].Peer = e.Members[1].Peer
	if err := e.startPeerProxies(); err != nil {
		t.Fatal(err)
	}
	defer e.peers.close()
	proxy := net.JoinHostPort("127.0.0.1", strconv.Itoa(e.Members[1].PeerProxy))
	echo := func() bool {
		c, err := net.DialTimeout("tcp", proxy, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("x")); err != nil {
			return false
		}
		b := make([]byte, 1)
		_, err = io.ReadFull(c, b)
		return err == nil
	}
	if !echo() {
		t.Fatal("no cut: an unattributed connection did not get through")
	}
	open, err := net.DialTimeout("tcp", proxy, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if _, err := open.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(open, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	heal := e.peers.cutLinks([][2]int{{0, 1}})
	if echo() {
		t.Error("zk0-zk1 cut: an unattributed connection into zk1 got through")
	}
	_ = open.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = open.Write([]byte("z"))
	if _, err := io.ReadFull(open, make([]byte, 1)); err == nil {
		t.Error("zk0-zk1 cut: an unattributed connection opened before the cut still carries data")
	}
	heal()
	if !echo() {
		t.Error("healed: an unattributed connection did not get through")
	}
	e.peers.mu.Lock()
	st := e.peers.stats
	e.peers.mu.Unlock()
	if st.Unattributed < 3 || st.Refused < 1 || st.Severed < 1 {
		t.Errorf("stats %+v: want the unattributed connections counted, one refused and one severed", st)
	}
}
