package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The hidden --cpuprofile writes a profile (here of a dry run), and a
// file it cannot create is an input error naming the flag.
func TestReportCPUProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	code, _, stderr := cli(t, testHost(t), "report", "--plan", "--scenarios", "no-faults", "--locks", "set-nx-cad", "--cpuprofile", prof)
	if code != exitSafe {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Fatalf("no profile written: %v", err)
	}
	code, _, stderr = cli(t, testHost(t), "report", "--plan", "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "cpu.prof"))
	if code != exitUsage || !strings.Contains(stderr, "--cpuprofile: ") {
		t.Fatalf("exit %d, stderr %q; want %d naming --cpuprofile", code, stderr, exitUsage)
	}
}
