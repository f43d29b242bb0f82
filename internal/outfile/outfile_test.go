package outfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A File is its path only once committed: before that, and after a
// discard, only the temp file beside it exists (then nothing).
func TestFileCommitDiscard(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	f, err := Create(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f.Raw(), "header\n")
	io.WriteString(f.Body(), "a\nb\n")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the file exists before Commit: %v", err)
	}
	if f.Body().Lines != 2 {
		t.Errorf("Body counted %d lines, want 2", f.Body().Lines)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "header\na\nb\n" {
		t.Errorf("committed %q", b)
	}
	g, err := Create(filepath.Join(dir, "u.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	g.Discard()
	g.Discard() // twice is harmless
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "t.jsonl" {
		t.Errorf("the folder holds %v, want only t.jsonl", ents)
	}
}

// Past its bound Body drops the rest and says so; Raw is not bounded.
func TestCappedBound(t *testing.T) {
	var sb strings.Builder
	c := Capped{W: &sb, Max: 5}
	io.WriteString(c.W, "raw-")
	io.WriteString(&c, "ab\n")
	io.WriteString(&c, "cd\n")
	if !c.Over || sb.String() != "raw-ab\n" || c.Lines != 1 {
		t.Errorf("Over %v, wrote %q, %d lines", c.Over, sb.String(), c.Lines)
	}
}

// A directory, a missing folder and a read-only file are refused by name.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	os.WriteFile(ro, nil, 0o444)
	for path, want := range map[string]string{
		dir:                               "is a directory",
		filepath.Join(dir, "no", "x.txt"): "cannot write",
		ro:                                "is read-only",
	} {
		if err := CheckWritable(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckWritable(%s) = %v, want %q", path, err, want)
		}
	}
	// A new file in a read-only folder: refused before anything is
	// written, even as root (the real arm used to find out after its
	// run).
	roDir := filepath.Join(dir, "rodir")
	if err := os.Mkdir(roDir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(roDir, 0o755) })
	want := fmt.Sprintf("cannot write %q: %s is read-only", filepath.Join(roDir, "x.txt"), roDir)
	if err := CheckWritable(filepath.Join(roDir, "x.txt")); err == nil || err.Error() != want {
		t.Errorf("a new file in a read-only folder: %v, want %q", err, want)
	}
	if ents, _ := os.ReadDir(roDir); len(ents) > 0 {
		t.Errorf("the read-only folder holds %v", ents)
	}
	if err := CheckWritable(filepath.Join(dir, "new.txt")); err != nil {
		t.Errorf("a new file in a folder: %v", err)
	}
	if err := CheckDir(filepath.Join(dir, "a", "b")); err != nil {
		t.Errorf("a new folder under a writable one: %v", err)
	}
	if err := CheckDir(ro); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("CheckDir on a file: %v", err)
	}
}
