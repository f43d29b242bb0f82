package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSearch: a search over a naive lock (set-nx-del: SET NX EX, release
// by a plain DEL) with a pinned seed finds an unsafe run (at its first
// schedule armed, its third with --unarmed; the shrinking bounded to keep
// the test quick under -race),
// exits 1, prints
// the shrunk counterexample and a repro line whose faults file it wrote;
// the repro, run, is unsafe too; and the same search again prints the
// same bytes.
func TestSearch(t *testing.T) {
	out := filepath.Join(t.TempDir(), "found.faults.json")
	args := []string{"search", "--lock", "set-nx-del", "--seed", "8", "--checks", "20", "--shrink-runs", "5", "--shrink-out", out}
	code, stdout, stderr := cli(t, testHost(t), args...)
	if code != exitUnsafe || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 1 and nothing\n%s", code, stderr, stdout)
	}
	for _, want := range []string{"found by schedule 1 of 20 (seed 8, case seed 8): world seed 716, 3 faults, 5 clients\n", "verdict:        unsafe", "shrunk:         ", "shrunk faults:  " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	m := regexp.MustCompile(`(?m)^repro: +locksim (run --scenario default --lock set-nx-del --seed \d+ .*--faults (\S+))$`).FindStringSubmatch(stdout)
	if m == nil || m[2] != out {
		t.Fatalf("no repro line running the faults file %s:\n%s", out, stdout)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("faults file: %v", err)
	}
	if code, rout, rerr := cli(t, testHost(t), strings.Fields(m[1])...); code != exitUnsafe {
		t.Fatalf("the repro %q: exit %d, want 1 (unsafe)\n%s%s", m[1], code, rout, rerr)
	}
	if code2, stdout2, _ := cli(t, testHost(t), args...); code2 != code || stdout2 != stdout {
		t.Fatalf("the same search twice: exit %d then %d, outputs differ:\n%s\n---\n%s", code, code2, stdout, stdout2)
	}
	// --unarmed draws the search's schedules as before armed faults.
	code, stdout, _ = cli(t, testHost(t), append(args, "--unarmed")...)
	if want := "found by schedule 3 of 20 (seed 8, case seed 11): world seed 7, 2 faults, 5 clients\n"; code != exitUnsafe || !strings.Contains(stdout, want) {
		t.Errorf("--unarmed: exit %d, output lacks %q:\n%s", code, want, stdout)
	}
}

// A liveness failure is printed unshrunk, its schedule in the faults
// file its repro runs, and exits 3: setnx-del (SETNX, then EXPIRE) leaves
// a key without expiry when its node crashes between the two.
func TestSearchLiveness(t *testing.T) {
	out := filepath.Join(t.TempDir(), "found.faults.json")
	code, stdout, stderr := cli(t, testHost(t), "search", "--lock", "setnx-del", "--kinds", "crash", "--seed", "1", "--checks", "20", "--shrink-out", out)
	if code != exitLiveness || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 3 and nothing\n%s", code, stderr, stdout)
	}
	for _, want := range []string{"found by schedule 3 of 20 (seed 1, case seed 4)", "verdict:        liveness", "repro:          locksim run --scenario default --lock setnx-del --seed 1 --faults " + out + "\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "shrunk:") {
		t.Errorf("a liveness failure was shrunk:\n%s", stdout)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("faults file: %v", err)
	}
}

// A search that finds nothing says so, with its budget and seed, and
// exits 0.
func TestSearchNothingFound(t *testing.T) {
	code, stdout, stderr := cli(t, testHost(t), "search", "--lock", "fencing", "--kinds", "delay", "--checks", "2", "--seed", "5")
	want := "no violation in 2 schedules (seed 5) of lock fencing in scenario default\n"
	if code != exitSafe || stdout != want || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, want)
	}
}

func TestSearchBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, `--lock: required (one of: `},
		{[]string{"--lock", "no-such-lock"}, `--lock: unknown lock "no-such-lock"`},
		{[]string{"--lock", "set-nx-del", "--scenario", "no-such-scenario"}, `--scenario: unknown scenario "no-such-scenario"`},
		{[]string{"--lock", "set-nx-del", "--scenario", ""}, `--scenario: empty value`},
		{[]string{"--lock", "set-nx-del", "--kinds", "pause"}, `--kinds: unknown fault kind "pause" (one of: client-pause, `},
		{[]string{"--lock", "set-nx-del", "--kinds", "failover"}, `--kinds: no kind of failover applies to lock set-nx-del in scenario default (failover needs a replicated topology)`},
		{[]string{"--lock", "set-nx-del", "--checks", "0"}, `--checks: "0" is out of range (1..100000)`},
		{[]string{"--lock", "set-nx-del", "--shrink-runs", "0"}, `--shrink-runs: "0" is out of range (1..100000)`},
		{[]string{"--lock", "set-nx-del", "--seed", "-1"}, `--seed: "-1" is out of range`},
		{[]string{"--lock", "set-nx-del", "--shrink-out", filepath.Join(t.TempDir(), "no-such-dir", "x.json")}, `--shrink-out: cannot write `},
		{[]string{"--lock", "set-nx-del", "extra"}, `search: unexpected argument "extra"`},
		{[]string{"--lock", "etcd-mutex"}, `--lock: etcd-mutex runs on the `},
	} {
		code, stdout, stderr := cli(t, noHost(t), append([]string{"search"}, c.args...)...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "locksim: "+c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want 64 and %q", c.args, code, stderr, c.want)
		}
	}
}
