package scenarios

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/sim"
)

const minimal = "id: t\ndescription: a test scenario\n"

// TestParseErrors: every malformed file is an error that names the file,
// the line (and column) and the field.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"empty", "", `t.yaml: empty scenario file`},
		{"comment only", "# nothing\n", `t.yaml: empty scenario file`},
		{"not a mapping", "- a\n- b\n", `t.yaml:1:1: want a mapping of fields`},
		{"syntax", "id: [a\n", `t.yaml:1:`},
		{"two documents", minimal + "---\n" + minimal, `t.yaml:4: more than one YAML document`},
		{"missing id", "description: x\n", `t.yaml:1: id: required`},
		{"bad id", "id: Bad Id\ndescription: x\n", `t.yaml:1:1: id: "Bad Id" is not a scenario id`},
		{"missing description", "id: t\n", `t.yaml:1: description: required`},
		{"unknown field", minimal + "colour: red\n", `t.yaml:3:1: colour: unknown field "colour"`},
		{"unknown nested field", minimal + "topology:\n  nodez: 3\n", `t.yaml:4:3: topology.nodez: unknown field "nodez"`},
		{"unknown fault field", minimal + "faults:\n  - {kind: crash, targets: [n0], duration: 1s, when: 3s}\n", `t.yaml:4:`},
		{"wrong type", minimal + "clients: {count: many}\n", `t.yaml:3:18: clients.count: want a whole number, got the string "many"`},
		// Types are strict: no silent truncation or conversion.
		{"NaN duration", minimal + "duration: NaN\n", `t.yaml:3:11: duration: "NaN" is not a duration (want e.g. 1.5s`},
		{"long key cut", minimal + strings.Repeat("k", 5000) + ": 1\n", `bytes more)`},
		{"fraction for a count", minimal + "clients: {count: 2.9}\n", `t.yaml:3:18: clients.count: want a whole number, got the fraction 2.9`},
		{"quoted count", minimal + "clients: {count: \"3\"}\n", `t.yaml:3:18: clients.count: want a whole number, got the string "3"`},
		{"fraction for drift", minimal + "topology:\n  per_node:\n    n0: {drift_ppm: 1000.9}\n", `topology.per_node.n0.drift_ppm: want a whole number, got the fraction 1000.9`},
		// A fault whose targets or fields its kind cannot take is refused.
		{"crash of a client", minimal + "locks: [set-nx-cad]\nexpect: {set-nx-cad: {agreed: safe}}\nfaults:\n  - {kind: crash, targets: [c0], duration: 1s}\n", `crash: "c0" is not a node or service`},
		{"client pause of a node", minimal + "locks: [set-nx-cad]\nexpect: {set-nx-cad: {agreed: safe}}\nfaults:\n  - {kind: client-pause, targets: [n0], duration: 1s}\n", `client-pause: "n0" is not a client`},
		{"partition from itself", minimal + "faults:\n  - {kind: partition, from: [c0], to: [c0, n0], duration: 1s}\n", `partition: "c0" is on both sides`},
		{"jump on a node pause", minimal + "faults:\n  - {kind: node-pause, targets: [n0], duration: 1s, jump: 1s}\n", `node-pause: jump does not apply to this kind`},
		{"loss on a node pause", minimal + "faults:\n  - {kind: node-pause, targets: [n0], duration: 1s, loss_prob: 0.5}\n", `node-pause: loss_prob does not apply to this kind`},
		{"wrong type list", minimal + "locks: set-nx-cad\n", `t.yaml:3:8: locks: want a list, got a string`},
		{"duration no unit", minimal + "duration: 30\n", `t.yaml:3:11: duration: "30" has no unit`},
		{"duration garbage", minimal + "duration: soon\n", `t.yaml:3:11: duration: "soon" is not a duration`},
		{"duration list", minimal + "duration: [1s]\n", `t.yaml:3:11: duration: want a duration`},
		{"negative duration", minimal + "duration: -5s\n", `t.yaml:3:1: duration: -5s is negative`},
		{"negative ttl multiple", minimal + "liveness: -2ttl\n", `t.yaml:3:1: liveness: -2ttl is negative`},
		{"huge duration", minimal + "duration: 100000h\n", `t.yaml:3:11: duration: "100000h" out of range`},
		{"clients range", minimal + "clients: {count: 20000}\n", `t.yaml:3:11: clients.count: 20000 out of range 1..10000`},
		{"nodes range", minimal + "topology: {nodes: 65}\n", `t.yaml:3:12: topology.nodes: 65 out of range 1..64`},
		{"drift range", minimal + "topology:\n  per_node:\n    n0: {drift_ppm: 600000}\n", `t.yaml:5:10: topology.per_node.n0.drift_ppm: drift 600000 ppm out of range`},
		{"client drift range", minimal + "clients:\n  count: 2\n  per_client:\n    c1: {drift_ppm: -500001}\n", `clients.per_client.c1.drift_ppm: drift -500001 ppm out of range`},
		{"no such client", minimal + "clients:\n  count: 2\n  per_client:\n    c2: {drift_ppm: 1}\n", `t.yaml:6:5: clients.per_client.c2: no client c2`},
		{"bad node name", minimal + "topology:\n  per_node:\n    x1: {persistence: always}\n", `topology.per_node.x1: "x1" is not a node name`},
		{"persistence", minimal + "topology: {persistence: sometimes}\n", `t.yaml:3:12: topology.persistence: "sometimes" is not one of none, everysec, always`},
		{"resource", minimal + "workload: {resource: disk}\n", `workload.resource: "disk" is not one of pool, counter, none`},
		{"hold range", minimal + "workload: {hold: [2s, 1s]}\n", `workload.hold: min 2s is above max 1s`},
		{"hold arity", minimal + "workload: {hold: [1s]}\n", `workload.hold: want a range [min, max]`},
		{"pool size", minimal + "workload: {pool_size: -1}\n", `workload.pool_size: -1 out of range`},
		{"fault kind", minimal + "faults:\n  - {kind: meteor}\n", `t.yaml:4:6: faults[0].kind: "meteor" is not a fault kind`},
		{"fault kind missing", minimal + "faults:\n  - {start: 1s}\n", `t.yaml:4:5: faults[0].kind: required`},
		{"fault drift", minimal + "faults:\n  - {kind: clock-drift, targets: [n0], drift_ppm: 900000}\n", `faults[0].drift_ppm: drift 900000 ppm out of range`},
		{"fault loss", minimal + "faults:\n  - {kind: loss, from: [c0], to: [n0], duration: 1s, loss_prob: 1.5}\n", `faults[0].loss_prob: 1.5 out of range`},
		{"fault at", minimal + "faults:\n  - {kind: client-pause, targets: [c0], duration: 1s, at: lunch}\n", `faults[0].at: client-pause: at "lunch" is not a point (one of`},
		{"fault needs targets", minimal + "faults:\n  - {kind: crash, duration: 1s}\n", `t.yaml:4:5: faults[0].targets: crash: needs targets`},
		{"fault unknown target", minimal + "locks: [set-nx-cad]\nexpect: {set-nx-cad: {agreed: safe}}\nfaults:\n  - {kind: crash, targets: [n7], duration: 1s}\n", `t.yaml:6:5: faults[0]: crash: unknown process "n7" in the world of lock set-nx-cad`},
		{"fault after the end", minimal + "duration: 10s\nlocks: [set-nx-cad]\nexpect: {set-nx-cad: {agreed: safe}}\nfaults:\n  - {kind: crash, targets: [n0], start: 20s, duration: 1s}\n", `faults[0].start: occurrence 1 starts at 20s, not before the end of the 10s safety phase`},
		{"groups not replicated", minimal + "topology: {nodes: 3, groups: 3}\n", `topology.groups: 3 groups need replicated: true`},
		{"groups negative", minimal + "topology: {replicated: true, groups: -1}\n", `topology.groups: -1 out of range`},
		{"group of one", minimal + "topology: {replicated: true, nodes: 1, groups: 2}\n", `topology.nodes: a replicated topology needs at least 2 nodes`},
		{"group per_node beyond", minimal + "topology:\n  replicated: true\n  nodes: 2\n  groups: 2\n  per_node:\n    n4: {persistence: always}\n", `topology.per_node.n4: no node n4: the topology has 4 nodes (n0..n3)`},
		{"failover names a node", minimal + "topology: {replicated: true, nodes: 2, groups: 2}\nlocks: [primary-replica]\nexpect: {primary-replica: {agreed: unsafe}}\nfaults:\n  - {kind: failover, duration: 1s, targets: [n0]}\n", `faults[0].targets: failover: "n0" is not a primary/replica group of lock primary-replica's world (g0, g1)`},
		{"partition names a group", minimal + "topology: {replicated: true, nodes: 2, groups: 2}\nlocks: [primary-replica]\nexpect: {primary-replica: {agreed: unsafe}}\nfaults:\n  - {kind: partition, duration: 1s, from: [g1], to: [c0]}\n", `faults[0]: partition: "g1" is a group, which only a failover names`},
		{"groups lock, no replicas", minimal + "topology: {replicated: false}\nlocks: [redisson-multilock]\nexpect: {redisson-multilock: {agreed: safe}}\n", `topology.replicated: lock redisson-multilock needs primary/replica groups, and the file's world is not replicated`},
		{"copied world, node past the group", minimal + "topology: {replicated: true, nodes: 3}\nlocks: [redisson-multilock]\nexpect: {redisson-multilock: {agreed: unsafe}}\nfaults:\n  - {kind: crash, start: 1s, duration: 1s, targets: [n5]}\n", `faults[0].targets: no node n5: the file's world has 3 nodes (n0..n2), copied in each of the 3 groups`},
		{"copied world, per_node past the group", minimal + "topology:\n  replicated: true\n  per_node:\n    n4: {persistence: always}\nlocks: [redisson-multilock]\nexpect: {redisson-multilock: {agreed: safe}}\n", `topology.per_node.n4: no node n4: the file's world has 3 nodes`},
		{"copied world, second group", minimal + "topology: {replicated: true, nodes: 3}\nlocks: [redisson-multilock]\nexpect: {redisson-multilock: {agreed: unsafe}}\nfaults:\n  - {kind: failover, start: 1s, duration: 1s, targets: [g1]}\n", `faults[0].targets: "g1": the file's world has one primary/replica group, g0`},
		{"failover single", minimal + "locks: [set-nx-cad]\nexpect: {set-nx-cad: {agreed: safe}}\nfaults:\n  - {kind: failover, duration: 1s}\n", `faults[0].kind: failover needs a replicated topology`},
		{"ttl multiple without ttl", minimal + "duration: 5ttl\nlocks: [version-cas]\nexpect: {version-cas: {agreed: safe}}\n", `t.yaml:3:1: duration: 5ttl is relative to the lock's TTL, and this lock has none (lock version-cas)`},
		{"repeat count", minimal + "faults:\n  - {kind: crash, targets: [n0], duration: 1s, repeat: {count: 5000, every: 1s}}\n", `faults[0].repeat.count: 5000 out of range`},
		{"both schedules", minimal + "faults:\n  - {kind: crash, targets: [n0], duration: 1s}\nswarm: {max_faults: 3}\n", `swarm: give either a scripted faults list or a swarm block`},
		{"swarm range", minimal + "swarm: {min_faults: 5, max_faults: 2}\n", `swarm.max_faults: 2 out of range 5..1000`},
		{"unknown lock", minimal + "locks: [no-such-lock]\n", `t.yaml:3:9: locks[0]: unknown lock "no-such-lock"`},
		{"lock twice", minimal + "locks: [redlock, redlock]\nexpect: {redlock: {agreed: safe}}\n", `locks[1]: lock "redlock" listed twice`},
		{"not_for unknown", minimal + "not_for: {no-such-lock: slow}\n", `not_for.no-such-lock: unknown lock "no-such-lock"`},
		{"not_for listed", minimal + "locks: [redlock]\nexpect: {redlock: {agreed: safe}}\nnot_for: {redlock: slow}\n", `not_for.redlock: lock "redlock" is in locks: a listed lock runs`},
		{"not_for why", minimal + "not_for: {redlock: \"\"}\n", `not_for.redlock: say why "redlock" does not run here`},
		{"no expectation", minimal + "locks: [redlock]\n", `t.yaml:3:9: locks[0]: no expect entry for "redlock"`},
		{"expect unlisted", minimal + "expect: {redlock: {agreed: safe}}\n", `expect.redlock: lock "redlock" is not in locks`},
		{"expect verdict", minimal + "locks: [redlock]\nexpect: {redlock: {agreed: fine}}\n", `expect.redlock.agreed: "fine" is not one of safe, unsafe, liveness`},
		{"expect agreed missing", minimal + "locks: [redlock]\nexpect: {redlock: {kleppmann: unsafe}}\n", `expect.redlock.agreed: required`},
		{"simulated needs note", minimal + "locks: [redlock]\nexpect: {redlock: {agreed: safe, simulated: unsafe}}\n", `expect.redlock.note: required with simulated`},
		{"params unknown lock", minimal + "params: {nope: {ttl: 1s}}\n", `params.nope: unknown lock "nope"`},
		{"params wrong field", minimal + "params: {set-nx-cad: {drift_factor: 0.1}}\n", `params.set-nx-cad.drift_factor: lock set-nx-cad does not take drift_factor (it takes: ttl, tries, retry_delay, wait_replicas, wait_timeout)`},
		{"params no params", minimal + "params: {redisson-lock: {ttl: 1s}}\n", `params.redisson-lock.ttl: lock redisson-lock takes no parameters`},
		{"params preset", minimal + "params: {redlock: {preset: fast}}\n", `params.redlock.preset: "fast" is not a Redlock preset`},
		{"params ttl relative", minimal + "params: {redlock: {ttl: 2ttl}}\n", `params.redlock.ttl: 2ttl: a lock parameter must be absolute`},
		{"params tries", minimal + "params: {redlock: {tries: 0}}\n", `params.redlock.tries: 0 out of range 1..1000`},
		{"params drift factor", minimal + "params: {redlock: {drift_factor: 0.9}}\n", `params.redlock.drift_factor: 0.9 out of range 0..0.5`},
		{"sweep name", minimal + "sweep: {name: colour, from: 1, to: 2, steps: 3}\n", `sweep.name: "colour" is not a sweepable parameter`},
		{"sweep fault index", minimal + "sweep: {name: \"faults[3].duration\", from: 1s, to: 2s, steps: 3}\n", `sweep.name: "faults[3].duration": no such fault`},
		{"sweep steps", minimal + "sweep: {name: duration, from: 1s, to: 2s, steps: 0}\n", `sweep.steps: 0 out of range 1..1000`},
		{"sweep unit", minimal + "sweep: {name: duration, from: 1, to: 2s, steps: 3}\n", `sweep.from: 1 has no unit`},
		{"sweep number", minimal + "sweep: {name: clients.count, from: 1s, to: 2s, steps: 3}\n", `sweep.from: 1s: clients.count is a number`},
		{"sweep mixed", minimal + "sweep: {name: duration, from: 1s, to: 2ttl, steps: 3}\n", `sweep.to: from 1s and to 2ttl: both absolute or both multiples of the TTL`},
		{"anchor", minimal + "net: &n {latency_min: 1ms}\n", `t.yaml:3:6: net: anchors and aliases`},
		{"alias", minimal + "x: &a 1\ny: *a\n", `anchors and aliases`},
		{"merge key", minimal + "net:\n  <<: {latency_min: 1ms}\n", `t.yaml:4:3: net.<<: merge keys`},
		{"duplicate key", minimal + "id: u\n", `t.yaml:3:1: `},
		{"tag", minimal + "locks: !x\n  a: b\n", `t.yaml:3:8: locks: YAML tags (!x, !!x) are not accepted`},
	}
	fileRE := regexp.MustCompile(`^t\.yaml(:\d+(:\d+)?)?: `)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(c.src))
			if err == nil {
				t.Fatalf("no error, parsed %+v", f)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, c.want)
			}
			if !fileRE.MatchString(err.Error()) {
				t.Fatalf("error %q does not start with file[:line[:col]]", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
}

// exampleFile is the format's example (file.go's doc comment) plus every
// other field, all of which must parse and build.
const exampleFile = `
id: example
description: every field of the format
source: the tests
debate: S1
topology:
  nodes: 3
  replicated: true
  repl_lag: 20ms
  down_after: 1s
  persistence: everysec
  per_node:
    n1: {persistence: always, clock_offset: -1s, drift_ppm: 100}
clients:
  count: 4
  per_client:
    c3: {clock_offset: 2s, drift_ppm: -2000}
duration: 8ttl
liveness: 20s
max_unavailable: 10s
net: {latency_min: 1ms, latency_jitter: 2ms}
workload: {resource: counter, hold: [10ms, 0.1ttl], think: [0, 100ms]}
faults:
  - {kind: client-pause, at: after-check, start: 1ttl, duration: 1.5ttl, targets: [c0], repeat: {count: 2, every: 3ttl}}
  - {kind: partition, start: 2s, duration: 1s, from: [all-clients], to: [n1, sentinel], one_way: true}
  - {kind: delay, start: 2s, duration: 1s, from: [c1], to: [store], delay: 500ms}
  - {kind: loss, start: 2s, duration: 1s, from: [c1], to: [all-nodes], loss_prob: 0.5}
  - {kind: clock-drift, start: 0s, duration: 2s, targets: [n2], drift_ppm: -30000}
  - {kind: clock-jump, start: 3s, jump: -1s, targets: [c2]}
  - {kind: node-pause, start: 3s, duration: 1s, targets: [n2]}
  - {kind: crash, start: 4s, duration: 1s, targets: [n2]}
  - {kind: failover, start: 5s, duration: 2s, locks: [primary-replica]}
locks: [primary-replica, fencing]
params:
  primary-replica: {ttl: 2s, tries: 5, retry_delay: 100ms, wait_replicas: 1, wait_timeout: 500ms}
  redlock: {preset: seed-001, drift_factor: 0.02}
sweep: {name: "faults[0].duration", from: 0.5ttl, to: 2ttl, steps: 4}
expect:
  primary-replica: {role: A2, kleppmann: unsafe, antirez: unsafe, agreed: unsafe, outside_assumptions: false}
  fencing: {role: A5, kleppmann: safe, antirez: "-", agreed: safe, simulated: unsafe, note: a note}
`

func TestParseExample(t *testing.T) {
	f, err := Parse("example.yaml", []byte(exampleFile))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := catalogue.Get("primary-replica")
	cfg, err := f.Scenario().Build(info, 7, Params{})
	if err != nil {
		t.Fatal(err)
	}
	// primary-replica's TTL is 2 s here (params): 8ttl = 16 s.
	if cfg.Duration != 16*time.Second || cfg.Liveness != 20*time.Second || cfg.Clients != 4 || len(cfg.Nodes) != 3 {
		t.Fatalf("world: duration %v liveness %v clients %d nodes %d", cfg.Duration, cfg.Liveness, cfg.Clients, len(cfg.Nodes))
	}
	if !cfg.Topology.Replicated || cfg.Topology.ReplLag != 20*time.Millisecond || cfg.Topology.DownAfter != time.Second {
		t.Fatalf("topology %+v", cfg.Topology)
	}
	if n := cfg.Nodes[1]; n.Persistence != sim.PersistAlways || n.ClockOffset != -time.Second || n.DriftPPM != 100 || cfg.Nodes[0].Persistence != sim.PersistEverysec {
		t.Fatalf("nodes %+v", cfg.Nodes)
	}
	if cfg.ClientOffsets[3] != 2*time.Second || cfg.ClientDriftPPMs[3] != -2000 {
		t.Fatalf("client clocks %v %v", cfg.ClientOffsets, cfg.ClientDriftPPMs)
	}
	if len(cfg.Faults) != 10 {
		t.Fatalf("%d faults, want 10 (one repeated twice): %v", len(cfg.Faults), cfg.Faults)
	}
	var pauses []faults.Fault
	for _, x := range cfg.Faults {
		if x.Kind == faults.ClientPause {
			pauses = append(pauses, x)
		}
		if x.Kind == faults.Partition && strings.Join(x.From, ",") != "c0,c1,c2,c3" {
			t.Fatalf("all-clients expanded to %v", x.From)
		}
	}
	if len(pauses) != 2 || pauses[0].Start != 2*time.Second || pauses[0].Duration != 3*time.Second || pauses[1].Start != 8*time.Second {
		t.Fatalf("pauses %v", pauses)
	}
	j := f.Scenario().Judging(info)
	if j.Resource != ResourceCounter || j.Initial != 0 || j.MaxUnavailable != 10*time.Second {
		t.Fatalf("judging %+v", j)
	}
	// fencing: the failover is for primary-replica only.
	fi, _ := catalogue.Get("fencing")
	cfg, err = f.Scenario().Build(fi, 7, Params{Clients: 5, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Faults) != 9 || cfg.Clients != 5 || cfg.Duration != time.Minute {
		t.Fatalf("fencing: %d faults, %d clients, %v", len(cfg.Faults), cfg.Clients, cfg.Duration)
	}
	if got := f.SweepValues(); strings.Join(got, " ") != "0.5ttl 1ttl 1.5ttl 2ttl" {
		t.Fatalf("sweep values %v", got)
	}
	g, v, err := f.AtSweep(3)
	if err != nil || v != "2ttl" || g.Faults[0].Duration.TTLs != 2 || f.Faults[0].Duration.TTLs != 1.5 {
		t.Fatalf("AtSweep(3) = %v, %q, %v (original %v)", g.Faults[0].Duration, v, err, f.Faults[0].Duration)
	}
}

// TestLockParams: params build the lock they describe, and the lock's TTL
// (which TTL multiples use) follows.
func TestLockParams(t *testing.T) {
	f, err := Parse("p.yaml", []byte(minimal+`
params:
  redlock: {preset: seed-001, tries: 7}
  watchdog: {ttl: 9s, renew_interval: 3s}
  fencing: {ttl: 4s}
  primary-replica: {wait_replicas: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	for id, check := range map[string]func(locks.Lock) bool{
		"redlock": func(l locks.Lock) bool {
			r := l.(*catalogue.Redlock)
			return r.P.TTL == 5*time.Second && r.P.Tries == 7 && r.P.DriftFixed == 500*time.Millisecond
		},
		"watchdog": func(l locks.Lock) bool {
			w := l.(*catalogue.Watchdog)
			return w.TTL == 9*time.Second && w.Interval == 3*time.Second
		},
		"fencing": func(l locks.Lock) bool { return l.(*catalogue.Fenced).TTL == 4*time.Second },
		"primary-replica": func(l locks.Lock) bool {
			c := l.(*catalogue.SetNXCAD)
			return c.WaitReplicas == 2 && c.WaitTimeout == time.Second
		},
	} {
		base, _ := catalogue.Get(id)
		info, err := f.lockInfo(base, f.Params[id])
		if err != nil {
			t.Fatal(err)
		}
		l, err := info.New(locks.Env{})
		if err != nil || !check(l) {
			t.Errorf("%s: built %+v (%v)", id, l, err)
		}
		if id == "redlock" && info.TTL != 5*time.Second {
			t.Errorf("redlock TTL %v, want the preset's 5s", info.TTL)
		}
	}
}

func TestSwarmFile(t *testing.T) {
	f, err := Parse("s.yaml", []byte(minimal+"swarm: {min_faults: 3, max_faults: 3, kinds: [crash, failover]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := catalogue.Get("set-nx-cad")
	a, err := f.Scenario().Build(info, 5, Params{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Scenario().Build(info, 5, Params{})
	if len(a.Faults) != 3 || a.Faults[0].String() != b.Faults[0].String() {
		t.Fatalf("swarm: %v vs %v", a.Faults, b.Faults)
	}
	for _, x := range a.Faults {
		if x.Kind != faults.Crash {
			t.Fatalf("%v: only crashes apply to a single node", x)
		}
	}
}

func TestResolve(t *testing.T) {
	if s, err := Resolve("pause-after-check"); err != nil || s.File == nil {
		t.Fatalf("built-in: %v %v", s, err)
	}
	path := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(path, []byte(minimal), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Resolve(path); err != nil || s.ID != "t" {
		t.Fatalf("file: %v %v", s, err)
	}
	if _, err := Resolve("nope"); err == nil || !strings.Contains(err.Error(), `unknown scenario "nope"`) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := Resolve(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing: %v", err)
	}
	if _, err := Resolve(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("dir: %v", err)
	}
}

func TestParseSpan(t *testing.T) {
	for in, want := range map[string]Span{"0": {Set: true}, "1.5s": {NS: 1500 * time.Millisecond, Set: true}, "2ttl": {TTLs: 2, Set: true},
		"ttl": {TTLs: 1, Set: true}, "-0.5ttl": {TTLs: -0.5, Set: true}, "0ttl": {Set: true}} {
		got, err := ParseSpan(in)
		if err != nil || got != want {
			t.Errorf("ParseSpan(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "5", "1e9ttl", "NaNttl", "xttl", "1.5"} {
		if _, err := ParseSpan(in); err == nil {
			t.Errorf("ParseSpan(%q): no error", in)
		}
	}
}

// A UTF-8 byte order mark at the start of a file (some editors write one)
// is not part of the first key.
func TestParseBOM(t *testing.T) {
	if _, err := Parse("t.yaml", append([]byte("\xef\xbb\xbf"), exampleFile...)); err != nil {
		t.Fatalf("a file with a BOM: %v", err)
	}
}

// TestSweepEveryFault: faults[*].x sets x on every fault that sets it, and
// only on those; a file where no fault sets x is refused at parse time.
func TestSweepEveryFault(t *testing.T) {
	f, err := Parse("d.yaml", []byte(minimal+`faults:
  - {kind: clock-drift, start: 0s, duration: 5s, drift_ppm: 200000, targets: [n0]}
  - {kind: clock-drift, start: 1s, duration: 5s, drift_ppm: 100000, targets: [n0]}
  - {kind: client-pause, start: 1s, duration: 2s, targets: [c0]}
sweep: {name: "faults[*].drift_ppm", from: 0, to: 50000, steps: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	for step, want := range []int64{0, 25000, 50000} {
		g, _, err := f.AtSweep(step)
		if err != nil {
			t.Fatal(err)
		}
		if g.Faults[0].DriftPPM != want || g.Faults[1].DriftPPM != want || g.Faults[2].DriftPPM != 0 || g.Faults[2].Duration != f.Faults[2].Duration {
			t.Fatalf("step %d: faults %+v, want drift %d on the two drift faults only", step, g.Faults, want)
		}
	}
	if f.Faults[0].DriftPPM != 200000 || f.Faults[1].DriftPPM != 100000 {
		t.Fatalf("AtSweep changed the original: %+v", f.Faults)
	}
	_, err = Parse("d.yaml", []byte(minimal+`faults:
  - {kind: client-pause, start: 1s, duration: 2s, targets: [c0]}
sweep: {name: "faults[*].jump", from: 0s, to: 2s, steps: 3}
`))
	if err == nil || !strings.Contains(err.Error(), "no fault of the file sets jump") || !strings.Contains(err.Error(), "sweep.name") {
		t.Fatalf("err = %v, want the sweep.name error naming jump", err)
	}
}

// TestReentrantWorkload: workload.reentrant reaches the workload of every
// lock, and a reentrant lock's clients then nest an acquisition inside each
// section (an acquire ok with the holder's own value while it holds) while
// a non-reentrant lock runs plain sections.
func TestReentrantWorkload(t *testing.T) {
	f, err := Parse("r.yaml", []byte(minimal+"clients: {count: 2}\nduration: 5s\nliveness: 5s\nworkload: {reentrant: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("r.yaml", []byte(minimal+"workload: {reentrant: 1}\n")); err == nil {
		t.Fatal("reentrant: 1 accepted")
	}
	for _, tc := range []struct {
		lock   string
		nested bool
	}{{"redisson-lock", true}, {"set-nx-cad", false}} {
		info, err := catalogue.Get(tc.lock)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := f.Parts(info, 1, Params{})
		if err != nil {
			t.Fatal(err)
		}
		if !parts.Workload.Reentrant {
			t.Fatalf("%s: workload not reentrant", tc.lock)
		}
		res, err := sim.Run(sim.TestBubble(t), parts.Config)
		if err != nil {
			t.Fatal(err)
		}
		holding, depth := map[string]string{}, map[string]int{}
		nested := 0
		for _, ev := range res.History {
			switch {
			case ev.Op == event.OpAcquire && ev.Kind == event.KindOK:
				if v, ok := holding[ev.Proc]; ok && v == ev.Detail {
					nested++
					depth[ev.Proc]++
					continue
				}
				holding[ev.Proc] = ev.Detail
			case ev.Op == event.OpRelease && ev.Kind == event.KindCall:
				if depth[ev.Proc] > 0 {
					depth[ev.Proc]--
					continue
				}
				delete(holding, ev.Proc)
			}
		}
		if (nested > 0) != tc.nested {
			t.Fatalf("%s: %d nested acquisitions", tc.lock, nested)
		}
		t.Logf("%s: %d nested acquisitions", tc.lock, nested)
	}
}

// TestSweepValues: a sweep: block may list its values instead of from, to
// and steps; mixing the two, values out of order or of the wrong kind are
// errors naming the value.
func TestSweepValues(t *testing.T) {
	f, err := Parse("v.yaml", []byte(minimal+`faults:
  - {kind: clock-drift, start: 0s, duration: 5s, drift_ppm: 200000, targets: [n0]}
sweep: {name: "faults[*].drift_ppm", values: [0, 5000, 10000, 200000]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.SweepNumbers(); !slices.Equal(got, []float64{0, 5000, 10000, 200000}) {
		t.Fatalf("numbers %v", got)
	}
	g, v, err := f.AtSweep(2)
	if err != nil || v != "10000" || g.Faults[0].DriftPPM != 10000 {
		t.Fatalf("AtSweep(2) = %v, %q, %v", g, v, err)
	}
	p, err := Parse("v.yaml", []byte(minimal+`faults:
  - {kind: client-pause, start: 1s, duration: 1ttl, targets: [c0]}
sweep: {name: "faults[0].duration", values: [0.5ttl, 1ttl, 3ttl]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, u := p.SweepNumbers(), p.SweepUnit(); !slices.Equal(got, []float64{0.5, 1, 3}) || u != "× TTL" {
		t.Fatalf("numbers %v %q", got, u)
	}
	for _, c := range []struct{ sweep, want string }{
		{`{name: "faults[0].duration", values: [1ttl, 0.5ttl]}`, "sweep.values[1]: 0.5ttl is not above the value before it"},
		{`{name: "faults[0].duration", values: [1ttl, 2], }`, "sweep.values[1]: 2 has no unit"},
		{`{name: "faults[0].duration", values: [1ttl], steps: 2}`, "sweep.values: give either values or from, to and steps"},
		{`{name: "faults[0].duration", values: [1s, 2ttl]}`, "every value absolute or every value a multiple of the TTL"},
	} {
		_, err := Parse("v.yaml", []byte(minimal+"faults:\n  - {kind: client-pause, start: 1s, duration: 1ttl, targets: [c0]}\nsweep: "+c.sweep+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.sweep, err, c.want)
		}
	}
}

// TestReadFractionWorkload: workload.read_fraction is a fraction (0..1);
// it gives a read-write lock's clients read sections (an acquire ok with
// Result "read", then only a read of the pool, no write) beside write
// sections, while every other lock ignores it: set-nx-cad's trace is the
// same, byte for byte, with and without it (no draw from its stream).
func TestReadFractionWorkload(t *testing.T) {
	for _, bad := range []string{"1.5", "-0.1", "yes"} {
		if _, err := Parse("r.yaml", []byte(minimal+"workload: {read_fraction: "+bad+"}\n")); err == nil {
			t.Fatalf("read_fraction: %s accepted", bad)
		}
	}
	head := minimal + "clients: {count: 3}\nduration: 10s\nliveness: 5s\n"
	with, err := Parse("r.yaml", []byte(head+"workload: {read_fraction: 0.7}\n"))
	if err != nil {
		t.Fatal(err)
	}
	without, err := Parse("r.yaml", []byte(head))
	if err != nil {
		t.Fatal(err)
	}
	runFile := func(f *File, lock string) *sim.Result {
		info, err := catalogue.Get(lock)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := f.Parts(info, 1, Params{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(sim.TestBubble(t), parts.Config)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if a, b := runFile(with, "set-nx-cad"), runFile(without, "set-nx-cad"); a.TraceSHA256 != b.TraceSHA256 {
		t.Fatalf("set-nx-cad's trace changed with read_fraction: %s vs %s", a.TraceSHA256, b.TraceSHA256)
	}
	count := func(res *sim.Result) (reads, writes, readOps, writeOps int) {
		mode := map[string]string{}
		for _, ev := range res.History {
			switch {
			case ev.Op == event.OpAcquire && ev.Kind == event.KindOK:
				mode[ev.Proc] = string(ev.Result)
				if ev.Result == event.ResultRead {
					reads++
				} else {
					writes++
				}
			case ev.Op == event.OpWrite && ev.Kind == event.KindCall:
				writeOps++
				if mode[ev.Proc] == "read" {
					t.Fatalf("%s wrote in a read section at t=%d", ev.Proc, ev.T)
				}
			case ev.Op == event.OpRead && ev.Kind == event.KindCall:
				readOps++
			}
		}
		return
	}
	r, w, ro, wo := count(runFile(with, "redisson-rw"))
	if r == 0 || w == 0 || ro < r || wo == 0 {
		t.Fatalf("redisson-rw with read_fraction 0.7: %d read holds, %d write holds, %d reads, %d writes", r, w, ro, wo)
	}
	t.Logf("redisson-rw, read_fraction 0.7: %d read holds, %d write holds (%d storage reads, %d writes)", r, w, ro, wo)
	if r, w, _, _ := count(runFile(without, "redisson-rw")); r != 0 || w == 0 {
		t.Fatalf("redisson-rw without read_fraction: %d read holds, %d write holds", r, w)
	}
}

// A file written for one primary/replica group runs a groups lock on
// locks.DefaultGroups copies of it: node nX of the file is nX of every
// group, in faults and per_node alike, its group g0 is every group, and
// all-nodes names each node once.
func TestCopiedGroups(t *testing.T) {
	src := minimal + `topology:
  replicated: true
  nodes: 3
  per_node:
    n1: {persistence: always}
locks: [redisson-multilock]
expect: {redisson-multilock: {agreed: unsafe}}
faults:
  - {kind: crash, start: 1s, duration: 1s, targets: [n0]}
  - {kind: partition, start: 1s, duration: 1s, from: [c0], to: [n2]}
  - {kind: failover, start: 2s, duration: 1s, targets: [g0]}
  - {kind: clock-jump, start: 3s, jump: 1s, targets: [all-nodes]}
`
	f, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := catalogue.Get("redisson-multilock")
	cfg, err := f.build(info, 1, Params{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Nodes) != 9 || cfg.Topology.Groups != 3 || !cfg.Topology.Replicated {
		t.Fatalf("world: %d nodes, %d groups, replicated %v; want 9, 3, true", len(cfg.Nodes), cfg.Topology.Groups, cfg.Topology.Replicated)
	}
	for i, n := range cfg.Nodes {
		want := sim.PersistNone
		if i%3 == 1 {
			want = sim.PersistAlways
		}
		if n.Persistence != want {
			t.Errorf("%s: persistence %s, want %s", n.Name, n.Persistence, want)
		}
	}
	got := map[faults.Kind][]string{}
	for _, fl := range cfg.Faults {
		got[fl.Kind] = append(append(got[fl.Kind], fl.Targets...), fl.To...)
	}
	for kind, want := range map[faults.Kind][]string{
		faults.Crash:     {"n0", "n3", "n6"},
		faults.Partition: {"n2", "n5", "n8"},
		faults.Failover:  {"g0", "g1", "g2"},
		faults.ClockJump: {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"}, // each once
	} {
		if !slices.Equal(got[kind], want) {
			t.Errorf("%s targets: %v, want %v", kind, got[kind], want)
		}
	}
}

// An armed fault in a scenario file: at and on (unquoted: the key "on",
// not YAML 1.1's true) reach the world's schedule, and on without at is an
// error naming the fault.
func TestArmedFaultFile(t *testing.T) {
	src := minimal + "faults:\n  - {kind: delay, start: 1ttl, duration: 0.1ttl, from: [c0], to: [n0], delay: 1ttl, at: releasing, on: c0}\n"
	f, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := catalogue.Get("set-nx-cad")
	cfg, err := f.Scenario().Build(info, 1, Params{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Faults) != 1 || cfg.Faults[0].At != "releasing" || cfg.Faults[0].On != "c0" {
		t.Fatalf("faults %v, want the delay armed at releasing on c0", cfg.Faults)
	}
	bad := minimal + "faults:\n  - {kind: crash, start: 1s, duration: 1s, targets: [n0], on: c0}\n"
	if _, err := Parse("t.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "needs at") {
		t.Fatalf("on without at: error %v", err)
	}
}
