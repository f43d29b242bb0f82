package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/run"
)

func TestShrinkBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notJSON := write("bad.json", "client-pause@1s c0")
	unknownField := write("field.json", `[{"kind":"client-pause","start":1,"duration":1,"targets":["c0"],"at_phase":"x"}]`)
	unknownProc := write("proc.json", `[{"kind":"client-pause","start":1,"duration":1000,"targets":["c9"]}]`)
	badFault := write("fault.json", `[{"kind":"client-pause","start":1000,"targets":["c0"]}]`)
	trailing := write("trailing.json", `[] []`)
	base := []string{"run", "--lock", "set-nx-cad", "--seed", "1"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--shrink-out", filepath.Join(dir, "x.json")}, `--shrink-out: needs --shrink`},
		{[]string{"--shrink-runs", "5"}, `--shrink-runs: needs --shrink`},
		{[]string{"--shrink", "--shrink-runs", "0"}, `--shrink-runs: "0" is out of range (1..100000)`},
		{[]string{"--shrink", "--shrink-out", filepath.Join(dir, "no-such-dir", "x.json")}, `--shrink-out: cannot write `},
		{[]string{"--shrink", "--shrink-out", dir}, `--shrink-out: "`},
		{[]string{"--faults", filepath.Join(dir, "missing.json")}, `--faults: cannot read `},
		{[]string{"--faults", dir}, `--faults: "`},
		{[]string{"--faults", notJSON}, `--faults: ` + notJSON + `: not a JSON list of faults`},
		{[]string{"--faults", unknownField}, `--faults: ` + unknownField + `: not a JSON list of faults: json: unknown field "at_phase"`},
		{[]string{"--faults", trailing}, `--faults: ` + trailing + `: trailing data`},
		{[]string{"--faults", unknownProc}, `--faults: ` + unknownProc + `: faults[0]: client-pause: unknown process "c9"`},
		{[]string{"--faults", badFault}, `--faults: ` + badFault + `: faults[0].duration: client-pause: duration must be positive (a client-pause of 0s does nothing)`},
	}
	for _, c := range cases {
		code, stdout, stderr := cli(t, noHost(t), append(append([]string(nil), base...), c.args...)...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "locksim: "+c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want 64 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestRunFaultsFile: --faults replaces the scenario's schedule, and the
// repro names the file.
func TestRunFaultsFile(t *testing.T) {
	want := []faults.Fault{
		{Kind: faults.ClientPause, Start: time.Second, Duration: 4 * time.Second, Targets: []string{"c1"}, At: "after-check"},
		{Kind: faults.Partition, Start: 2 * time.Second, Duration: time.Second, From: []string{"c0"}, To: []string{"n0"}, OneWay: true},
	}
	path := filepath.Join(t.TempDir(), "f.json")
	if err := run.WriteFaults(path, want); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--lock", "set-nx-cad", "--seed", "5", "--clients", "2", "--faults", path, "--json"}, short...)
	code, stdout, stderr := cli(t, testHost(t), args...)
	if stderr != "" || code == exitUsage || code == exitInternal {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var r run.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.FaultSchedule, want) || r.Clients != 2 {
		t.Errorf("schedule %v with %d clients, want %v with 2", r.FaultSchedule, r.Clients, want)
	}
	if r.Counterexample != nil && !strings.HasSuffix(r.Counterexample.Repro, " --clients 2 --duration 10s --liveness 5s --faults "+path) {
		t.Errorf("repro %q does not end with the flags and --faults", r.Counterexample.Repro)
	}
}

// TestRunShrink: an unsafe run with --shrink reports the shrunk run in
// --json (faults and clients are the shrunk numbers, repro has --clients
// and --faults), writes the schedule file, and running the repro command
// line gives an unsafe run with the same kind of violation.
func TestRunShrink(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "shrunk.json")
	// The first unsafe seed (about 1 in 10 in this short world); a safe
	// run does not shrink, so the search is cheap.
	var code int
	var stdout, stderr, seed string
	for s := 1; s <= 100; s++ {
		seed = strconv.Itoa(s)
		args := append([]string{"run", "--lock", "set-nx-cad", "--seed", seed, "--json", "--shrink", "--shrink-out", out}, short...)
		if code, stdout, stderr = cli(t, testHost(t), args...); code == exitUnsafe || stderr != "" {
			break
		}
	}
	if code != exitUnsafe || stderr != "" {
		t.Fatalf("seed %s: exit %d, stderr %q (want an unsafe run among seeds 1..100)", seed, code, stderr)
	}
	var r run.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	ce := r.Counterexample
	if ce == nil || ce.Shrink == nil || ce.Violation == nil {
		t.Fatalf("counterexample %+v", ce)
	}
	s := ce.Shrink
	t.Logf("shrunk from %d faults, %d clients to %d, %d in %d runs: %v", s.FromFaults, s.FromClients, ce.Faults, ce.Clients, s.Runs, s.Schedule)
	if ce.Faults != len(s.Schedule) || s.FromFaults != len(r.FaultSchedule) || s.FromClients != r.Clients ||
		ce.Faults > s.FromFaults || ce.Clients > s.FromClients || s.Runs < 1 || s.Runs > 300 || s.Kind != ce.Violation.Kind {
		t.Errorf("shrink report %+v with faults %d clients %d", s, ce.Faults, ce.Clients)
	}
	wantRepro := "locksim run --scenario default --lock set-nx-cad --seed " + seed + " --clients " + strconv.Itoa(ce.Clients) +
		" --duration 10s --liveness 5s --faults " + out
	if ce.Repro != wantRepro {
		t.Errorf("repro %q\nwant  %q", ce.Repro, wantRepro)
	}
	fs, err := run.ReadFaults(out)
	if err != nil || !reflect.DeepEqual(fs, s.Schedule) && !(len(fs) == 0 && len(s.Schedule) == 0) {
		t.Fatalf("the file holds %v (%v), want %v", fs, err, s.Schedule)
	}

	// The repro reproduces.
	code, stdout, stderr = cli(t, testHost(t), append(strings.Fields(ce.Repro)[1:], "--json")...)
	if code != exitUnsafe {
		t.Fatalf("repro: exit %d, stderr %q", code, stderr)
	}
	var again run.Report
	if err := json.Unmarshal([]byte(stdout), &again); err != nil {
		t.Fatal(err)
	}
	if again.Clients != ce.Clients || len(again.FaultSchedule) != ce.Faults {
		t.Errorf("repro ran %d clients, %d faults; want %d, %d", again.Clients, len(again.FaultSchedule), ce.Clients, ce.Faults)
	}
	switch s.Kind {
	case "resource":
		if again.ResourceViolations == 0 {
			t.Errorf("repro: no resource violation: %s", again.VerdictReason)
		}
	case "lease-overlap":
		if again.LeaseOverlaps == 0 {
			t.Errorf("repro: no lease overlap: %s", again.VerdictReason)
		}
	}

	// The human summary lists the shrunk schedule, one fault a line, and
	// still ends with the original run's trace hash.
	code, stdout, _ = cli(t, testHost(t), append([]string{"run", "--lock", "set-nx-cad", "--seed", seed, "--shrink", "--shrink-out", out}, short...)...)
	if code != exitUnsafe || !strings.Contains(stdout, "\nshrunk:") || !strings.Contains(stdout, "\nrepro:          "+wantRepro+"\n") {
		t.Errorf("summary:\n%s", stdout)
	}
	for _, f := range s.Schedule {
		if !strings.Contains(stdout, "\n                "+f.String()+"\n") {
			t.Errorf("summary does not list %s:\n%s", f, stdout)
		}
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if last := lines[len(lines)-1]; last != "trace sha256: "+r.TraceSHA256 {
		t.Errorf("last line %q, want the original run's hash %s", last, r.TraceSHA256)
	}
}

// TestListCanaries: canaries are hidden from 'list locks' and shown with
// --canaries; run accepts them.
func TestListCanaries(t *testing.T) {
	canaries := catalogue.CanaryIDs()
	if len(canaries) < 4 {
		t.Fatalf("canaries %v", canaries)
	}
	_, plain, _ := cli(t, noHost(t), "list", "locks")
	code, all, stderr := cli(t, noHost(t), "list", "locks", "--canaries")
	if code != 0 || stderr != "" {
		t.Fatalf("list locks --canaries: exit %d, %q", code, stderr)
	}
	for _, id := range canaries {
		if strings.Contains(plain, id) {
			t.Errorf("list locks shows %s", id)
		}
		if !strings.Contains(all, "\n"+id+" ") && !strings.HasPrefix(all, id+" ") {
			t.Errorf("list locks --canaries does not show %s", id)
		}
	}
	if got, want := strings.Count(all, "\n"), len(catalogue.AllIDs()); got != want {
		t.Errorf("list locks --canaries printed %d lines, want %d", got, want)
	}
	code, _, stderr = cli(t, testHost(t), append([]string{"run", "--lock", canaries[0], "--seed", "1"}, short...)...)
	if code == exitUsage || code == exitInternal {
		t.Errorf("run --lock %s: exit %d, %q", canaries[0], code, stderr)
	}
}
