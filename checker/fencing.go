package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/locksim/locksim/event"
)

// StaleReport is what fencing is for, made visible: how often a client
// acted on a dead lease, and what the storage did about it.
type StaleReport struct {
	// Sections counts critical sections (acquisitions) in which the holder
	// read or wrote the protected resource while it no longer held the
	// lock by true time: its call, or the storage's handling of it (a
	// delayed request), fell outside every belief interval of its own
	// (Holds) after the acquisition.
	Sections int `json:"stale_sections"`
	// Accepted counts the stale sections in which the storage accepted a
	// write that arrived after the lease ended (what fencing prevents).
	Accepted int `json:"stale_accepted"`
	// FencedRejections counts the operations the storage refused (its own
	// record: reads and writes fenced by token, owner or version).
	FencedRejections int `json:"fenced_rejections"`
	// First is the first stale section: the client and when it acted.
	FirstClient string `json:"first_client,omitempty"`
	FirstT      int64  `json:"first_ns,omitempty"`
}

// Stale counts stale sections and fenced rejections in O(n log n). Designs
// without a lock (no acquisitions) have no stale sections.
func Stale(h History, holds []Hold) StaleReport {
	var r StaleReport
	byProc := map[string][]Hold{}
	for _, hd := range holds {
		byProc[hd.Proc] = append(byProc[hd.Proc], hd)
	}
	for _, hs := range byProc {
		slices.SortFunc(hs, holdCmp)
	}
	covered := func(c string, t int64) bool {
		hs := byProc[c]
		// the last hold starting at or before t
		i, _ := slices.BinarySearchFunc(hs, t+1, func(hd Hold, t int64) int {
			if hd.Start < t {
				return -1
			}
			return 1
		})
		return i > 0 && t < hs[i-1].End
	}
	lastOK := map[string]int64{} // client -> its latest acquire ok
	type section struct {
		c  string
		at int64
	}
	stale := map[section]bool{}
	accepted := map[section]bool{}
	mark := func(c string, t int64, acceptedWrite bool) {
		ok, has := lastOK[c]
		if !has || covered(c, t) {
			return
		}
		s := section{c, ok}
		if !stale[s] {
			stale[s] = true
			r.Sections++
			if r.FirstClient == "" {
				r.FirstClient, r.FirstT = c, t
			}
		}
		if acceptedWrite && !accepted[s] {
			accepted[s] = true
			r.Accepted++
		}
	}
	for i := range h.Events {
		e := &h.Events[i]
		switch {
		case e.Op == event.OpAcquire && e.Kind == event.KindOK:
			lastOK[e.Proc] = e.T
		case (e.Op == event.OpRead || e.Op == event.OpWrite) && e.Kind == event.KindCall:
			mark(e.Proc, e.T, false)
		case e.Kind == event.KindStoreRead || e.Kind == event.KindStoreWrite:
			if e.Result == event.ResultFenced {
				r.FencedRejections++
			}
			mark(e.Peer, e.T, e.Kind == event.KindStoreWrite && e.Result == event.ResultOK)
		}
	}
	return r
}

func (r StaleReport) String() string {
	s := fmt.Sprintf("%d stale sections (a holder touched the resource after its lease ended", r.Sections)
	if r.Sections > 0 {
		s += fmt.Sprintf(", first %s at t=%v", r.FirstClient, time.Duration(r.FirstT))
	}
	s += fmt.Sprintf("), %d of them with a stale write the storage accepted; the storage refused %d operations", r.Accepted, r.FencedRejections)
	return s
}
