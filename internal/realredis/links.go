package realredis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"

	"github.com/locksim/locksim/faults"
)

// link is one client→server path through an in-process toxiproxy proxy:
// network faults are toxics on it. Upstream is client→server.
type link struct {
	client, server string
	proxy          *toxiproxy.Proxy
}

// links owns the toxiproxy proxies of a run.
type links struct {
	api   *toxiproxy.ApiServer
	mu    sync.Mutex
	all   []*link
	seq   int
	alive map[string][]string // fault key -> toxic names, per link index "i/name"
}

func newLinks() *links {
	return &links{api: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()), alive: map[string][]string{}}
}

// add starts a proxy on a free loopback port for client→server at
// upstream, and returns the address the client dials.
func (ls *links) add(client, server, upstream string) (string, error) {
	return ls.addNamed(client+"->"+server, client, server, upstream)
}

// addNamed is add with the proxy's name given (several sources that
// count as one end of a link, the three Sentinels, need names of their
// own).
func (ls *links) addNamed(name, client, server, upstream string) (string, error) {
	if err := checkLoopback(upstream); err != nil {
		return "", err
	}
	p := toxiproxy.NewProxy(ls.api, name, net.JoinHostPort(Loopback, "0"), upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("proxy %s->%s: %w", client, server, err)
	}
	ls.mu.Lock()
	ls.all = append(ls.all, &link{client: client, server: server, proxy: p})
	ls.mu.Unlock()
	return p.Listen, nil
}

// apply adds fault f's toxics to every link it separates; it returns a
// key to lift them with, and the number of links. A partition is a
// latency toxic that holds every chunk for hold (MaxHold): removing it at
// the partition's end lets the held data through at once, as a healed
// partition does with TCP retransmits. A delay spike is a windowDelay.
func (ls *links) apply(f faults.Fault, hold time.Duration) (string, int, error) {
	from, to := set(f.From), set(f.To)
	typ, attrs := "latency", map[string]any{"latency": hold.Milliseconds(), "jitter": 0}
	if f.Kind == faults.Delay {
		typ, attrs = windowDelayType, map[string]any{"latency": f.Delay.Milliseconds(), "until": time.Now().Add(f.Duration).UnixNano()}
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.seq++
	key := fmt.Sprintf("f%d", ls.seq)
	n := 0
	for _, l := range ls.all {
		var streams []string
		fwd := from[l.client] && to[l.server] // client→server is From→To
		back := from[l.server] && to[l.client]
		switch {
		case f.OneWay && fwd:
			streams = []string{"upstream"}
		case f.OneWay && back:
			streams = []string{"downstream"}
		case fwd || back:
			streams = []string{"upstream", "downstream"}
		}
		for _, s := range streams {
			name := key + "-" + s
			body, _ := json.Marshal(map[string]any{"name": name, "type": typ, "stream": s, "toxicity": 1.0, "attributes": attrs})
			if _, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
				return key, n, fmt.Errorf("toxic on %s: %w", l.proxy.Name, err)
			}
			ls.alive[key] = append(ls.alive[key], l.proxy.Name+"\x00"+name)
		}
		if len(streams) > 0 {
			n++
		}
	}
	return key, n, nil
}

// lag adds a permanent latency toxic of d to the downstream (server to
// client) of the link named name: a replica's replication stream, which
// flows from the primary it connected to. It is no fault: the heal keeps
// it.
func (ls *links) lag(name string, d time.Duration) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range ls.all {
		if l.proxy.Name != name {
			continue
		}
		body, _ := json.Marshal(map[string]any{"name": "repl-lag", "type": "latency", "stream": "downstream", "toxicity": 1.0,
			"attributes": map[string]any{"latency": d.Milliseconds(), "jitter": 0}})
		_, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(body))
		return err
	}
	return fmt.Errorf("no link %s", name)
}

// lift removes the toxics added under key.
func (ls *links) lift(key string) {
	ls.mu.Lock()
	names := ls.alive[key]
	delete(ls.alive, key)
	byName := map[string]*link{}
	for _, l := range ls.all {
		byName[l.proxy.Name] = l
	}
	ls.mu.Unlock()
	for _, pn := range names {
		proxy, name, _ := bytes.Cut([]byte(pn), []byte{0})
		if l := byName[string(proxy)]; l != nil {
			_ = l.proxy.Toxics.RemoveToxic(context.Background(), string(name))
		}
	}
}

// liftAll removes every toxic (the heal).
func (ls *links) liftAll() {
	ls.mu.Lock()
	keys := make([]string, 0, len(ls.alive))
	for k := range ls.alive {
		keys = append(keys, k)
	}
	ls.mu.Unlock()
	for _, k := range keys {
		ls.lift(k)
	}
}

// close stops every proxy (closing its connections).
func (ls *links) close() {
	ls.mu.Lock()
	all := ls.all
	ls.all = nil
	ls.mu.Unlock()
	for _, l := range all {
		l.proxy.Stop()
	}
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// windowDelay is a toxic that delays by Latency (ms) the chunks that
// arrive before Until (Unix ns) and lets later ones through at once
// (behind the held ones: the stream keeps its order). It is the
// simulator's delay spike: a message sent during the fault's window
// arrives Delay late. (toxiproxy's latency toxic, removed at the end of
// the window, would flush what it holds at once instead.)
type windowDelay struct {
	Latency int64 `json:"latency"`
	Until   int64 `json:"until"`
}

func (t *windowDelay) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if c.Timestamp.UnixNano() < t.Until {
				sleep := time.Duration(t.Latency)*time.Millisecond - time.Since(c.Timestamp)
				if sleep > 0 {
					tm := time.NewTimer(sleep)
					select {
					case <-tm.C:
					case <-stub.Interrupt:
						tm.Stop()
						stub.Output <- c // the heal: deliver now, drop nothing
						return
					}
				}
			}
			stub.Output <- c
		}
	}
}

func init() { toxics.Register(windowDelayType, new(windowDelay)) }

const windowDelayType = "locksim-window-delay"
