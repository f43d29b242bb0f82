package run

import (
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/sim"
)

// TestMinimalOfRealRuns: the minimal history of a real simulated run
// holds at most MaxMinimalEvents events, names the violation's two
// holders, and the nodes it says each locked are the nodes the key log
// shows that holder's lease value set on during its acquisition.
func TestMinimalOfRealRuns(t *testing.T) {
	for _, tc := range []struct {
		scenario, lock string
		seed           uint64
		nodes          map[string][]string // the holders and the nodes each locked
		words          []string            // the history says these
	}{
		// Redlock under a node clock jump: c0 holds n0..n2 (c1 is cut
		// from n0, n1), n2's clock jumps, c1 takes n2..n4.
		{"clock-jump", "redlock", 1, map[string][]string{"c0": {"n0", "n1", "n2"}, "c1": {"n2", "n3", "n4"}},
			[]string{"n2 clock jumps +20s", "n0, n1, n2 (3 of 5 nodes)", "both hold the lock", "expired early: n2's clock jumped"}},
		// set-nx-cad: c0 pauses after its check, its key on n0 expires,
		// c2 takes it, c0's write lands stale.
		{"pause-after-check", "set-nx-cad", 1, map[string][]string{"c0": {"n0"}, "c2": {"n0"}},
			[]string{"c0 paused for 4.5s at after-check", "a stale write, accepted", "lost update", "expired (its TTL, 3s, ran out); c2 took n0"}},
		// setnx-expire sets its key without a TTL and gives it one with a
		// second command: no TTL is told negative (the story once said
		// "a TTL of -9.47s").
		{"clock-jump", "setnx-expire", 1, nil, nil},
		// Redsync retries with one value: c1 sets it on n3, n4, deletes
		// it, sets it again; its key there is the last set before its
		// reply (the timeline once drew it only before the hold, and the
		// history said "c1's keys on n3, n4 deleted by c1 itself").
		{"clock-jump", "redsync", 2, map[string][]string{"c1": {"n2", "n3", "n4"}, "c0": {"n0", "n1", "n2"}},
			[]string{"n2 clock jumps +16s", "expired early: n2's clock jumped +16s; c0 took n2"}},
		// c0 pauses after its check; c1 acquires, writes, releases and
		// acquires again before c0's stale write: c1's holder is the
		// acquisition its write was made under (the history once listed
		// the write before the acquisition it named).
		{"pause-after-check", "primary-replica", 1, map[string][]string{"c0": {"n0"}, "c1": {"n0"}},
			[]string{"c0 paused for 4.5s at after-check", "c0's key on n0 expired (its TTL, 3s, ran out)", "lost update"}},
		// Redlock: c0 pauses 15 s after its check, its keys expire at
		// 15.05 s, c1 first takes them at 15.12 s (an attempt it gives
		// up; the hold drawn is its acquisition of 20.1 s): the line of
		// the expiry says when c1 took them, which it once left to read
		// as the expiry's own instant.
		{"pause-after-check", "redlock", 1, map[string][]string{"c0": {"n0", "n1", "n2", "n3", "n4"}, "c1": {"n0", "n1", "n2", "n3", "n4"}},
			[]string{"c0's keys on n0, n1, n2, n3, n4 expired (its TTL, 10s, ran out); c1 took n0, n1, n2, n3, n4 from 15.12s"}},
		// A node crash without persistence takes c0's key on n2 with it.
		{"restart-no-persistence", "redlock", 1, map[string][]string{"c0": {"n0", "n1", "n2"}, "c1": {"n2", "n3", "n4"}},
			[]string{"n2 crashes (persistence none), restarts at 50.1s", "lost when n2 crashed (persistence none)"}},
		// A failover: the primary n0 crashes (and is named), n1 is promoted.
		{"failover", "set-nx-cad", 1, map[string][]string{"c1": {"n0"}, "c0": {"n1"}},
			[]string{"n0, the primary, crashes", "the promoted n1 never had c1's key"}},
	} {
		t.Run(tc.scenario+"/"+tc.lock, func(t *testing.T) {
			job, err := Spec{Scenario: tc.scenario, Lock: tc.lock, Seed: tc.seed}.Build()
			if err != nil {
				t.Fatal(err)
			}
			j, err := job.Run(sim.TestBubble(t))
			if err != nil {
				t.Fatal(err)
			}
			m := Minimal(j)
			if m == nil {
				t.Fatalf("no minimal history (verdict %s)", j.Check.Verdict)
			}
			var text []string
			for _, e := range m.Events {
				text = append(text, e.Who+" "+e.What)
			}
			all := strings.Join(text, "\n")
			if n := len(m.Events); n == 0 || n > checker.MaxMinimalEvents {
				t.Errorf("%d events, want 1..%d:\n%s", n, checker.MaxMinimalEvents, all)
			}
			if strings.Contains(all, "TTL, -") || strings.Contains(all, "TTL of -") {
				t.Errorf("a negative TTL:\n%s", all)
			}
			if tc.nodes == nil {
				return
			}
			if len(m.Holders) != len(tc.nodes) {
				t.Fatalf("holders %+v, want %v", m.Holders, tc.nodes)
			}
			log := KeyLog(j.Result, j.Job.Config)
			for _, hd := range m.Holders {
				if !slices.Contains(j.Check.First.Clients, hd.Client) {
					t.Errorf("holder %s is not among the violation's clients %v", hd.Client, j.Check.First.Clients)
				}
				if !slices.Equal(hd.Nodes, tc.nodes[hd.Client]) {
					t.Errorf("%s locked %v, want %v", hd.Client, hd.Nodes, tc.nodes[hd.Client])
				}
				// Each node named: the holder's value set there, by the
				// holder, between its call and its reply, per the key log;
				// and the acquisition is in the history.
				value := ""
				for _, e := range j.History.Events {
					if e.T == hd.OK && e.Proc == hd.Client && e.Op == event.OpAcquire && e.Kind == event.KindOK {
						value = e.Detail
					}
				}
				if value == "" {
					t.Errorf("%s's acquisition at %d is not in the history", hd.Client, hd.OK)
				}
				for _, n := range hd.Nodes {
					found := false
					for _, c := range log.Changes {
						found = found || (c.Node == n && c.Peer == hd.Client && c.T >= hd.Call && c.T <= hd.OK && strings.Contains(c.Now, value))
					}
					if !found {
						t.Errorf("%s on %s: the key log shows no set of its value %s there", hd.Client, n, value)
					}
				}
				if !strings.Contains(all, hd.Client+" acquired the lock on "+strings.Join(hd.Nodes, ", ")) {
					t.Errorf("the history does not say %s acquired on %v:\n%s", hd.Client, hd.Nodes, all)
				}
			}
			for _, w := range tc.words {
				if !strings.Contains(all, w) {
					t.Errorf("the history lacks %q:\n%s", w, all)
				}
			}
			if !slices.IsSortedFunc(m.Events, func(a, b checker.MinimalEvent) int { return int(a.T - b.T) }) {
				t.Errorf("events out of time order:\n%s", all)
			}
			for _, s := range m.Spans {
				if s.Lane != "" && !slices.Contains(m.Lanes, s.Lane) || s.From < m.From || s.To > m.To || s.To < s.From {
					t.Errorf("span %+v outside lanes %v or window %d..%d", s, m.Lanes, m.From, m.To)
				}
				if !s.Kind.Known() {
					t.Errorf("span %+v of unknown kind", s)
				}
			}
			checkCausal(t, j, m, log, all)
			checkCrashes(t, j, m)
			t.Logf("%s\nlanes %v", all, m.Lanes)
		})
	}
}

