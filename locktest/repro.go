package locktest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
)

// Describe renders an outcome as the failure message: what broke, how it
// was found (the search's -rapid.seed), the shrunk schedule with the
// run's seed and the nodes' persistence, a repro statement that replays
// exactly that run and fails the test while it is not safe (ReproCall),
// and the files to look
// at (it writes porcupine's HTML of the resource history, faults
// annotated).
func Describe(t *testing.T, out Outcome) string {
	var b strings.Builder
	switch out.Verdict() {
	case checker.VerdictLiveness:
		b.WriteString("locksim: the lock failed liveness (after the faults healed, clients could not get it)\n")
	default:
		fmt.Fprintf(&b, "locksim: the lock is %s\n", out.Verdict())
	}
	for _, r := range out.Check.Reasons {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	if v := out.Check.First; v != nil && v.Cause != "" {
		fmt.Fprintf(&b, "  cause: %s\n", v.Cause)
	}
	if out.Tried > 0 {
		shrunk := ", then shrunk"
		if out.Verdict() != checker.VerdictUnsafe {
			shrunk = " (a liveness failure is not shrunk)"
		}
		search := "the search"
		if out.SearchSeed != 0 {
			search = fmt.Sprintf("the search with -rapid.seed=%d (Options.Seed %d)", out.SearchSeed, out.SearchSeed)
		}
		fmt.Fprintf(&b, "  found by random schedule %d (%d faults, %d clients) of %s%s\n", out.Tried, out.FromFaults, out.FromClients, search, shrunk)
	}
	fmt.Fprintf(&b, "  counterexample: seed %d, %d clients, %d faults:\n", out.Seed, out.Clients, len(out.Faults))
	for _, f := range out.Faults {
		fmt.Fprintf(&b, "    %s\n", f)
	}
	var nodes []string
	for i, p := range out.Persistence {
		nodes = append(nodes, fmt.Sprintf("n%d %s", i, p))
	}
	fmt.Fprintf(&b, "  persistence: %s\n", strings.Join(nodes, ", "))
	for _, f := range out.Unfired {
		fmt.Fprintf(&b, "  never fired: %s (the client never reached %q while it was armed; not injected)\n", f, f.At)
	}
	for _, e := range out.Effects {
		if e.Injected && !e.Reached {
			fmt.Fprintf(&b, "  did not reach the lock: %s (%s)\n", e.Fault, e.Why)
		}
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	fmt.Fprintf(&b, "  repro (fails the test while the lock is %s): %s\n", out.Verdict(), ReproCall(out))
	if out.FailFile != "" {
		fmt.Fprintf(&b, "  fail file (the next go test replays its unshrunk case first): %s\n", out.FailFile)
	}
	if out.Check.Linearizability.Info != nil {
		dir := filepath.Join(os.TempDir(), "locksim-"+strings.NewReplacer("/", "_", " ", "_", "#", "_").Replace(t.Name()))
		path := filepath.Join(dir, "porcupine.html")
		if err := os.MkdirAll(dir, 0o755); err == nil && checker.WriteVisualization(path, out.history, out.Check) == nil {
			fmt.Fprintf(&b, "  resource history (porcupine, faults annotated): %s\n", path)
		}
	}
	return b.String()
}

// ReproCall is the Go statement that replays out and fails the test
// while its verdict is not safe: locktest.RequireSafe around the
// locktest.Run (or locktest.Scenario) call that runs it again, with
// yourFactory for the lock's factory.
func ReproCall(out Outcome) string {
	if out.Scenario != "" {
		return fmt.Sprintf("locktest.RequireSafe(t, locktest.Scenario(t, %q, yourFactory, %s, %d))", out.Scenario, GoOptions(out.Options), out.Seed)
	}
	return fmt.Sprintf("locktest.RequireSafe(t, locktest.Run(t, yourFactory, %s, %d, %s))", GoOptions(out.Options), out.Seed, GoSchedule(out.Faults))
}

// GoOptions prints o as a Go composite literal for a Run line: the fields
// that decide a run (Topology, Clients, TTL) and every other field of the
// world that differs from what the defaults make of them (the search's
// fields, Kinds to Checks, do not change a Run).
func GoOptions(o Options) string {
	o = o.withDefaults()
	d := Options{Topology: o.Topology, TTL: o.TTL, Fencing: o.Fencing}.withDefaults()
	fields := []string{"Topology: " + topologyConst[o.Topology], fmt.Sprintf("Clients: %d", o.Clients), "TTL: " + goDuration(o.TTL)}
	add := func(set bool, f string, a ...any) {
		if set {
			fields = append(fields, fmt.Sprintf(f, a...))
		}
	}
	add(o.Nodes != 0, "Nodes: %d", o.Nodes)
	add(o.Fencing != "", "Fencing: %q", o.Fencing)
	add(o.Persistence != "", "Persistence: %q", o.Persistence)
	add(o.Duration != d.Duration, "Duration: %s", goDuration(o.Duration))
	add(o.Liveness != d.Liveness, "Liveness: %s", goDuration(o.Liveness))
	add(o.ReplLag != 0, "ReplLag: %s", goDuration(o.ReplLag))
	add(o.DownAfter != 0, "DownAfter: %s", goDuration(o.DownAfter))
	add(o.HoldMin != d.HoldMin || o.HoldMax != d.HoldMax, "HoldMin: %s, HoldMax: %s", goDuration(o.HoldMin), goDuration(o.HoldMax))
	add(o.Workload != d.Workload, "Workload: locktest.%s", workloadConst[o.Workload])
	add(o.Fairness, "Fairness: true")
	fields = append(fields, o.traitFields()...)
	return "locktest.Options{" + strings.Join(fields, ", ") + "}"
}

var topologyConst = map[locks.Topology]string{locks.Single: "locks.Single", locks.Independent: "locks.Independent", locks.Replicated: "locks.Replicated"}
var workloadConst = map[Workload]string{Careful: "Careful", Careless: "Careless", ScenarioWorkload: "ScenarioWorkload"}

// GoSchedule prints a fault schedule as a Go []faults.Fault literal.
func GoSchedule(fs []faults.Fault) string {
	if len(fs) == 0 {
		return "nil"
	}
	var parts []string
	for _, f := range fs {
		kind, ok := kindConst[f.Kind]
		if !ok {
			kind = strconv.Quote(string(f.Kind))
		}
		fields := []string{"Kind: " + kind, "Start: " + goDuration(f.Start)}
		add := func(set bool, s string, a ...any) {
			if set {
				fields = append(fields, fmt.Sprintf(s, a...))
			}
		}
		add(f.Duration != 0, "Duration: %s", goDuration(f.Duration))
		add(f.Targets != nil, "Targets: %s", goStrings(f.Targets))
		add(f.From != nil, "From: %s", goStrings(f.From))
		add(f.To != nil, "To: %s", goStrings(f.To))
		add(f.OneWay, "OneWay: true")
		add(f.DriftPPM != 0, "DriftPPM: %d", f.DriftPPM)
		add(f.Jump != 0, "Jump: %s", goDuration(f.Jump))
		add(f.Delay != 0, "Delay: %s", goDuration(f.Delay))
		add(f.LossProb != 0, "LossProb: %s", strconv.FormatFloat(f.LossProb, 'g', -1, 64))
		add(f.At != "", "At: %q", f.At)
		add(f.On != "", "On: %q", f.On)
		add(f.NodeClock, "NodeClock: true")
		parts = append(parts, "{"+strings.Join(fields, ", ")+"}")
	}
	return "[]faults.Fault{" + strings.Join(parts, ", ") + "}"
}

var kindConst = map[faults.Kind]string{faults.ClientPause: "faults.ClientPause", faults.NodePause: "faults.NodePause", faults.ClockDrift: "faults.ClockDrift",
	faults.ClockJump: "faults.ClockJump", faults.Partition: "faults.Partition", faults.Delay: "faults.Delay", faults.Loss: "faults.Loss",
	faults.Crash: "faults.Crash", faults.Failover: "faults.Failover"}

func goStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}

// goDuration prints d as a Go expression of package time, exactly.
func goDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "time.Hour"}, {time.Minute, "time.Minute"}, {time.Second, "time.Second"}, {time.Millisecond, "time.Millisecond"}, {time.Microsecond, "time.Microsecond"}} {
		if d%u.d == 0 {
			if d == u.d {
				return u.name
			}
			return fmt.Sprintf("%d * %s", d/u.d, u.name)
		}
	}
	return fmt.Sprintf("%d", int64(d))
}
