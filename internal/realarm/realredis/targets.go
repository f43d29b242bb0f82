package realredis

import "slices"

// The processes and servers a fault names (startFault).

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
