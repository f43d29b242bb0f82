package realredis

import "slices"

// The processes and servers a fault names (startFault), and the
// addresses a run listens on.

// faultProcs returns the client processes named in names.
func (w *world) faultProcs(names []string) []*proc {
	var out []*proc
	for _, p := range w.procs {
		if slices.Contains(names, p.name) {
			out = append(out, p)
		}
	}
	return out
}

func (w *world) faultServers(names []string) []int {
	var out []int
	for i, s := range w.servers {
		if slices.Contains(names, s.name) {
			out = append(out, i)
		}
	}
	return out
}

// listeners lists every address the run listens on.
func (w *world) listeners() []string {
	var out []string
	for _, s := range w.servers {
		out = append(out, s.addr())
	}
	if w.repl != nil {
		for _, g := range w.repl.gateways {
			out = append(out, g.addr())
		}
		for _, sp := range w.repl.sentinels {
			out = append(out, sp.addr())
		}
	}
	if w.clus != nil {
		out = append(out, w.clus.listeners()...)
	}
	if w.store != nil {
		out = append(out, w.store.addr())
	}
	out = append(out, w.coordListeners()...)
	if w.links != nil {
		w.links.mu.Lock()
		for _, l := range w.links.all {
			out = append(out, l.proxy.Listen)
		}
		w.links.mu.Unlock()
	}
	return out
}
