package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/locksim/locksim/run"
)

// Issue 36 items 4, 8 and 9: inputs that were silently overridden, had no
// bounds or sense, or got a message pointing the wrong way. Every row
// failed on the code before the issue (accepted, or another message).
func TestHostileFlags(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	scen := func(name, extra string) string {
		return file(name, "id: t\ndescription: x\nsource: y\n"+extra+"\nlocks: [fencing]\nexpect:\n  fencing: {agreed: safe}\n")
	}
	null := file("null.json", "null\n")
	jump := file("jump.json", `[{"kind":"clock-jump","start":1000000000,"targets":["n0"],"jump":9223372036854775807}]`)
	delay := file("delay.json", `[{"kind":"delay","start":1000000000,"duration":1000000000,"from":["c0"],"to":["n0"],"delay":9223372036854775807}]`)
	pause0 := file("pause0.json", `[{"kind":"node-pause","start":1000000000,"targets":["n0"]}]`)
	linkDir, linkFile, linkNowhere := filepath.Join(dir, "link-dir"), filepath.Join(dir, "link-file"), filepath.Join(dir, "link-nowhere")
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	for _, l := range [][2]string{{"out", linkDir}, {"null.json", linkFile}, {"nothing", linkNowhere}} {
		if err := os.Symlink(filepath.Join(dir, l[0]), l[1]); err != nil {
			t.Fatal(err)
		}
	}
	run := []string{"run", "--lock", "set-nx-cad", "--seed", "1"}
	cases := []struct {
		name string
		args []string
		want string // the one stderr line starts with "locksim: " + want
	}{
		// Item 4: silent overrides.
		{"hold-min above hold-max", append(run, "--hold-min", "10s", "--hold-max", "1s"), `--hold-min: 10s is above hold-max 1s`},
		{"hold-min alone above the scenario's max", append(run, "--hold-min", "2s"), `--hold-min: 2s is above the scenario's longest critical section (1s): give hold-max too`},
		{"hold-max alone below the scenario's min", append(run, "--hold-max", "10ms"), `--hold-max: 10ms is below the scenario's shortest critical section (50ms): give hold-min too`},
		{"hold-min alone in a scenario file", append(run, "--scenario", "drift", "--hold-min", "10s"), `--hold-min: 10s is above the scenario's longest critical section (2.97s): give hold-max too (lock set-nx-cad)`},
		{"faults null", append(run, "--faults", null), `--faults: ` + null + `: null is not a list of faults (write [] for none)`},
		{"lock twice", []string{"run", "--lock", "redlock", "--lock", "fencing", "--seed", "1"}, `--lock: given twice ("redlock", then "fencing"): one value only`},
		{"seed twice", []string{"run", "--lock", "redlock", "--seed", "1", "--seed", "2"}, `--seed: given twice ("1", then "2"): one value only`},
		{"duration twice", append(run, "--duration", "1s", "--duration", "2s"), `--duration: given twice ("1s", then "2s"): one value only`},
		{"scenario twice", append(run, "--scenario", "drift", "--scenario", "default"), `--scenario: given twice ("drift", then "default"): one value only`},
		{"sweep seeds twice", []string{"sweep", "--seeds", "3", "--seeds", "4", "--out", filepath.Join(dir, "sw")}, `--seeds: given twice ("3", then "4"): one value only`},
		// Item 8: bounds and sense.
		{"faults jump of 292 years", append(run, "--faults", jump), `--faults: ` + jump + `: faults[0].jump: 2562047h47m16.854775807s out of range -24h0m0s..24h0m0s`},
		{"faults delay of MaxInt64", append(run, "--faults", delay), `--faults: ` + delay + `: faults[0].delay: 2562047h47m16.854775807s out of range 0..24h0m0s`},
		{"nodes for a single-node lock", append(run, "--nodes", "3"), `--nodes: lock set-nx-cad talks to one Redis node (n0): 3 nodes would add 2 idle ones`},
		{"nodes for a consensus lock", []string{"run", "--lock", "zk-lock", "--seed", "1", "--nodes", "2"}, `--nodes: lock zk-lock keeps its state in a coordination service`},
		{"a day of 1000 clients", []string{"run", "--lock", "redlock", "--seed", "1", "--duration", "24h", "--clients", "1000"},
			`--duration, --clients: 1000 clients × 24h0m30s of virtual time need at least 172.9 million events (2 a client-second), more than the event budget of 50.0 million (--max-events)`},
		{"a budget too small", append(run, "--duration", "10m", "--clients", "100", "--max-events", "1000"), `--duration, --clients: 100 clients × 10m30s of virtual time need at least 126000 events`},
		{"max-events out of range", append(run, "--max-events", "10"), `--max-events: "10" is out of range (1000..1099511627776)`},
		// Item 9: messages that pointed the wrong way.
		{"20-digit count", append(run, "--scenario", scen("count.yaml", "clients: {count: 99999999999999999999}\nfaults: []")), `--scenario: ` + dir + `/count.yaml:4:18: clients.count: 99999999999999999999 is out of range for an integer`},
		{"zero-duration node pause in a file", append(run, "--scenario", scen("np.yaml", "faults: [{kind: node-pause, start: 1s, duration: 0s, targets: [n0]}]")), `--scenario: ` + dir + `/np.yaml:4:40: faults[0].duration: node-pause: duration must be positive`},
		{"zero-duration node pause in --faults", append(run, "--faults", pause0), `--faults: ` + pause0 + `: faults[0].duration: node-pause: duration must be positive`},
		{"empty values", append(run, "--scenario", scen("values.yaml", "faults: []\nsweep: {name: topology.nodes, values: []}")), `--scenario: ` + dir + `/values.yaml:5:31: sweep.values: empty: list the values to sweep`},
		{"sweep.param", append(run, "--scenario", scen("param.yaml", "faults: []\nsweep: {param: duration, values: [1s]}")), `--scenario: ` + dir + `/param.yaml:5:9: sweep.param: unknown field "param" (did you mean "name"?)`},
		{"counterexample link to a file", append(run, "--counterexample", linkFile), `--counterexample: "` + linkFile + `" is a symbolic link to a file, not a directory`},
		{"counterexample link to nothing", append(run, "--counterexample", linkNowhere), `--counterexample: "` + linkNowhere + `" is a symbolic link to nothing`},
		{"multilock with one node", []string{"run", "--lock", "redisson-multilock", "--seed", "1", "--nodes", "1"}, `--nodes: lock redisson-multilock runs 3 primary/replica groups of at least 2 nodes: want a multiple of 3 from 6 to 63, got 1`},
		{"misspelled command before flags", []string{"ru", "--lock", "x"}, `unknown command "ru" (did you mean "run"? commands: `},
		{"lock in capitals", []string{"run", "--lock", "Redlock", "--seed", "1"}, `--lock: unknown lock "Redlock" (did you mean "redlock"? one of: `},
		{"scenario misspelled", append(run, "--scenario", "clockjump"), `--scenario: unknown scenario "clockjump" (did you mean "clock-jump"? one of: `},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, noHost(t), c.args...)
			if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "locksim: "+c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q\n  want exit 64 and one line starting %q", code, stdout, stderr, "locksim: "+c.want)
			}
		})
	}
}

