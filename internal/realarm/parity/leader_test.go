package parity

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// TestLeaderTargetSim: the simulator resolves a fault's "leader" target at
// the fault's start to the member that leads then (the last zk-leader
// event before it), and cuts it from the others: the fault event's detail
// is the resolved fault.
func TestLeaderTargetSim(t *testing.T) {
	job, err := run.Spec{Scenario: "leader-partition", Lock: "zk-fencing", Seed: 1}.Build()
	if err != nil {
		t.Fatal(err)
	}
	var trace bytes.Buffer
	job.Config.Trace = &trace
	j, err := job.Run(sim.TestBubble(t))
	if err != nil {
		t.Fatal(err)
	}
	leader, faults := "", 0
	leaders := map[string]bool{}
	for _, line := range strings.Split(trace.String(), "\n") {
		var ev struct {
			P      string `json:"p"`
			K      string `json:"k"`
			Detail string `json:"detail"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch ev.K {
		case "zk-leader":
			leader = ev.P
		case "fault":
			faults++
			if leader == "" {
				t.Fatalf("fault %q before any member led", ev.Detail)
			}
			if strings.Contains(ev.Detail, "leader") || !strings.Contains(ev.Detail, " "+leader+"<->") || strings.Contains(ev.Detail, ","+leader) {
				t.Errorf("fault %q: want the leader %s cut from the others", ev.Detail, leader)
			}
			leaders[leader] = true
		}
	}
	if faults != 2 {
		t.Fatalf("%d fault events, want 2", faults)
	}
	if len(leaders) < 2 {
		t.Errorf("every partition cut %v: the cut leader should have been replaced by another", leaders)
	}
	if v := j.Check.Verdict; v != checker.VerdictSafe {
		t.Errorf("zk-fencing under leader partitions: %s, want safe", v)
	}
}

// A leader fault due while no member leads (here at t=0, before the first
// election) names nobody: it is not injected, the run's fault count leaves
// it out, and its effect says why.
func TestLeaderFaultWithoutLeaderIsNotInjected(t *testing.T) {
	job, err := run.Spec{Scenario: "leader-partition", Lock: "zk-fencing", Seed: 1}.Build()
	if err != nil {
		t.Fatal(err)
	}
	early := job.Config.Faults[0]
	early.Start = 0
	job.Config.Faults = append([]faults.Fault{early}, job.Config.Faults...)
	j, err := job.Run(sim.TestBubble(t))
	if err != nil {
		t.Fatal(err)
	}
	es := run.Effects(j.History, j.Result, j.Job.Config)
	if es[0].Injected || !strings.Contains(es[0].Why, "no member led") {
		t.Errorf("the fault at t=0: %+v, want not injected, the reason naming the missing leader", es[0])
	}
	if got, want := j.Result.Stats.Faults, len(job.Config.Faults)-1; got != want {
		t.Errorf("%d faults injected, want %d (all but the one at t=0)", got, want)
	}
}
