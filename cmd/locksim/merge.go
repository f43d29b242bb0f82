package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
)

func newMergeCmd(stdout io.Writer) *cobra.Command {
	var out string
	charts := true
	cmd := &cobra.Command{
		Use:   "merge --out DIR SHARD_DIR...",
		Short: "Join the directories of a sharded sweep into one",
		Long: `Join the output directories of one sweep run as shards (--shard i/n) into
DIR: results.jsonl in job order (equal, byte for byte, to what the sweep
writes when run unsharded), sweep.json, results.csv, the rate summary and
charts. Every shard 0..n-1 must be given, each complete; a missing or
unfinished shard, a repeated one, or a directory of another sweep is an
error.`,
		Example: `  locksim merge --out merged shard-0 shard-1 shard-2`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf("merge: --out: required (the directory to write)")
			}
			if len(args) == 0 {
				return usageErrorf("merge: no shard directories given")
			}
			return merge(out, args, stdout, charts)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the merged sweep to `DIR`; required")
	cmd.Flags().BoolVar(&charts, "charts", true, "draw the rates (rates-*.png and .svg)")
	return cmd
}

// merge checks that dirs are the complete shards of one sweep and writes
// the unsharded result into out.
func merge(out string, dirs []string, stdout io.Writer, charts bool) error {
	var spec *sweepSpec
	seen := map[int]string{}
	var lines []sweepLine
	absOut, _ := filepath.Abs(out)
	for _, dir := range dirs {
		if abs, _ := filepath.Abs(dir); abs == absOut {
			return usageErrorf("merge: --out %q is also an input", out)
		}
		data, err := os.ReadFile(filepath.Join(dir, sweepSpecFile))
		if err != nil {
			return usageErrorf("merge: %s: not a sweep directory (%v)", dir, unwrapPathError(err))
		}
		var s sweepSpec
		if err := json.Unmarshal(data, &s); err != nil || s.Format != 1 || s.Shards < 1 {
			return usageErrorf("merge: %s: unreadable %s", dir, sweepSpecFile)
		}
		if spec == nil {
			spec = &s
		} else {
			a, b := *spec, s
			a.Shard, b.Shard = 0, 0
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if string(ja) != string(jb) {
				return usageErrorf("merge: %s is a different sweep (%s) from %s (%s)", dir, s.describe(), dirs[0], spec.describe())
			}
		}
		if prev, dup := seen[s.Shard]; dup {
			return usageErrorf("merge: %s and %s are both shard %d/%d", prev, dir, s.Shard, s.Shards)
		}
		seen[s.Shard] = dir
		mine := 0
		for i := 0; i < s.total(); i++ {
			if s.mine(i) {
				mine++
			}
		}
		path := filepath.Join(dir, sweepResultsFile)
		ls, err := readLines(path)
		if errors.Is(err, os.ErrNotExist) {
			ls, err = nil, nil
		}
		if err != nil {
			return usageErrorf("merge: %v", err)
		}
		got := map[int]bool{}
		for i, l := range ls {
			if !s.matches(l) || got[l.Job] {
				return usageErrorf("merge: %s line %d is not a result of shard %d/%d", path, i+1, s.Shard, s.Shards)
			}
			got[l.Job] = true
		}
		if len(ls) != mine {
			return usageErrorf("merge: %s: shard %d/%d has %d of its %d jobs; rerun its sweep command to finish it", dir, s.Shard, s.Shards, len(ls), mine)
		}
		lines = append(lines, ls...)
	}
	for i := 0; i < spec.Shards; i++ {
		if _, ok := seen[i]; !ok {
			return usageErrorf("merge: shard %d/%d is missing", i, spec.Shards)
		}
	}
	slices.SortFunc(lines, func(a, b sweepLine) int { return a.Job - b.Job })
	merged := *spec
	merged.Shard, merged.Shards = 0, 1
	specJSON, _ := json.MarshalIndent(merged, "", "  ")
	// A results folder belongs to one sweep: --out may be new, empty, or
	// this very sweep's (a merge again, or the unsharded run's folder).
	if have, err := os.ReadFile(filepath.Join(out, sweepSpecFile)); err == nil {
		if !bytes.Equal(have, append(append([]byte(nil), specJSON...), '\n')) {
			var old sweepSpec
			desc := "an unreadable spec"
			if json.Unmarshal(have, &old) == nil {
				desc = old.describe()
				if f, a, b := firstDiff(old, merged); f != "" {
					desc += fmt.Sprintf("; first difference: %s is %s there, %s here", f, a, b)
				}
			}
			return usageErrorf("merge: --out %q holds a different sweep (%s); merge into another folder", out, desc)
		}
	} else if _, err := os.Stat(filepath.Join(out, sweepResultsFile)); err == nil {
		return usageErrorf("merge: --out %q has a %s but no %s: not a locksim sweep folder", out, sweepResultsFile, sweepSpecFile)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return usageErrorf("merge: --out: cannot create %q: %v", out, unwrapPathError(err))
	}
	if err := writeOutput(filepath.Join(out, sweepSpecFile), append(specJSON, '\n')); err != nil {
		return &codeError{code: exitInternal, err: fmt.Errorf("merge: %v", err)}
	}
	data, err := encodeLines(lines)
	if err == nil {
		err = writeOutput(filepath.Join(out, sweepResultsFile), data)
	}
	if err == nil {
		err = finishSweep(out, &merged, lines, stdout, charts)
	}
	if err != nil {
		return &codeError{code: exitInternal, err: fmt.Errorf("merge: %v", err)}
	}
	return nil
}