// A symlink to a directory is a directory to write the counterexample
// into (it was "exists and is not a directory").
func TestCounterexampleIntoLinkedDir(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--lock", "set-nx-cad", "--seed", "3", "--counterexample", link}, short...)
	if code, _, stderr := cli(t, testHost(t), args...); code == exitUsage || code == exitInternal {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// runJSON runs the CLI in-process with --json and returns its trace hash.
func runJSON(t *testing.T, args ...string) (hash, stderr string) {
	t.Helper()
	code, stdout, stderr := cli(t, testHost(t), append(args, "--json")...)
	if code == exitUsage || code == exitInternal {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	var r struct {
		Hash string `json:"trace_sha256"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	return r.Hash, stderr
}

// --hold-min alone takes effect (it was ignored: the same hash as without
// it), and the scenario's own bounds given as flags change nothing.
func TestHoldFlagsApplyAlone(t *testing.T) {
	base := append([]string{"run", "--lock", "set-nx-cad", "--seed", "1"}, short...)
	plain, _ := runJSON(t, base...)
	for _, c := range []struct {
		flags []string
		same  bool
	}{
		{[]string{"--hold-min", "50ms"}, true},
		{[]string{"--hold-max", "1s"}, true},
		{[]string{"--hold-min", "50ms", "--hold-max", "1s"}, true},
		{[]string{"--hold-min", "500ms"}, false},
		{[]string{"--hold-max", "100ms"}, false},
	} {
		h, _ := runJSON(t, append(append([]string(nil), base...), c.flags...)...)
		if (h == plain) != c.same {
			t.Errorf("%v: hash %.12s, without %.12s; want same=%v", c.flags, h, plain, c.same)
		}
	}
}

// A fault that never starts, or a schedule the heal cuts to slivers, is
// said before the run ("1 scheduled, 0 injected" said nothing).
func TestScheduleWarnings(t *testing.T) {
	late := filepath.Join(t.TempDir(), "late.json")
	if err := os.WriteFile(late, []byte(`[{"kind":"client-pause","start":20000000000,"duration":1000000000,"targets":["c0"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr := runJSON(t, append([]string{"run", "--lock", "set-nx-cad", "--seed", "1", "--faults", late}, short...)...)
	if want := "locksim: warning: fault client-pause@20s+1s c0 starts after the safety phase ends (at 10s): it will not be injected"; !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr %q\n  does not start with %q", stderr, want)
	}
	_, stderr = runJSON(t, "run", "--lock", "set-nx-cad", "--seed", "1", "--duration", "1ms", "--liveness", "1s")
	if want := "of their length by the heal at 1ms"; !strings.Contains(stderr, want) {
		t.Errorf("--duration 1ms: stderr %q has no %q", stderr, want)
	}
	// The faults an ordinary run schedules are said nothing about.
	if _, stderr := runJSON(t, append([]string{"run", "--lock", "set-nx-cad", "--seed", "1"}, short...)...); stderr != "" {
		t.Errorf("an ordinary run warned: %q", stderr)
	}
}

// --max-events is the budget the exhausted-budget error names, and the
// repro line keeps it.
func TestMaxEventsFlag(t *testing.T) {
	code, stdout, stderr := cli(t, testHost(t), "run", "--lock", "redlock", "--seed", "1", "--duration", "10s", "--liveness", "1s", "--max-events", "2000")
	if code != exitUnknown {
		t.Fatalf("exit %d, want %d; stderr %q", code, exitUnknown, stderr)
	}
	if want := "event budget of 2000 exhausted at t="; !strings.Contains(stderr, want) || !strings.Contains(stderr, "--max-events") {
		t.Errorf("stderr %q: want %q naming --max-events", stderr, want)
	}
	if !strings.Contains(stdout, "verdict:        unknown") {
		t.Errorf("summary:\n%s", stdout)
	}
	if r := (run.Spec{Lock: "redlock", Seed: 1, MaxEvents: 2000}).Repro(); !strings.HasSuffix(r, " --max-events 2000") {
		t.Errorf("repro %q lost --max-events", r)
	}
}

// Ctrl-C of a run says how far it got and what it did not write (it
// exited 130 silently), and leaves no trace file.
func TestRunInterruptSaysWhatWasLost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	cmd := exec.Command(bin, "run", "--lock", "redlock", "--seed", "1", "--clients", "1000", "--duration", "1m", "--trace", trace)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(errPipe)
	// The long world's cost is said once the interrupt is watched for.
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "locksim: a long world: 1000 clients × 1m30s of virtual time") {
		cmd.Process.Kill()
		t.Fatalf("first stderr line %q", sc.Text())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130; stderr %q", err, rest.String())
	}
	if want := "the run was not judged (no verdict, no summary, the --trace file was not written)"; !strings.Contains(rest.String(), want) {
		t.Errorf("stderr %q has no %q", rest.String(), want)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(trace), "*")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
}

// Inputs one command refused and its sibling accepted,
// or a conflict settled by a guess. Every row but "--locks twice" (the
// refusal --scenarios now matches) failed on the code before the issue
// (exit 0, or Slurm's shard silently taken).
func TestHostileIssue41(t *testing.T) {
	dir := t.TempDir()
	cacheFile := filepath.Join(dir, "cache-file")
	if err := os.WriteFile(cacheFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := []string{"report", "--plan", "--quick", "--scenarios", "no-faults", "--locks", "set-nx-cad"}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string // the one stderr line starts with "locksim: " + want
	}{
		{"report --plan --cache FILE", nil, append(plan, "--cache", cacheFile), fmt.Sprintf("--cache: %q is not a folder", cacheFile)},
		{"report --cache FILE", nil, []string{"report", "--quick", "--scenarios", "no-faults", "--locks", "set-nx-cad", "--cache", cacheFile, "--out", filepath.Join(dir, "r")}, fmt.Sprintf("--cache: %q is not a folder", cacheFile)},
		{"report --scenarios twice", nil, []string{"report", "--plan", "--quick", "--scenarios", "no-faults,pause-after-check,no-faults", "--locks", "set-nx-cad"}, `--scenarios: "no-faults" appears twice`},
		{"report --locks twice", nil, []string{"report", "--plan", "--quick", "--scenarios", "no-faults", "--locks", "set-nx-cad,set-nx-cad"}, `--locks: "set-nx-cad" appears twice`},
		{"--shard auto: Slurm and Kubernetes disagree",
			map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "JOB_COMPLETION_INDEX": "0", "LOCKSIM_SHARDS": "2"},
			[]string{"sweep", "--scenario", "no-faults", "--locks", "set-nx-cad", "--seeds", "2", "--shard", "auto", "--out", filepath.Join(dir, "sw")},
			"--shard: auto: the Slurm array task is shard 1 of 2 (SLURM_ARRAY_TASK_ID=1, SLURM_ARRAY_TASK_COUNT=2) but the Kubernetes Indexed Job says 0 of 2 (JOB_COMPLETION_INDEX=0, LOCKSIM_SHARDS=2)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP", "JOB_COMPLETION_INDEX", "LOCKSIM_SHARDS"} {
				t.Setenv(k, c.env[k])
			}
			code, stdout, stderr := cli(t, noHost(t), c.args...)
			if code != exitUsage || !strings.HasPrefix(stderr, "locksim: "+c.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and one line starting %q", code, stdout, stderr, exitUsage, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "sw")); err == nil {
		t.Errorf("the refused sweep created its folder")
	}
}
