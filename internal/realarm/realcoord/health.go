package realcoord

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// writeZKConfigs writes each ZooKeeper member's zoo.cfg, myid and logging
// config (each names the others by the address peer gives, when set). tickTime is a third of the session timeout (ZooKeeper accepts
// timeouts of 2 to 20 ticks), at most 2 s (ZooKeeper's default).
func (e *Ensemble) writeZKConfigs(peer PeerFunc) error {
	tick := min(e.SessionTimeout/3, 2*time.Second)
	tick = max(tick, 20*time.Millisecond)
	for _, m := range e.Members {
		lines := []string{
			"tickTime=" + strconv.FormatInt(tick.Milliseconds(), 10),
			"initLimit=" + strconv.Itoa(initLimit), "syncLimit=10",
			"dataDir=" + filepath.Join(m.Dir, "data"),
			"clientPortAddress=" + m.IP,
			"clientPort=" + strconv.Itoa(m.Client),
			"maxSessionTimeout=" + strconv.FormatInt(20*tick.Milliseconds(), 10),
			"4lw.commands.whitelist=srvr,ruok",
			"admin.enableServer=false",
			"standaloneEnabled=false",
			"preAllocSize=1024",
		}
		for _, o := range e.Members {
			q, el := net.JoinHostPort(o.IP, strconv.Itoa(o.Peer)), net.JoinHostPort(o.IP, strconv.Itoa(o.Election))
			if peer != nil && o != m {
				// The quorum link through a relay that waits for the
				// port as ZooKeeper's follower does (zkrelay.go).
				r, err := newRelay(o.IP, q, time.Duration(initLimit)*tick)
				if err != nil {
					return err
				}
				e.relays = append(e.relays, r)
				if q, err = peer(m.Name, o.Name, r.Addr()); err != nil {
					return err
				}
				if el, err = peer(m.Name, o.Name, el); err != nil {
					return err
				}
			}
			// server.N=host:quorum-port:election-port (one host for both).
			qh, qp, err := net.SplitHostPort(q)
			if err != nil {
				return err
			}
			eh, ep, err := net.SplitHostPort(el)
			if err != nil || eh != qh {
				return fmt.Errorf("zookeeper %s: quorum %s and election %s addresses of %s must share a host", m.Name, q, el, o.Name)
			}
			lines = append(lines, fmt.Sprintf("server.%d=%s:%s:%s", o.ID, qh, qp, ep))
		}
		if err := os.MkdirAll(filepath.Join(m.Dir, "data"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(m.Dir, "zoo.cfg"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(m.Dir, "data", "myid"), []byte(strconv.Itoa(m.ID)+"\n"), 0o644); err != nil {
			return err
		}
		// ZooKeeper 3.8 logs with logback: warnings only, to stdout (server.log).
		lb := `<configuration><appender name="C" class="ch.qos.logback.core.ConsoleAppender"><encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{0} - %msg%n</pattern></encoder></appender><root level="WARN"><appender-ref ref="C"/></root></configuration>`
		if err := os.WriteFile(filepath.Join(m.Dir, "logback.xml"), []byte(lb), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// initLimit is ZooKeeper's initLimit in ticks: how long a leader waits
// for a quorum of followers, and a follower may take to connect and sync.
const initLimit = 50

// fourLetter sends a ZooKeeper four-letter command to m.
func fourLetter(m *Member, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", m.Addr(), 500*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(bufio.NewReader(c))
	return string(b), err
}

// etcdStatus is the member's own status (the gRPC gateway's JSON).
func etcdStatus(m *Member) (member, leader string, err error) {
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Post("http://"+m.Addr()+"/v3/maintenance/status", "application/json", bytes.NewReader([]byte("{}")))
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	var st struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("status %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return "", "", err
	}
	return st.Header.MemberID, st.Leader, nil
}

// healthy reports whether m serves clients (as part of a quorum).
func (e *Ensemble) healthy(m *Member) bool {
	switch e.Kind {
	case ZooKeeper:
		s, err := fourLetter(m, "srvr")
		return err == nil && strings.Contains(s, "Mode: ")
	default:
		cl := http.Client{Timeout: time.Second}
		resp, err := cl.Get("http://" + m.Addr() + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"true"`)
	}
}

// isLeader reports whether m says it leads.
func (e *Ensemble) isLeader(m *Member) bool {
	m.mu.Lock()
	up := m.cmd != nil && !m.stopped
	m.mu.Unlock()
	if !up {
		return false
	}
	switch e.Kind {
	case ZooKeeper:
		s, err := fourLetter(m, "srvr")
		return err == nil && strings.Contains(s, "Mode: leader")
	default:
		id, leader, err := etcdStatus(m)
		return err == nil && id != "" && id == leader
	}
}

// Modes says what each member is now, as it answers: "zk0 leader, zk1
// follower, zk2 not serving" (ZooKeeper: srvr's Mode, or "not serving"
// while it is in an election or has no quorum; etcd: leader, follower or
// "not serving" by its health), "down" when its process is not running,
// "paused" when SIGSTOPped. For a trace's detail and an error: one
// member not serving tells nothing of why, the others' modes do.
func (e *Ensemble) Modes() string {
	var out []string
	for _, m := range e.Members {
		m.mu.Lock()
		up, stopped := m.cmd != nil, m.stopped
		m.mu.Unlock()
		mode := "down"
		switch {
		case !up:
		case stopped:
			mode = "paused"
		case e.Kind == ZooKeeper:
			mode = "not serving"
			if s, err := fourLetter(m, "srvr"); err != nil {
				mode = "not answering"
			} else if i := strings.Index(s, "Mode: "); i >= 0 {
				mode = strings.TrimSpace(strings.SplitN(s[i+len("Mode: "):], "\n", 2)[0])
			}
		case e.isLeader(m):
			mode = "leader"
		case e.healthy(m):
			mode = "follower"
		default:
			mode = "not serving"
		}
		out = append(out, m.Name+" "+mode)
	}
	return strings.Join(out, ", ")
}
