package reports

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The staging folder of a report that was killed (its lock gone with its
// process: here, closed) is removed by the next report to the same
// place; a live report's is not, nor anything not recognisably a staging
// folder of ours.
func TestStageRemovesKilledReports(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "out")
	// A report process staged, then SIGKILLed.
	cmd := exec.Command(os.Args[0], "-test.run=^TestStageHelper$")
	cmd.Env = append(os.Environ(), "LOCKSIM_STAGE_HELPER="+final)
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	line, err := bufio.NewReader(outp).ReadString('\n')
	killedDir, ok := strings.CutPrefix(strings.TrimSpace(line), "staged ")
	if err != nil || !ok {
		cmd.Process.Kill()
		t.Fatalf("the helper said %q, %v", line, err)
	}
	live, err := Stage(final, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Discard()
	if _, err := os.Stat(killedDir); err != nil {
		t.Fatalf("a live report's staging folder was removed: %v", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	foreign := map[string]bool{ // name: a folder (else a file)
		".out.tmp-mine":   true, // no owner file: not ours, or an older locksim's
		".out.tmp-file":   false,
		".other.tmp-1234": true, // another destination's
	}
	for name, dir := range foreign {
		p := filepath.Join(parent, name)
		if dir {
			os.Mkdir(p, 0o755)
		} else {
			os.WriteFile(p, nil, 0o644)
		}
	}
	os.WriteFile(filepath.Join(parent, ".other.tmp-1234", ownerFile), nil, 0o644)
	next, err := Stage(final, false)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Discard()
	if _, err := os.Stat(killedDir); !os.IsNotExist(err) {
		t.Errorf("the killed report's staging folder is still there (%v)", err)
	}
	if _, err := os.Stat(live.Dir()); err != nil {
		t.Errorf("a live report's staging folder was removed: %v", err)
	}
	for name := range foreign {
		if _, err := os.Lstat(filepath.Join(parent, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
	// A committed report holds no owner file, and leaves no staging folder.
	if err := next.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(final, ownerFile)); !os.IsNotExist(err) {
		t.Errorf("the report holds the owner file (%v)", err)
	}
	live.Discard()
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		if _, ours := foreign[e.Name()]; strings.HasPrefix(e.Name(), ".out.tmp-") && !ours {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// TestStageHelper is the killed report of TestStageRemovesKilledReports:
// it stages a report, says where, and waits to be killed (or for its
// stdin to close).
func TestStageHelper(t *testing.T) {
	final := os.Getenv("LOCKSIM_STAGE_HELPER")
	if final == "" {
		t.Skip("a helper process of TestStageRemovesKilledReports")
	}
	out, err := Stage(final, false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(out.Dir(), "results.json"), []byte("{}"), 0o644)
	fmt.Printf("staged %s\n", out.Dir())
	io.Copy(io.Discard, os.Stdin)
}