// checkCausal: a holder's writes listed come after its acquisition listed
// and are made under it (no acquisition of the same client between); and
// each node a holder locked shows its key from the set that counted (the
// last set of its value there before its acquisition returned).
func checkCausal(t *testing.T, j *Judged, m *checker.MinimalHistory, log checker.KeyLog, all string) {
	t.Helper()
	for _, hd := range m.Holders {
		for _, e := range m.Events {
			if e.Who != hd.Client || !strings.HasPrefix(e.What, "wrote ") {
				continue
			}
			latest := int64(-1)
			for _, a := range j.History.Events {
				if a.T <= e.T && a.Proc == hd.Client && a.Op == event.OpAcquire && a.Kind == event.KindOK {
					latest = a.T
				}
			}
			if e.T < hd.OK || latest != hd.OK {
				t.Errorf("%s's write at %d is listed with its acquisition at %d, but was made under the one at %d:\n%s", hd.Client, e.T, hd.OK, latest, all)
			}
		}
		value := ""
		for _, e := range j.History.Events {
			if e.T == hd.OK && e.Proc == hd.Client && e.Op == event.OpAcquire && e.Kind == event.KindOK {
				value = e.Detail
			}
		}
		for _, n := range hd.Nodes {
			set := int64(-1)
			for _, c := range log.Changes {
				if c.Node == n && c.Peer == hd.Client && c.T >= hd.Call && c.T <= hd.OK && c.Exists && strings.Contains(c.Now, value) {
					set = c.T
				}
			}
			found := false
			for _, s := range m.Spans {
				found = found || s.Kind == checker.SpanKey && s.Lane == n && s.Who == hd.Client && s.From == max(set, m.From)
			}
			if !found {
				t.Errorf("%s's key on %s: no key span from its set at %d, the last before its reply at %d; spans %+v", hd.Client, n, set, hd.OK, m.Spans)
			}
		}
	}
}

// checkCrashes: every node crash that kept a drawn node down in the
// window is drawn on its lane, from the crash to the restart.
func checkCrashes(t *testing.T, j *Judged, m *checker.MinimalHistory) {
	t.Helper()
	for i, e := range j.History.Events {
		if e.Kind != event.KindCrash || !slices.Contains(m.Lanes, e.Proc) || e.T > m.To {
			continue
		}
		up := m.To
		for _, r := range j.History.Events[i+1:] {
			if r.Proc == e.Proc && r.Kind == event.KindRestart {
				up = min(r.T, m.To)
				break
			}
		}
		if up < m.From {
			continue
		}
		found := false
		for _, s := range m.Spans {
			found = found || s.Kind == checker.SpanCrash && s.Lane == e.Proc && s.From == max(e.T, m.From) && s.To == up && strings.Contains(s.Label, "crashed")
		}
		if !found {
			t.Errorf("%s's crash at %d (up at %d) is not drawn on its lane; spans %+v", e.Proc, e.T, up, m.Spans)
		}
	}
}
