package locksim_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxSourceLines bounds every non-test Go file of the module: a file that
// grows past it is split by concern.
const maxSourceLines = 600

// TestSourceFilesBounded: no Go source file (tests aside) is longer than
// maxSourceLines lines.
func TestSourceFilesBounded(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "." && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		if n := bytes.Count(b, []byte("\n")); n > maxSourceLines {
			t.Errorf("%s: %d lines, over %d: split it by concern", path, n, maxSourceLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files: the walk is broken", checked)
	}
}
