package run

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceLinesBounded: a trace file's lines are read back with bounds:
// a first line of more than maxHeaderLine bytes, or an event
// line of more than maxEventLine, is an error naming the file and line,
// not a read into memory of whatever the file holds.
func TestTraceLinesBounded(t *testing.T) {
	dir := t.TempDir()
	header := `{"locksim_run":{"lock":"redlock"}}` + "\n"
	longHeader := filepath.Join(dir, "h.jsonl")
	os.WriteFile(longHeader, []byte(`{"locksim_run":{"lock":"`+strings.Repeat("x", maxHeaderLine)+`"}}`+"\n"), 0o644)
	longEvent := filepath.Join(dir, "e.jsonl")
	os.WriteFile(longEvent, []byte(header+`{"t":1}`+"\n"+strings.Repeat("x", maxEventLine+1)), 0o644)
	if _, err := CheckTrace(longHeader); err == nil || !strings.Contains(err.Error(), longHeader+": line 1 is longer than 4194304 bytes") {
		t.Errorf("a long header: %v", err)
	}
	f, _ := os.Open(longHeader)
	defer f.Close()
	if _, err := ReadHeader(longHeader, bufio.NewReader(f)); err == nil || !strings.Contains(err.Error(), "line 1 is longer than") {
		t.Errorf("ReadHeader of a long header: %v", err)
	}
	if _, err := CheckTrace(longEvent); err == nil || !strings.Contains(err.Error(), longEvent+": line 3 is longer than 1048576 bytes") {
		t.Errorf("a long event line: %v", err)
	}
	// No footer: a file written before footers passes, to be compared.
	old := filepath.Join(dir, "old.jsonl")
	os.WriteFile(old, []byte(header+`{"t":1}`+"\n"), 0o644)
	if f, err := CheckTrace(old); f != nil || err != nil {
		t.Errorf("a file without a footer: %v %v", f, err)
	}
	if _, err := CheckTrace("/dev/zero"); err == nil || !strings.Contains(err.Error(), `cannot read "/dev/zero": is a device`) {
		t.Errorf("/dev/zero: %v", err)
	}
}
