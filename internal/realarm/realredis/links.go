package realredis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sort"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/locksim/locksim/faults"
)

// link is one client→server path through an in-process toxiproxy proxy.
// Upstream is client→server. Each direction carries one toxic for the
// whole run (a streamGate, installed when the proxy starts): network
// faults change the gate's state; no toxic is added or removed while data
// flows. (toxiproxy 2.5's RemoveToxic can block for good on a link with
// traffic, as its issues #412 and #558 report: measured here, a healed
// partition left ZooKeeper's election links held to the end of the run.)
type link struct {
	client, server string
	proxy          *toxiproxy.Proxy
	up, down       *linkState
}

// effect is what one fault did to one direction of a link.
type effect struct {
	st    *linkState
	cut   bool    // a partition: one cut to take back
	win   *window // a delay: its window
	fault int     // the fault's number (0: none), whose held chunks gate.go counts
}

// links owns the toxiproxy proxies of a run.
type links struct {
	api   *toxiproxy.ApiServer
	mu    sync.Mutex
	all   []*link
	seq   int
	alive map[string][]effect // fault key -> what it did
}

func newLinks() *links {
	return &links{api: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()), alive: map[string][]effect{}}
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
	l := &link{client: client, server: server, proxy: p, up: newLinkState(), down: newLinkState()}
	for _, g := range []struct {
		stream string
		st     *linkState
	}{{"upstream", l.up}, {"downstream", l.down}} {
		body, _ := json.Marshal(map[string]any{"name": "gate-" + g.stream, "type": streamGateType, "stream": g.stream, "toxicity": 1.0,
			"attributes": map[string]any{"state": g.st.id}})
		if _, err := p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
			l.forget()
			return "", fmt.Errorf("proxy %s->%s: %w", client, server, err)
		}
	}
	if err := p.Start(); err != nil {
		l.forget()
		return "", fmt.Errorf("proxy %s->%s: %w", client, server, err)
	}
	ls.mu.Lock()
	ls.all = append(ls.all, l)
	ls.mu.Unlock()
	return p.Listen, nil
}

// apply lays fault f on every link it separates; it returns a key to
// lift it with, and the number of links. A partition holds every chunk
// on those links until it is lifted, then lets the held data through in
// order, as a healed partition does with TCP retransmits (the simulator
// drops a message held longer than MaxHold, 15 min by default: longer
// than any run). A delay spike delays the chunks sent in its window.
func (ls *links) apply(f faults.Fault) (string, int, error) { return ls.applyAs(0, f) }

// applyAs is apply for fault number fault (1-based): the chunks its cuts
// or window hold are counted as its (linkState.held).
func (ls *links) applyAs(fault int, f faults.Fault) (string, int, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.seq++
	key := fmt.Sprintf("f%d", ls.seq)
	n := 0
	for _, l := range ls.all {
		states := l.separatedBy(f)
		for _, st := range states {
			e := effect{st: st, fault: fault}
			if f.Kind == faults.Delay {
				now := time.Now()
				e.win = &window{latency: f.Delay, from: now, until: now.Add(f.Duration), fault: fault}
			} else {
				e.cut = true
			}
			st.change(func() {
				if e.cut {
					st.cuts++
					if fault > 0 {
						st.cutBy = append(st.cutBy, fault)
					}
				} else {
					st.windows = append(st.windows, e.win)
				}
			})
			ls.alive[key] = append(ls.alive[key], e)
		}
		if len(states) > 0 {
			n++
		}
	}
	return key, n, nil
}

// separates counts the links fault f would lay on.
func (ls *links) separates(f faults.Fault) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	n := 0
	for _, l := range ls.all {
		if len(l.separatedBy(f)) > 0 {
			n++
		}
	}
	return n
}

// separatedBy is the directions of l that fault f separates.
func (l *link) separatedBy(f faults.Fault) []*linkState {
	from, to := set(f.From), set(f.To)
	fwd := from[l.client] && to[l.server] // client→server is From→To
	back := from[l.server] && to[l.client]
	switch {
	case f.OneWay && fwd:
		return []*linkState{l.up}
	case f.OneWay && back:
		return []*linkState{l.down}
	case fwd || back:
		return []*linkState{l.up, l.down}
	}
	return nil
}

// lag delays by d, for the whole run, the downstream (server to client)
// of the link named name: a replica's replication stream, which flows
// from the primary it connected to. It is no fault: the heal keeps it.
func (ls *links) lag(name string, d time.Duration) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range ls.all {
		if l.proxy.Name == name {
			l.down.change(func() { l.down.lag = d })
			return nil
		}
	}
	return fmt.Errorf("no link %s", name)
}

// lift takes back what the fault under key did.
func (ls *links) lift(key string) {
	ls.mu.Lock()
	effects := ls.alive[key]
	delete(ls.alive, key)
	ls.mu.Unlock()
	for _, e := range effects {
		e.st.change(func() {
			if e.cut {
				e.st.cuts--
				if j := slices.Index(e.st.cutBy, e.fault); e.fault > 0 && j >= 0 {
					e.st.cutBy = slices.Delete(e.st.cutBy, j, j+1)
				}
				return
			}
			for i, w := range e.st.windows {
				if w == e.win {
					e.st.windows = append(e.st.windows[:i], e.st.windows[i+1:]...)
					break
				}
			}
		})
	}
}

// liftAll takes back every fault (the heal).
func (ls *links) liftAll() {
	ls.mu.Lock()
	keys := make([]string, 0, len(ls.alive))
	for k := range ls.alive {
		keys = append(keys, k)
	}
	ls.mu.Unlock()
	sort.Strings(keys)
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
		for _, st := range []*linkState{l.up, l.down} {
			st.change(func() { st.cuts, st.windows = 0, nil }) // wake what the gates hold
		}
		l.proxy.Stop()
		l.forget()
	}
}

func (l *link) forget() {
	gates.Delete(l.up.id)
	gates.Delete(l.down.id)
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// isHealed reports whether the world's heal (or its stop) has run: a
// fault laid after it would stay to the end of the run.
func (w *world) isHealed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.healed || w.stopped
}
