package reports_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/reports"
)

// TestStageRefusesAFolderThatIsNotAReport: an --out
// folder that exists must be empty or hold an earlier report (its
// results.json is a report's); anything else is refused, untouched and
// with nothing staged beside it, unless forced.
func TestStageRefusesAFolderThatIsNotAReport(t *testing.T) {
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	report := `{"cells": [], "settings": {"seeds_per_cell": 1, "locksim": "locksim (devel) (go1.25)"}}`
	cases := []struct {
		name  string
		files map[string]string
		ok    bool
	}{
		{"empty", nil, true},
		{"earlier report", map[string]string{"results.json": report, "index.html": "x", "img/a.png": "x"}, true},
		{"docs folder", map[string]string{"README.md": "x", "img/diagram.png": "x", "index.html": "x"}, false},
		{"hidden file only", map[string]string{".keep": ""}, false},
		{"someone else's results.json", map[string]string{"results.json": `{"cells": [1, 2]}`}, false},
		{"results.json not JSON", map[string]string{"results.json": "cells, settings"}, false},
		{"results.json a folder", map[string]string{"results.json/x": "x"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, data := range c.files {
				write(filepath.Join(dir, filepath.FromSlash(name)), data)
			}
			if got := reports.IsReport(dir); got != (c.ok && len(c.files) > 0) {
				t.Errorf("IsReport = %v", got)
			}
			out, err := reports.Stage(dir, false)
			if c.ok {
				if err != nil {
					t.Fatalf("Stage: %v", err)
				}
				out.Discard()
			} else {
				if !errors.Is(err, reports.ErrNotReport) || !strings.Contains(err.Error(), dir) {
					t.Errorf("Stage: %v; want ErrNotReport naming %s", err, dir)
				}
				if ents, _ := os.ReadDir(parent); len(ents) != 1 {
					t.Errorf("%d entries beside the folder: a staging folder left behind", len(ents))
				}
				out, err = reports.Stage(dir, true)
				if err != nil {
					t.Fatalf("Stage, forced: %v", err)
				}
				out.Discard()
			}
			for name, data := range c.files {
				if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil || string(b) != data {
					t.Errorf("%s changed: %q, %v", name, b, err)
				}
			}
		})
	}
}
