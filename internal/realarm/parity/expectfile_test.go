package parity

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/scenarios"
)

const goodExpect = `# a user's driver
library: mylock 1.0
expect:
  set-nx-cad:
    no-faults: {verdict: safe, why: "SET NX PX (mylock.py 12)"}
    pause-after-check:
      verdict: unsafe
      why: >-
        no validity
        (mylock.py 30-31)
  redlock:
`

// TestParseExpect: a good file gives its worlds, scenarios in order,
// verdicts and reasons (a folded block joined), and a world listed with
// no scenarios.
func TestParseExpect(t *testing.T) {
	f, err := ParseExpect("expect.yaml", []byte(goodExpect))
	if err != nil {
		t.Fatal(err)
	}
	if f.Library != "mylock 1.0" || f.Resembles != "" || len(f.Worlds) != 2 || len(f.Worlds[RedlockWorld]) != 0 {
		t.Errorf("parsed %+v", f)
	}
	if e := f.Worlds[DriverWorld]["pause-after-check"]; e.Verdict != "unsafe" || e.Why != "no validity (mylock.py 30-31)" {
		t.Errorf("pause-after-check: %+v", e)
	}
	if e := f.Worlds[DriverWorld]["no-faults"]; e.Verdict != "safe" || e.Why != "SET NX PX (mylock.py 12)" {
		t.Errorf("no-faults: %+v", e)
	}
	if got := strings.Join(f.Order[DriverWorld], ","); got != "no-faults,pause-after-check" {
		t.Errorf("order %s", got)
	}
}

// TestParseExpectBad: every bad file is an error naming the file, the
// line and the field, and saying what is wrong; none panics.
func TestParseExpectBad(t *testing.T) {
	entry := "expect:\n  set-nx-cad:\n    no-faults:\n"
	for _, c := range []struct {
		name, text string
		line       int
		field      string
		msg        string
	}{
		{"unknown top field", "library: x\nexpected: {}\n", 2, "expected", "unknown field"},
		{"unknown entry field", entry + "      verdict: safe\n      reason: SET NX (a.py 1)\n", 5, "expect.set-nx-cad.no-faults.reason", "unknown field"},
		{"unknown verdict", entry + "      verdict: maybe\n      why: x (a.py 1)\n", 4, "expect.set-nx-cad.no-faults.verdict", `unknown verdict "maybe"`},
		{"unknown scenario", "expect:\n  set-nx-cad:\n    no-fault: {verdict: safe, why: x}\n", 3, "expect.set-nx-cad.no-fault", `unknown scenario "no-fault" (did you mean "no-faults"?`},
		{"unknown world", "expect:\n  zookeeper: {}\n", 2, "expect.zookeeper", `unknown world "zookeeper"`},
		{"missing why", entry + "      verdict: safe\n", 3, "expect.set-nx-cad.no-faults.why", "missing"},
		{"empty why", entry + "      verdict: safe\n      why: \"  \"\n", 3, "expect.set-nx-cad.no-faults.why", "missing"},
		{"missing verdict", entry + "      why: x (a.py 1)\n", 3, "expect.set-nx-cad.no-faults.verdict", "missing"},
		{"why not a string", entry + "      verdict: safe\n      why: [a]\n", 5, "expect.set-nx-cad.no-faults.why", "want a string"},
		{"entry not a mapping", entry + "      - safe\n", 4, "expect.set-nx-cad.no-faults", "want a mapping"},
		{"twice", "expect:\n  set-nx-cad:\n    no-faults: {verdict: safe, why: x}\n    no-faults: {verdict: unsafe, why: y}\n", 4, "", "already defined"},
		{"no expect", "library: x\n", 0, "expect", "missing"},
		{"a list", "- a\n", 1, "", "want a mapping"},
		{"bad yaml", "expect: {set-nx-cad: [\n", 1, "", ""},
		{"two documents", "library: a\n---\nlibrary: b\n", 3, "", "more than one YAML document"},
		{"deep flow", "expect: " + strings.Repeat("[", 5000), 1, "", "nested deeper"},
		{"empty", "# nothing\n", 0, "", "empty expectations file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseExpect("d/expect.yaml", []byte(c.text))
			var fe *scenarios.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want a FileError", err, err)
			}
			if fe.File != "d/expect.yaml" || (c.line > 0 && fe.Line != c.line) || fe.Field != c.field || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("%q: got file %s line %d field %q msg %q; want line %d field %q msg containing %q", err, fe.File, fe.Line, fe.Field, fe.Msg, c.line, c.field, c.msg)
			}
		})
	}
}

// writeDriver makes dir/name a driver folder: an executable driver.py
// (its body a stub: DirArms does not run it) and, if expect is not "",
// its expectations file.
func writeDriver(t *testing.T, dir, name, expect string) {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "driver.py"), []byte("#!/usr/bin/python3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if expect != "" {
		if err := os.WriteFile(filepath.Join(d, ExpectFileName), []byte(expect), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDirArms: any folder of drivers makes the columns: a user's driver
// with its file (its expectations, its scenarios beyond the world's rows
// appended), one without (set-nx-cad's world only, no expectations), a
// shipped one beside them (a symlink), a folder that is no driver
// skipped; a bad file, a folder with an expectations file but no driver,
// or no driver at all is an error naming it.
func TestDirArms(t *testing.T) {
	dir := t.TempDir()
	writeDriver(t, dir, "mine", "expect:\n  set-nx-cad:\n    no-faults: {verdict: safe, why: x}\n    drift: {verdict: unsafe, why: y}\n")
	writeDriver(t, dir, "bare", "")
	if err := os.Mkdir(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("../../../drivers/python-set-nx-cad")
	if err := os.Symlink(abs, filepath.Join(dir, control)); err != nil {
		t.Fatal(err)
	}
	arms, err := DirArms(dir, DriverWorld)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range arms {
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != "go set-nx-cad,bare,mine,"+control {
		t.Fatalf("columns %v", names)
	}
	if arms[1].Expectations != "" || len(arms[1].expect) != 0 || arms[2].expect["no-faults"].Verdict != "safe" || arms[3].expect["failover"].Verdict != "unsafe" {
		t.Errorf("expectations: %+v", arms)
	}
	if got := rows(DriverWorld, arms); got[len(got)-1] != "drift" || len(got) != len(DriverScenarios())+1 {
		t.Errorf("rows %v, want the world's then drift", got)
	}
	if _, err := DirArms(dir, RedlockWorld); err == nil || !strings.Contains(err.Error(), "no driver for redlock's world") {
		t.Errorf("redlock's world with no driver listing it: %v", err)
	}

	bad := t.TempDir()
	writeDriver(t, bad, "mine", "expect:\n  set-nx-cad:\n    no-faults: {verdict: sure, why: x}\n")
	if _, err := DirArms(bad, DriverWorld); err == nil || !strings.Contains(err.Error(), filepath.Join(bad, "mine", ExpectFileName)+":3:") {
		t.Errorf("a bad expectations file: %v, want its path and line", err)
	}
	nodrv := t.TempDir()
	if err := os.MkdirAll(filepath.Join(nodrv, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nodrv, "x", ExpectFileName), []byte(goodExpect), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DirArms(nodrv, DriverWorld); err == nil || !strings.Contains(err.Error(), "want one executable file named driver*") {
		t.Errorf("an expectations file without a driver: %v", err)
	}
	if _, err := DirArms(t.TempDir(), DriverWorld); err == nil || !strings.Contains(err.Error(), "no driver") {
		t.Errorf("an empty folder: %v", err)
	}
}

// FuzzParseExpect: any bytes give a file whose every expectation has a
// known verdict and a reason, or a FileError naming the file; never a
// panic.
func FuzzParseExpect(f *testing.F) {
	f.Add([]byte(goodExpect))
	f.Add([]byte("expect:\n  set-nx-cad:\n    no-faults: {verdict: safe, why: x}\n"))
	f.Add([]byte("expect: {fencing: {no-faults: {verdict: liveness, why: |\n  y\n}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := ParseExpect("f.yaml", data)
		if err != nil {
			var fe *scenarios.FileError
			if !errors.As(err, &fe) || fe.File != "f.yaml" {
				t.Fatalf("error %v (%T): want a FileError naming f.yaml", err, err)
			}
			return
		}
		if len(ef.Worlds) == 0 {
			t.Fatal("a file with no world accepted")
		}
		for w, m := range ef.Worlds {
			if len(ef.Order[w]) != len(m) {
				t.Fatalf("%s: order %v for %d expectations", w, ef.Order[w], len(m))
			}
			for sc, e := range m {
				if (e.Verdict != "safe" && e.Verdict != "unsafe" && e.Verdict != "liveness") || strings.TrimSpace(e.Why) == "" {
					t.Fatalf("%s × %s: %+v accepted", w, sc, e)
				}
			}
		}
	})
}
